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
//! with `thread_id() -> std::thread::ThreadId` and `backtrace()` (where the thread parked).

#[cfg(feature = "deadlock_detection")]
pub use parking_lot_core::deadlock::check_deadlock;

#[cfg(all(feature = "deadlock_detection", feature = "send_guard"))]
compile_error!("the `send_guard` and `deadlock_detection` features cannot be used together");
