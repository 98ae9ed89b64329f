//! std-flavoured [`Mutex`].

use std::fmt;
use std::ops::{Deref, DerefMut};

use lockdep::{LockClassKey, LockMap};

use super::{Flag, LockResult, Poison, TryLockError, TryLockResult};

/// `std::sync::Mutex`'s API over the validated [`crate::Mutex`]: poisoning, `LockResult`.
pub struct Mutex<T: ?Sized> {
    pub(crate) poison: Flag,
    pub(crate) inner: crate::Mutex<T>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex whose class is the caller's location (see
    /// [`crate::Mutex::new`]; not `const` with `validate`).
    #[track_caller]
    pub fn new(val: T) -> Mutex<T> {
        Mutex::named(val, std::any::type_name::<T>())
    }

    /// A new mutex of the caller's construction-site class, named `name` in reports.
    #[track_caller]
    pub fn named(val: T, name: &'static str) -> Mutex<T> {
        Mutex {
            poison: Flag::new(),
            inner: crate::Mutex::named(val, name),
        }
    }

    /// A new mutex whose class is the static `key`.
    pub fn with_class(val: T, key: &'static LockClassKey, name: &'static str) -> Mutex<T> {
        Mutex {
            poison: Flag::new(),
            inner: crate::Mutex::with_class(val, key, name),
        }
    }

    /// Consumes the mutex; `Err` (still with the data) if it is poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        let poisoned = self.poison.get();
        let v = self.inner.into_inner();
        if poisoned {
            Err(super::PoisonError::new(v))
        } else {
            Ok(v)
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks (validated before blocking); `Err` if a holder panicked. The guard inside the
    /// error holds the lock and is tracked like any other.
    #[track_caller]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let g = self.inner.lock();
        self.poison.result(MutexGuard {
            poison: self.poison.guard(),
            inner: g,
        })
    }

    /// Tries to lock without blocking (`WouldBlock`, or `Poisoned` with a guard).
    #[track_caller]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        let Some(g) = self.inner.try_lock() else {
            return Err(TryLockError::WouldBlock);
        };
        let g = MutexGuard {
            poison: self.poison.guard(),
            inner: g,
        };
        self.poison.result(g).map_err(TryLockError::Poisoned)
    }

    /// Whether a holder panicked.
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
            Err(super::PoisonError::new(v))
        } else {
            Ok(v)
        }
    }

    /// Reports unless the calling thread holds the mutex (`lockdep_assert_held`).
    #[track_caller]
    pub fn assert_held(&self) {
        self.inner.assert_held();
    }

    /// Reports if the calling thread holds the mutex (`lockdep_assert_not_held`).
    #[track_caller]
    pub fn assert_not_held(&self) {
        self.inner.assert_not_held();
    }

    /// The lockdep map (`None` without the `validate` feature).
    pub fn lock_map(&self) -> Option<&LockMap> {
        self.inner.lock_map()
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Mutex::named(T::default(), std::any::type_name::<T>())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("lock", &&self.inner)
            .field("poisoned", &self.poison.get())
            .finish()
    }
}

/// Holds a std-flavoured [`Mutex`]; poisons it if dropped during a panic. `!Send`.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    pub(crate) poison: Poison<'a>,
    pub(crate) inner: crate::MutexGuard<'a, T>,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized> crate::dep::sealed::Sealed for MutexGuard<'_, T> {}
impl<T: ?Sized> crate::HeldGuard for MutexGuard<'_, T> {
    fn lock_map(&self) -> Option<&LockMap> {
        crate::HeldGuard::lock_map(&self.inner)
    }
}
