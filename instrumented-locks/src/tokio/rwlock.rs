//! A validated `tokio::sync::RwLock`.

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

use lockdep::Mode;
use tokio::sync::TryLockError;

use super::held::Held;
use super::rwlock_guard::{RwLockReadGuard, RwLockWriteGuard};
use super::rwlock_owned::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard};
use crate::dep::Dep;

/// `tokio::sync::RwLock<T>`, validated as [`Mutex`](super::Mutex) is. tokio's lock is
/// write-preferring (a reader queues behind a waiting writer), so `read` is lockdep's
/// [`Mode::Read`]: a read under a read of the same lock can deadlock, and is reported. Same
/// API as tokio's, guards and their projections included (`map`, `try_map`,
/// `downgrade_map`, the owned mapped guards), plus the class constructors; the owned guards
/// need `T: 'static` (see [`OwnedRwLockReadGuard`]).
pub struct RwLock<T: ?Sized> {
    dep: Dep,
    inner: tokio::sync::RwLock<T>,
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

    /// A new unlocked lock that admits at most `max_reads` readers at once (tokio's
    /// `with_max_readers`; tokio's [`new`](Self::new) admits `u32::MAX >> 3`); its class is
    /// the caller's location and `T`. `const`, as tokio's `const_with_max_readers`.
    ///
    /// # Panics
    ///
    /// `max_reads` is 0 or more than `u32::MAX >> 3` (tokio's checks).
    #[track_caller]
    pub const fn with_max_readers(val: T, max_reads: u32) -> RwLock<T> {
        RwLock {
            dep: Dep::of_type::<T>("tokio::RwLock"),
            inner: tokio::sync::RwLock::const_with_max_readers(val, max_reads),
        }
    }

    /// [`with_max_readers`](Self::with_max_readers) (tokio's `const_with_max_readers`).
    ///
    /// # Panics
    ///
    /// As [`with_max_readers`](Self::with_max_readers).
    #[track_caller]
    pub const fn const_with_max_readers(val: T, max_reads: u32) -> RwLock<T> {
        RwLock::with_max_readers(val, max_reads)
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
            let inner = held
                .get(self.inner.try_read().ok(), || self.inner.read())
                .await;
            RwLockReadGuard { held, inner }
        }
    }

    /// Exclusive access, waiting asynchronously; validated at the first poll. Cancel safe.
    #[track_caller]
    pub fn write(&self) -> impl Future<Output = RwLockWriteGuard<'_, T>> {
        let site = Location::caller();
        async move {
            let held = Held::acquire(self.dep.map(), Mode::Exclusive, site);
            let inner = held
                .get(self.inner.try_write().ok(), || self.inner.write())
                .await;
            RwLockWriteGuard { held, inner }
        }
    }

    /// Shared access without waiting.
    #[track_caller]
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        let inner = self.inner.try_read()?;
        let held = Held::acquired_try(self.dep.map(), Mode::Read, Location::caller());
        Ok(RwLockReadGuard { held, inner })
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
        RwLockReadGuard { held, inner }
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
            let inner = held
                .get(lock.inner.try_read().ok(), || lock.inner.read())
                .await;
            OwnedRwLockReadGuard {
                held,
                inner,
                lock: self,
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
            held,
            inner,
            lock: self,
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
            let inner = held
                .get(lock.inner.try_write().ok(), || lock.inner.write())
                .await;
            OwnedRwLockWriteGuard {
                held,
                inner,
                lock: self,
            }
        }
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
    /// tokio's format (the data if a read try-lock succeeds, `<locked>` otherwise), under
    /// this lock's own validated [`try_read`](Self::try_read): a lock that the data's `Debug`
    /// takes depends on this one, as under any guard.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Ok(guard) => d.field("data", &&*guard),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}
