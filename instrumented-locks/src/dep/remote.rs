//! `send_guard` with `validate`: releases of guards dropped on another thread than the one
//! that took them.
//!
//! Lockdep's held-lock stacks are per thread and only their own thread touches them, so a
//! guard dropped on thread B cannot take its entry off the stack of thread A, which acquired
//! it. Releasing on B would report a "bad unlock balance" there. Instead B *posts* the release
//! here (the home thread and the lock's map address), and A applies it the next time it
//! acquires that same lock through these wrappers, before validating the acquisition, so the
//! re-lock is not taken for recursive locking. Until then A's stack keeps the entry.
//!
//! What this does not cover (lockdep would need held stacks that other threads can edit, see
//! the crate docs):
//! - locks that A takes after the guard left it and before it touches that lock again get a
//!   dependency from the stale entry;
//! - A re-locking the lock *while* B still holds the guard is reported as recursive locking
//!   (A's stack says A holds it);
//! - A exiting before it touched the lock again is reported as "lock held at thread exit".
//!
//! The list is bounded ([`MAX_POSTED`]); a release posted to a full list is dropped (its stale
//! entry then stays), never a crash. A posted release is applied only if the acquiring thread's
//! stack still holds the lock, so a thread id reused by a later thread gives no false report.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use lock_api::GetThreadId;
use lockdep::LockMap;

/// The most releases waiting to be applied at once.
pub(crate) const MAX_POSTED: usize = 4096;

/// Posted releases: (home thread, map address).
static POSTED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
/// `POSTED.len()`, readable without the lock.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's id (the one `RawThreadId` gives reentrant mutexes).
#[inline]
pub(crate) fn this_thread() -> usize {
    crate::raw::RawThreadId.nonzero_thread_id().get()
}

/// Posts the release of `map`'s entry on thread `home`'s held stack.
#[cold]
pub(crate) fn post(home: usize, map: &LockMap) {
    let mut posted = POSTED.lock().unwrap_or_else(|e| e.into_inner());
    if posted.len() < MAX_POSTED {
        posted.push((home, std::ptr::from_ref(map).addr()));
        // Relaxed: a snapshot of the length for `settle`'s fast path; the list itself is read
        // under the mutex. A thread that must see this post happens-after it (it learned
        // that the guard was dropped), and coherence then gives it the new value.
        PENDING.store(posted.len(), Ordering::Relaxed);
    }
}

/// Applies the releases posted for `map` on this thread's stack (before acquiring `map`).
#[inline]
pub(crate) fn settle(map: &LockMap) {
    // Relaxed: see `post`.
    if PENDING.load(Ordering::Relaxed) != 0 {
        settle_slow(map);
    }
}

#[cold]
fn settle_slow(map: &LockMap) {
    let me = (this_thread(), std::ptr::from_ref(map).addr());
    let found = {
        let mut posted = POSTED.lock().unwrap_or_else(|e| e.into_inner());
        let before = posted.len();
        posted.retain(|p| *p != me);
        // Relaxed: see `post`.
        PENDING.store(posted.len(), Ordering::Relaxed);
        before - posted.len()
    };
    for _ in 0..found {
        if lockdep::is_held(map) {
            lockdep::release(map, std::panic::Location::caller());
        }
    }
}
