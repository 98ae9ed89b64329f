//! std-flavoured [`Mutex`].

use super::{poisoned_guard, poisoned_lock, Flag, LockResult, Poison, TryLockResult};

/// `std::sync::Mutex`'s API over the validated [`crate::Mutex`]: poisoning, `LockResult`.
pub struct Mutex<T: ?Sized> {
    pub(crate) poison: Flag,
    pub(crate) inner: crate::Mutex<T>,
}

// std quotes a held mutex's placeholder, not a held rwlock's.
poisoned_lock!(Mutex, Mutex, "Mutex", try_lock, "<locked>");

impl<T: ?Sized> Mutex<T> {
    /// Locks (validated before blocking); `Err` if a holder panicked. The guard inside the
    /// error holds the lock and is tracked like any other.
    #[inline]
    #[track_caller]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let panicking = std::thread::panicking();
        let inner = self.inner.lock();
        self.poison.result(MutexGuard {
            poison: self.poison.guard(panicking),
            inner,
        })
    }

    /// Tries to lock without blocking (`WouldBlock`, or `Poisoned` with a guard).
    #[inline]
    #[track_caller]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        let panicking = std::thread::panicking();
        let guard = self.inner.try_lock().map(|inner| MutexGuard {
            poison: self.poison.guard(panicking),
            inner,
        });
        self.poison.try_result(guard)
    }
}

/// Holds a std-flavoured [`Mutex`]; poisons it if dropped during a panic. `!Send`.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    pub(crate) poison: Poison<'a>,
    pub(crate) inner: crate::MutexGuard<'a, T>,
}

poisoned_guard!(MutexGuard, mut);
