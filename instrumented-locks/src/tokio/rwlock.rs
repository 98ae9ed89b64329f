//! A validated `tokio::sync::RwLock`.

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::panic::Location;
use std::sync::Arc;

use lockdep::Mode;
use tokio::sync::TryLockError;

use super::held::Held;
use crate::dep::Dep;

/// `tokio::sync::RwLock<T>`, validated as [`Mutex`](super::Mutex) is. tokio's lock is
/// write-preferring (a reader queues behind a waiting writer), so `read` is lockdep's
/// [`Mode::Read`]: a read under a read of the same lock can deadlock, and is reported. Same
/// API as tokio's (without `with_max_readers`, `try_map` and the owned mapped guards), plus
/// the class constructors.
pub struct RwLock<T: ?Sized> {
    dep: Dep,
    inner: tokio::sync::RwLock<T>,
}

/// Shared access ([`RwLock::read`]).
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    _held: Held<'a>,
    inner: tokio::sync::RwLockReadGuard<'a, T>,
}

/// Exclusive access ([`RwLock::write`]).
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    held: Held<'a>,
    inner: tokio::sync::RwLockWriteGuard<'a, T>,
}

/// A projected [`RwLockWriteGuard`] ([`RwLockWriteGuard::map`]), tokio's
/// `RwLockMappedWriteGuard`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    _held: Held<'a>,
    inner: tokio::sync::RwLockMappedWriteGuard<'a, T>,
}

/// Shared access that owns an `Arc` of the lock ([`RwLock::read_owned`]); `T: 'static`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct OwnedRwLockReadGuard<T: ?Sized + 'static> {
    _held: Held<'static>,
    inner: tokio::sync::RwLockReadGuard<'static, T>,
    _lock: Arc<RwLock<T>>,
}

/// Exclusive access that owns an `Arc` of the lock ([`RwLock::write_owned`]); `T: 'static`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct OwnedRwLockWriteGuard<T: ?Sized + 'static> {
    held: Held<'static>,
    inner: tokio::sync::RwLockWriteGuard<'static, T>,
    lock: Arc<RwLock<T>>,
}

impl<T> RwLock<T> {
    /// A new unlocked lock; its class is the caller's location and `T`. `const`.
    #[track_caller]
    pub const fn new(val: T) -> RwLock<T> {
        RwLock {
            dep: Dep::of_type::<T>("tokio::RwLock"),
            inner: tokio::sync::RwLock::const_new(val),
        }
    }

    /// [`new`](Self::new) (tokio's `const_new`).
    #[track_caller]
    pub const fn const_new(val: T) -> RwLock<T> {
        RwLock::new(val)
    }

    /// A new unlocked lock of the caller's construction-site class, named `name`.
    #[track_caller]
    pub const fn named(val: T, name: &'static str) -> RwLock<T> {
        RwLock {
            dep: Dep::named_of_type::<T>("tokio::RwLock", name),
            inner: tokio::sync::RwLock::const_new(val),
        }
    }

    /// A new unlocked lock whose class is the static `key`, named `name`.
    pub const fn with_class(
        val: T,
        key: &'static lockdep::LockClassKey,
        name: &'static str,
    ) -> RwLock<T> {
        RwLock {
            dep: Dep::with_class(key, name),
            inner: tokio::sync::RwLock::const_new(val),
        }
    }

    /// A new unlocked lock whose class is the dynamic `key`, named `name`.
    #[track_caller]
    pub fn with_dynamic_key(val: T, key: &lockdep::DynamicKey, name: &'static str) -> RwLock<T> {
        RwLock {
            dep: Dep::with_dynamic_key(key, name),
            inner: tokio::sync::RwLock::const_new(val),
        }
    }

    /// The protected value.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access, waiting asynchronously; validated at the first poll. Cancel safe.
    #[track_caller]
    pub fn read(&self) -> impl Future<Output = RwLockReadGuard<'_, T>> {
        let site = Location::caller();
        async move {
            let held = Held::acquire(self.dep.map(), Mode::Read, site);
            let inner = self.inner.read().await;
            RwLockReadGuard { _held: held, inner }
        }
    }

    /// Exclusive access, waiting asynchronously; validated at the first poll. Cancel safe.
    #[track_caller]
    pub fn write(&self) -> impl Future<Output = RwLockWriteGuard<'_, T>> {
        let site = Location::caller();
        async move {
            let held = Held::acquire(self.dep.map(), Mode::Exclusive, site);
            let inner = self.inner.write().await;
            RwLockWriteGuard { held, inner }
        }
    }

    /// Shared access without waiting.
    #[track_caller]
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        let inner = self.inner.try_read()?;
        let held = Held::acquired_try(self.dep.map(), Mode::Read, Location::caller());
        Ok(RwLockReadGuard { _held: held, inner })
    }

    /// Exclusive access without waiting.
    #[track_caller]
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        let inner = self.inner.try_write()?;
        let held = Held::acquired_try(self.dep.map(), Mode::Exclusive, Location::caller());
        Ok(RwLockWriteGuard { held, inner })
    }

    /// Shared access, blocking the thread (not in an async context); held by the OS thread.
    #[track_caller]
    pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
        let held = Held::blocking(self.dep.map(), Mode::Read, Location::caller());
        let inner = self.inner.blocking_read();
        RwLockReadGuard { _held: held, inner }
    }

    /// Exclusive access, blocking the thread (not in an async context); held by the OS
    /// thread.
    #[track_caller]
    pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
        let held = Held::blocking(self.dep.map(), Mode::Exclusive, Location::caller());
        let inner = self.inner.blocking_write();
        RwLockWriteGuard { held, inner }
    }

    /// The protected value, through `&mut`.
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

impl<T: ?Sized + 'static> RwLock<T> {
    /// [`read`](Self::read) with a guard that owns an `Arc` of the lock.
    #[track_caller]
    pub fn read_owned(self: Arc<Self>) -> impl Future<Output = OwnedRwLockReadGuard<T>> {
        let site = Location::caller();
        async move {
            // SAFETY: the `Arc` moves into the guard, which drops the borrows (`held`,
            // `inner`) before it; the lock does not move while an `Arc` of it lives.
            let lock: &'static RwLock<T> = unsafe { &*Arc::as_ptr(&self) };
            let held = Held::acquire(lock.dep.map(), Mode::Read, site);
            let inner = lock.inner.read().await;
            OwnedRwLockReadGuard {
                _held: held,
                inner,
                _lock: self,
            }
        }
    }

    /// [`try_read`](Self::try_read) with a guard that owns an `Arc` of the lock.
    #[track_caller]
    pub fn try_read_owned(self: Arc<Self>) -> Result<OwnedRwLockReadGuard<T>, TryLockError> {
        // SAFETY: as in `read_owned`.
        let lock: &'static RwLock<T> = unsafe { &*Arc::as_ptr(&self) };
        let inner = lock.inner.try_read()?;
        let held = Held::acquired_try(lock.dep.map(), Mode::Read, Location::caller());
        Ok(OwnedRwLockReadGuard {
            _held: held,
            inner,
            _lock: self,
        })
    }

    /// [`try_write`](Self::try_write) with a guard that owns an `Arc` of the lock.
    #[track_caller]
    pub fn try_write_owned(self: Arc<Self>) -> Result<OwnedRwLockWriteGuard<T>, TryLockError> {
        // SAFETY: as in `read_owned`.
        let lock: &'static RwLock<T> = unsafe { &*Arc::as_ptr(&self) };
        let inner = lock.inner.try_write()?;
        let held = Held::acquired_try(lock.dep.map(), Mode::Exclusive, Location::caller());
        Ok(OwnedRwLockWriteGuard {
            held,
            inner,
            lock: self,
        })
    }

    /// [`write`](Self::write) with a guard that owns an `Arc` of the lock.
    #[track_caller]
    pub fn write_owned(self: Arc<Self>) -> impl Future<Output = OwnedRwLockWriteGuard<T>> {
        let site = Location::caller();
        async move {
            // SAFETY: as in `read_owned`.
            let lock: &'static RwLock<T> = unsafe { &*Arc::as_ptr(&self) };
            let held = Held::acquire(lock.dep.map(), Mode::Exclusive, site);
            let inner = lock.inner.write().await;
            OwnedRwLockWriteGuard {
                held,
                inner,
                lock: self,
            }
        }
    }
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// Projects the guard onto a part of the value (tokio's `RwLockReadGuard::map`).
    pub fn map<U: ?Sized, F: FnOnce(&T) -> &U>(this: Self, f: F) -> RwLockReadGuard<'a, U> {
        let RwLockReadGuard { _held: held, inner } = this;
        RwLockReadGuard {
            _held: held,
            inner: tokio::sync::RwLockReadGuard::map(inner, f),
        }
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Projects the guard onto a part of the value (tokio's `RwLockWriteGuard::map`).
    pub fn map<U: ?Sized, F: FnOnce(&mut T) -> &mut U>(
        this: Self,
        f: F,
    ) -> RwLockMappedWriteGuard<'a, U> {
        let RwLockWriteGuard { held, inner } = this;
        RwLockMappedWriteGuard {
            _held: held,
            inner: tokio::sync::RwLockWriteGuard::map(inner, f),
        }
    }

    /// Atomically turns write access into read access (tokio's `downgrade`); the entry's
    /// mode becomes a read, without validation (it cannot wait).
    pub fn downgrade(this: Self) -> RwLockReadGuard<'a, T> {
        let RwLockWriteGuard { mut held, inner } = this;
        held.set_mode(Mode::Read);
        RwLockReadGuard {
            _held: held,
            inner: inner.downgrade(),
        }
    }
}

impl<T: ?Sized + 'static> OwnedRwLockWriteGuard<T> {
    /// Atomically turns write access into read access (tokio's `downgrade`).
    pub fn downgrade(this: Self) -> OwnedRwLockReadGuard<T> {
        let OwnedRwLockWriteGuard {
            mut held,
            inner,
            lock,
        } = this;
        held.set_mode(Mode::Read);
        OwnedRwLockReadGuard {
            _held: held,
            inner: inner.downgrade(),
            _lock: lock,
        }
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + 'static> Deref for OwnedRwLockReadGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

super::mutex::deref! {
    RwLockWriteGuard<'a, T>;
    RwLockMappedWriteGuard<'a, T>;
    OwnedRwLockWriteGuard<T> where 'static;
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug + 'static> fmt::Debug for OwnedRwLockReadGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Default> Default for RwLock<T> {
    #[track_caller]
    fn default() -> RwLock<T> {
        RwLock::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    #[track_caller]
    fn from(val: T) -> RwLock<T> {
        RwLock::new(val)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
