//! std-flavoured [`RwLock`].

use std::fmt;
use std::ops::{Deref, DerefMut};

use lockdep::{LockClassKey, LockMap};

use super::{Flag, LockResult, Poison, PoisonError, TryLockError, TryLockResult};

/// `std::sync::RwLock`'s API over the validated [`crate::RwLock`]. `read` is lockdep's
/// non-recursive `Read`; a panicking writer poisons the lock, a panicking reader does not.
pub struct RwLock<T: ?Sized> {
    poison: Flag,
    inner: crate::RwLock<T>,
}

impl<T> RwLock<T> {
    /// A new lock whose class is the caller's location (not `const` with `validate`).
    #[track_caller]
    pub fn new(val: T) -> RwLock<T> {
        RwLock::named(val, std::any::type_name::<T>())
    }

    /// A new lock of the caller's construction-site class, named `name` in reports.
    #[track_caller]
    pub fn named(val: T, name: &'static str) -> RwLock<T> {
        RwLock {
            poison: Flag::new(),
            inner: crate::RwLock::named(val, name),
        }
    }

    /// A new lock whose class is the static `key`.
    pub fn with_class(val: T, key: &'static LockClassKey, name: &'static str) -> RwLock<T> {
        RwLock {
            poison: Flag::new(),
            inner: crate::RwLock::with_class(val, key, name),
        }
    }

    /// Consumes the lock; `Err` (with the data) if poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        let poisoned = self.poison.get();
        let v = self.inner.into_inner();
        if poisoned {
            Err(PoisonError::new(v))
        } else {
            Ok(v)
        }
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access (validated as `Read` before blocking); `Err` if poisoned.
    #[track_caller]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        let inner = self.inner.read();
        self.poison.result(RwLockReadGuard { inner })
    }

    /// Exclusive access (validated before blocking); `Err` if poisoned.
    #[track_caller]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        let inner = self.inner.write();
        self.poison.result(RwLockWriteGuard {
            _poison: self.poison.guard(),
            inner,
        })
    }

    /// Non-blocking [`read`](Self::read).
    #[track_caller]
    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        let inner = self.inner.try_read().ok_or(TryLockError::WouldBlock)?;
        self.poison
            .result(RwLockReadGuard { inner })
            .map_err(TryLockError::Poisoned)
    }

    /// Non-blocking [`write`](Self::write).
    #[track_caller]
    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        let inner = self.inner.try_write().ok_or(TryLockError::WouldBlock)?;
        self.poison
            .result(RwLockWriteGuard {
                _poison: self.poison.guard(),
                inner,
            })
            .map_err(TryLockError::Poisoned)
    }

    /// Whether a writer panicked.
    pub fn is_poisoned(&self) -> bool {
        self.poison.get()
    }

    /// Clears the poison flag.
    pub fn clear_poison(&self) {
        self.poison.clear();
    }

    /// A mutable reference to the data; `Err` if poisoned.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let poisoned = self.poison.get();
        let v = self.inner.get_mut();
        if poisoned {
            Err(PoisonError::new(v))
        } else {
            Ok(v)
        }
    }

    /// Reports unless the calling thread holds the lock (`lockdep_assert_held`).
    #[track_caller]
    pub fn assert_held(&self) {
        self.inner.assert_held();
    }

    /// Reports if the calling thread holds the lock (`lockdep_assert_not_held`).
    #[track_caller]
    pub fn assert_not_held(&self) {
        self.inner.assert_not_held();
    }

    /// The lockdep map (`None` without the `validate` feature).
    pub fn lock_map(&self) -> Option<&LockMap> {
        self.inner.lock_map()
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("lock", &&self.inner)
            .field("poisoned", &self.poison.get())
            .finish()
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

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized> crate::dep::sealed::Sealed for RwLockReadGuard<'_, T> {}
impl<T: ?Sized> crate::HeldGuard for RwLockReadGuard<'_, T> {
    fn lock_map(&self) -> Option<&LockMap> {
        crate::HeldGuard::lock_map(&self.inner)
    }
}

impl<T: ?Sized> crate::dep::sealed::Sealed for RwLockWriteGuard<'_, T> {}
impl<T: ?Sized> crate::HeldGuard for RwLockWriteGuard<'_, T> {
    fn lock_map(&self) -> Option<&LockMap> {
        crate::HeldGuard::lock_map(&self.inner)
    }
}
