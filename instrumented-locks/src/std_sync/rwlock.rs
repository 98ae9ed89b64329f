//! std-flavoured [`RwLock`].

use super::{poisoned_guard, poisoned_lock, Flag, LockResult, Poison, TryLockResult};

/// `std::sync::RwLock`'s API over the validated [`crate::RwLock`]. `read` is lockdep's
/// non-recursive `Read`; a panicking writer poisons the lock, a panicking reader does not.
pub struct RwLock<T: ?Sized> {
    poison: Flag,
    inner: crate::RwLock<T>,
}

poisoned_lock!(RwLock, RwLock, "RwLock", try_read, format_args!("<locked>"));

impl<T: ?Sized> RwLock<T> {
    /// Shared access (validated as `Read` before blocking); `Err` if poisoned.
    #[inline]
    #[track_caller]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        let inner = self.inner.read();
        self.poison.result(RwLockReadGuard { inner })
    }

    /// Exclusive access (validated before blocking); `Err` if poisoned.
    #[inline]
    #[track_caller]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        let panicking = std::thread::panicking();
        let inner = self.inner.write();
        self.poison.result(RwLockWriteGuard {
            _poison: self.poison.guard(panicking),
            inner,
        })
    }

    /// Non-blocking [`read`](Self::read).
    #[inline]
    #[track_caller]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        let guard = self.inner.try_read().map(|inner| RwLockReadGuard { inner });
        self.poison.try_result(guard)
    }

    /// Non-blocking [`write`](Self::write).
    #[inline]
    #[track_caller]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        let panicking = std::thread::panicking();
        let guard = self.inner.try_write().map(|inner| RwLockWriteGuard {
            _poison: self.poison.guard(panicking),
            inner,
        });
        self.poison.try_result(guard)
    }
}

/// Shared access to a std-flavoured [`RwLock`]. `!Send`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    inner: crate::RwLockReadGuard<'a, T>,
}

/// Exclusive access to a std-flavoured [`RwLock`]; poisons it if dropped during a panic.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    _poison: Poison<'a>,
    inner: crate::RwLockWriteGuard<'a, T>,
}

poisoned_guard!(RwLockReadGuard);
poisoned_guard!(RwLockWriteGuard, mut);
