//! parking_lot's deadlock detector (feature `deadlock_detection`): which threads are blocked
//! forever on each other's locks, right now.
//!
//! This is the detector of `parking_lot_core` (which the raw locks of this crate park on),
//! with parking_lot's API: every raw lock reports its acquisitions and releases to it, and
//! `check_deadlock` looks for cycles among the *parked* threads and the locks they hold
//! and wait for. Call it from a watchdog thread, every few seconds:
//!
//! ```no_run
//! # #[cfg(feature = "deadlock_detection")] {
//! std::thread::spawn(|| loop {
//!     std::thread::sleep(std::time::Duration::from_secs(10));
//!     for (i, cycle) in instrumented_locks::deadlock::check_deadlock().iter().enumerate() {
//!         eprintln!("deadlock #{i}");
//!         for thread in cycle {
//!             eprintln!("thread {:?}\n{:?}", thread.thread_id(), thread.backtrace());
//!         }
//!     }
//! });
//! # }
//! ```
//!
//! It complements lockdep rather than competing with it: lockdep reports an order that *can*
//! deadlock the first time its pieces are seen, in any run; the detector reports a deadlock
//! that *has* happened, including ones lockdep cannot see (a lock held across a channel
//! receive, say). Without the feature the module is empty and the raw locks' hooks compile to
//! nothing. The feature cannot be combined with `send_guard` (the detector attributes a held
//! lock to the thread that took it), as in parking_lot.
//!
//! `check_deadlock() -> Vec<Vec<_>>`: one inner `Vec` per cycle, one element per thread in it,
//! with `thread_id() -> std::thread::ThreadId` and `backtrace()`: with `validate`, lockdep's
//! view of the thread (its held locks, their classes and sites, and the lock it waits for,
//! from [`lockdep::deadlocks_now`]); without it, parking_lot_core's (the stack where the
//! thread parked). The watchdog ([`lockdep::start_watchdog`]) runs the same check from a
//! thread of its own.

#[cfg(all(feature = "deadlock_detection", not(feature = "validate")))]
pub use parking_lot_core::deadlock::check_deadlock;

/// One thread of a deadlock [`check_deadlock`] found (with `validate`): its `std` id and,
/// in place of parking_lot's backtrace, what lockdep knows of it: every lock it holds with
/// its class and acquisition site, and the lock it waits for.
#[cfg(all(feature = "deadlock_detection", feature = "validate"))]
#[derive(Clone, Debug)]
pub struct DeadlockedThread {
    thread_id: std::thread::ThreadId,
    locks: lockdep::ThreadLocks,
}

#[cfg(all(feature = "deadlock_detection", feature = "validate"))]
impl DeadlockedThread {
    /// The thread's id.
    pub fn thread_id(&self) -> std::thread::ThreadId {
        self.thread_id
    }

    /// The thread's held locks and the lock it waits for (parking_lot returns the stack
    /// trace where the thread parked; `Debug` and `Display` print these instead).
    pub fn backtrace(&self) -> &lockdep::ThreadLocks {
        &self.locks
    }
}

/// The deadlocks happening now: one inner `Vec` per cycle of threads blocked on each other's
/// locks, one element per thread (parking_lot's `deadlock::check_deadlock`). With `validate`
/// this is lockdep's detector ([`lockdep::deadlocks_now`]): the threads' held-lock records,
/// each cycle checked twice so that a cycle seen across two moments is never reported, and
/// each thread with its lock names and sites. Each call reports every deadlock that is
/// happening (parking_lot reports each once). Thread-safe; no polling thread of its own.
#[cfg(all(feature = "deadlock_detection", feature = "validate"))]
pub fn check_deadlock() -> Vec<Vec<DeadlockedThread>> {
    lockdep::deadlocks_now()
        .into_iter()
        .map(|d| {
            d.threads
                .into_iter()
                .filter_map(|t| {
                    Some(DeadlockedThread {
                        thread_id: t.std_id?,
                        locks: t,
                    })
                })
                .collect()
        })
        .collect()
}

#[cfg(all(feature = "deadlock_detection", feature = "send_guard"))]
compile_error!("the `send_guard` and `deadlock_detection` features cannot be used together");
