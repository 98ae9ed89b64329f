//! `std::sync`-flavoured wrappers: the same validated locks, with poisoning and
//! [`LockResult`], for code written against `std::sync::{Mutex, RwLock, Condvar}`.
//!
//! Adoption is a change of import (`use instrumented_locks::std_sync::{Mutex, Condvar};`).
//! Poisoning follows std: a guard dropped while its thread panics poisons the lock; every
//! later `lock`/`write`/`read` returns `Err(PoisonError)`, whose `into_inner()` gives a guard
//! that is a real, validated lock holding (lockdep tracks it like any other). Read guards do
//! not poison, as in std. `read` is lockdep's non-recursive `Read` (std gives no guarantee
//! against writer preference).
//!
//! Differences from std: `new` is not `const` with the `validate` feature (see
//! [`crate::Mutex::new`]); [`WaitTimeoutResult`] is parking_lot's (same `timed_out()`).

use std::sync::atomic::{AtomicBool, Ordering};

pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

pub use crate::condvar::WaitTimeoutResult;

mod condvar;
mod mutex;
mod rwlock;

pub use condvar::Condvar;
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A lock's poison flag.
#[derive(Debug, Default)]
pub(crate) struct Flag(AtomicBool);

impl Flag {
    pub(crate) const fn new() -> Flag {
        Flag(AtomicBool::new(false))
    }

    pub(crate) fn get(&self) -> bool {
        // Relaxed: the flag is set before the real unlock (Release) and read after the real
        // lock (Acquire), which order it; callers outside a lock only need a snapshot.
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn clear(&self) {
        // Relaxed: see `get`.
        self.0.store(false, Ordering::Relaxed);
    }

    /// A guard that poisons the flag if it drops during a panic that began after it was made.
    pub(crate) fn guard(&self) -> Poison<'_> {
        Poison {
            flag: self,
            panicking: std::thread::panicking(),
        }
    }

    /// `Ok(v)` or `Err(PoisonError(v))`.
    pub(crate) fn result<G>(&self, v: G) -> LockResult<G> {
        if self.get() {
            Err(PoisonError::new(v))
        } else {
            Ok(v)
        }
    }
}

/// Part of a guard: poisons the lock when dropped by a panicking thread. Declared before the
/// lock guard in each guard struct, so the flag is set before the real unlock.
#[derive(Debug)]
pub(crate) struct Poison<'a> {
    flag: &'a Flag,
    panicking: bool,
}

impl<'a> Poison<'a> {
    pub(crate) fn flag(&self) -> &'a Flag {
        self.flag
    }
}

impl Drop for Poison<'_> {
    fn drop(&mut self) {
        if !self.panicking && std::thread::panicking() {
            // Relaxed: see `Flag::get`.
            self.flag.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Maps `Err(PoisonError(a))` to `Err(PoisonError(f(a)))`.
pub(crate) fn map_result<A, B>(r: LockResult<A>, f: impl FnOnce(A) -> B) -> LockResult<B> {
    match r {
        Ok(a) => Ok(f(a)),
        Err(e) => Err(PoisonError::new(f(e.into_inner()))),
    }
}
