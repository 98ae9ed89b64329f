//! Raw locks on the parking lot: the unvalidated base for the wrappers.
//!
//! # Why this module exists
//!
//! The wrappers of this crate feed lockdep, and users adopt them by changing an import. To
//! also validate locks taken *inside their dependencies*, users will patch `parking_lot`
//! itself (`[patch.crates-io] parking_lot = { path = … }`) with a compatibility crate built
//! on these wrappers. That patch would capture any `parking_lot` this crate depends on and
//! make a cycle, so the wrappers need a base that the patch leaves alone: the two crates
//! under parking_lot, [`lock_api`] (the raw-lock traits and the guard types) and
//! [`parking_lot_core`] (the parking lot: a global hash table of wait queues keyed by
//! address). This module is that base: raw locks with parking_lot 0.12's semantics and
//! fast paths, written here on `parking_lot_core`.
//!
//! # The parking lot in three sentences
//!
//! A thread that must wait calls `park(key, validate, …)`: under the lock of the bucket
//! that `key` hashes to, `validate` re-reads the lock's state and the thread is queued only
//! if it still has to wait. A thread that changes the state so that others may proceed calls
//! `unpark_one` / `unpark_filter` / `unpark_requeue` on the same key; their callbacks run
//! under that bucket lock and may update the state and pass an [`UnparkToken`] to each woken
//! thread. Since validation and callbacks are serialised by the bucket lock, a waiter either
//! sees the change (and does not sleep) or is in the queue when the waker looks: no lost
//! wake-ups, with the lock's state kept in the lock itself (one byte or one word).
//!
//! # The locks
//!
//! | type | state | park keys | handoff |
//! | --- | --- | --- | --- |
//! | [`RawMutex`] | 1 byte: `LOCKED`, `PARKED` | its address | fair unlock keeps `LOCKED` for the woken thread |
//! | [`RawFairMutex`] | a `RawMutex` | same | every unlock |
//! | [`RawRwLock`] | 1 word: `PARKED`, `WRITER_PARKED`, `UPGRADABLE`, `WRITER`, reader count | address (queue), address + 1 (writer waiting for readers) | fair unlock adds the woken threads' park tokens to the word |
//! | [`Condvar`] | 1 pointer: no waiters, the waiters' mutex, or "mixed" | its address; requeues onto the mutex's | — |
//! | [`Once`] | 1 byte: `DONE`, `POISONED`, `RUNNING`, `PARKED` | its address | — |
//!
//! Every lock follows the same shape:
//!
//! 1. **Fast path**, inlined: one CAS from the idle state (lock) or back to it (unlock). It
//!    fails as soon as a `PARKED` bit is set, which is what routes the other side to the slow
//!    path.
//! 2. **Spin** with [`SpinWait`] (a few busy rounds, then a few `yield`s) while nobody is
//!    parked: most critical sections are shorter than a sleep.
//! 3. **Park**: set `PARKED`, then `park` with a validation that re-checks "still held and
//!    `PARKED` still set".
//! 4. **Wake**: the unlocker sees `PARKED` in its CAS's failure and wakes in its unpark
//!    callback, under the bucket lock, so that `PARKED` is cleared exactly when the queue
//!    empties (`UnparkResult::have_more_threads`). A waiter that times out as the last one
//!    clears it from its `timed_out` callback.
//!
//! Unlocks are unfair by default (a running thread may overtake parked ones; throughput over
//! FIFO), and fair on request or when parking_lot_core's `be_fair` says so (about every
//! 0.5 ms per queue), which bounds starvation as parking_lot does.
//!
//! # Memory orderings
//!
//! - Taking a lock is an Acquire read-modify-write; releasing is a Release one. Every write
//!   to a state word is a read-modify-write (or, for the mutex byte, a store made while the
//!   bucket lock excludes every other writer), so an Acquire that reads a later value still
//!   synchronises with the Release that freed the lock.
//! - Bits that only route threads to slow paths (`PARKED`, `WRITER_PARKED`) are set and
//!   cleared with Relaxed operations: their meaning is re-checked under the bucket lock, whose
//!   own lock/unlock orders validations against callbacks.
//! - A handoff (`TOKEN_HANDOFF`) does not touch the state on the woken side: parking_lot_core
//!   passes the token through a plain cell read after the woken thread's park returns, so it
//!   guarantees that the waker's actions before the callback happen-before that return.
//!
//! # Using them
//!
//! They are raw locks: pair them with `lock_api`'s data wrappers.
//!
//! ```
//! use instrumented_locks::raw::{Condvar, RawMutex, RawRwLock, RawThreadId};
//!
//! type Mutex<T> = lock_api::Mutex<RawMutex, T>;
//! type RwLock<T> = lock_api::RwLock<RawRwLock, T>;
//! type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;
//!
//! let m = Mutex::new(1);
//! *m.lock() += 1;
//! let rw = RwLock::new(2);
//! assert_eq!(*rw.read() + *rw.read_recursive(), 4);
//! let re = ReentrantMutex::new(3);
//! let (a, b) = (re.lock(), re.lock());
//! assert_eq!(*a + *b, 6);
//!
//! let cv = Condvar::new();
//! let mut g = m.lock();
//! assert!(cv.wait_for(&mut g, std::time::Duration::from_millis(1)).timed_out());
//! assert_eq!(*g, 2);
//! ```
//!
//! They do no validation; the wrappers at the crate root add it. With the crate's feature
//! `deadlock_detection`, every acquisition and release is reported to parking_lot_core's
//! deadlock detector, as parking_lot's raw locks do (see [`crate::deadlock`]); without it the
//! hooks compile to nothing. No hardware lock elision is provided.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod condvar;
mod condvar_mutex;
mod fair_mutex;
mod mutex;
mod once;
mod rwlock;
mod rwlock_slow;
mod rwlock_state;
mod thread_id;

use std::time::{Duration, Instant};

pub use condvar::{Condvar, WaitTimeoutResult};
pub use condvar_mutex::CondvarMutex;
pub use fair_mutex::RawFairMutex;
pub use mutex::RawMutex;
pub use once::{Once, OnceState};
pub use rwlock::RawRwLock;
pub use thread_id::RawThreadId;

#[cfg(doc)]
use parking_lot_core::{SpinWait, UnparkToken};

/// Tells parking_lot_core's deadlock detector (feature `deadlock_detection`) that the calling
/// thread now holds the resource `key` (a lock's park key). Compiles to nothing without the
/// feature.
#[inline(always)]
fn deadlock_acquire(key: usize) {
    // SAFETY: our callers call it right after the calling thread took the lock that `key`
    // names, once per holding, and release it before unlocking.
    unsafe { parking_lot_core::deadlock::acquire_resource(key) }
}

/// Tells the deadlock detector that the calling thread is about to release the resource
/// `key`, which it acquired with [`deadlock_acquire`].
#[inline(always)]
fn deadlock_release(key: usize) {
    // SAFETY: our callers hold the lock `key` names (recorded by `deadlock_acquire`) and call
    // this before releasing it.
    unsafe { parking_lot_core::deadlock::release_resource(key) }
}

/// The deadline `timeout` from now; `None` (wait forever) if it cannot be represented.
#[inline]
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

#[cfg(test)]
mod test_support {
    use parking_lot_core::{FilterOp, DEFAULT_UNPARK_TOKEN};

    /// Yields until `n` threads are parked on `key` (counted without waking anyone).
    pub(super) fn wait_parked(key: usize, n: usize) {
        let start = std::time::Instant::now();
        loop {
            let mut parked = 0;
            // SAFETY: the filter skips every thread: nothing is woken, no state changes.
            unsafe {
                parking_lot_core::unpark_filter(
                    key,
                    |_| {
                        parked += 1;
                        FilterOp::Skip
                    },
                    |_| DEFAULT_UNPARK_TOKEN,
                );
            }
            if parked == n {
                return;
            }
            assert!(
                start.elapsed().as_secs() < 20,
                "hang guard: {n} never parked"
            );
            std::thread::yield_now();
        }
    }
}
