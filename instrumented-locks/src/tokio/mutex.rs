//! A validated `tokio::sync::Mutex`.

use std::fmt;
use std::future::Future;

use std::panic::Location;
use std::sync::Arc;

use lockdep::Mode;
use tokio::sync::TryLockError;

use super::held::Held;
use crate::dep::Dep;

/// `tokio::sync::Mutex<T>`, validated: every acquisition is checked by lockdep *before* its
/// future first waits, the lock is held by the acquiring task (see [`crate::task`]), and its
/// class is chosen as for this crate's other locks. Same API as tokio's, plus the class
/// constructors ([`named`](Self::named), [`with_class`](Self::with_class)).
pub struct Mutex<T: ?Sized> {
    dep: Dep,
    inner: tokio::sync::Mutex<T>,
}

/// The guard of [`Mutex::lock`] (tokio's `MutexGuard`). `Send` and `Sync` as tokio's.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    held: Held<'a>,
    lock: &'a Mutex<T>,
    inner: tokio::sync::MutexGuard<'a, T>,
}

/// A projected [`MutexGuard`] ([`MutexGuard::map`]).
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    _held: Held<'a>,
    inner: tokio::sync::MappedMutexGuard<'a, T>,
}

/// A projected [`OwnedMutexGuard`] ([`OwnedMutexGuard::map`]), tokio's
/// `OwnedMappedMutexGuard`.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct OwnedMappedMutexGuard<T: ?Sized + 'static, U: ?Sized + 'static> {
    _held: Held<'static>,
    inner: tokio::sync::MappedMutexGuard<'static, U>,
    _lock: Arc<Mutex<T>>,
}

/// The guard of [`Mutex::lock_owned`], which keeps the mutex alive (tokio's
/// `OwnedMutexGuard`). Requires `T: 'static` (tokio's does not).
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct OwnedMutexGuard<T: ?Sized + 'static> {
    // Declared in drop order: lockdep hears of the release, then tokio unlocks, then the
    // `Arc` that both borrow goes.
    _held: Held<'static>,
    inner: tokio::sync::MutexGuard<'static, T>,
    lock: Arc<Mutex<T>>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex. Its lock class is the caller's source location and the type
    /// `T` (reports say `tokio::Mutex<T>@file:line`). `const`, as tokio's `const_new`.
    #[track_caller]
    pub const fn new(val: T) -> Mutex<T> {
        Mutex {
            dep: Dep::of_type::<T>("tokio::Mutex"),
            inner: tokio::sync::Mutex::const_new(val),
        }
    }

    /// [`new`](Self::new) (tokio's `const_new`).
    #[track_caller]
    pub const fn const_new(val: T) -> Mutex<T> {
        Mutex::new(val)
    }

    /// A new unlocked mutex of the caller's construction-site class, named `name` in reports.
    #[track_caller]
    pub const fn named(val: T, name: &'static str) -> Mutex<T> {
        Mutex {
            dep: Dep::named_of_type::<T>("tokio::Mutex", name),
            inner: tokio::sync::Mutex::const_new(val),
        }
    }

    /// A new unlocked mutex whose class is the static `key`, named `name`.
    pub const fn with_class(
        val: T,
        key: &'static lockdep::LockClassKey,
        name: &'static str,
    ) -> Mutex<T> {
        Mutex {
            dep: Dep::with_class(key, name),
            inner: tokio::sync::Mutex::const_new(val),
        }
    }

    /// A new unlocked mutex whose class is the dynamic `key`, named `name`. A key that is
    /// not registered (or is dropped while the lock is used) is reported, never a crash.
    #[track_caller]
    pub fn with_dynamic_key(val: T, key: &lockdep::DynamicKey, name: &'static str) -> Mutex<T> {
        Mutex {
            dep: Dep::with_dynamic_key(key, name),
            inner: tokio::sync::Mutex::const_new(val),
        }
    }

    /// The protected value.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, waiting asynchronously (tokio's `lock`; fair, FIFO). Validated at the first
    /// poll, before it can wait: a lock-order problem is reported even if the lock is free.
    /// Cancel safe: a future dropped while waiting releases its entry.
    #[track_caller]
    pub fn lock(&self) -> impl Future<Output = MutexGuard<'_, T>> {
        let site = Location::caller();
        async move {
            let held = Held::acquire(self.dep.map(), Mode::Exclusive, site);
            let inner = held
                .get(self.inner.try_lock().ok(), || self.inner.lock())
                .await;
            MutexGuard {
                held,
                lock: self,
                inner,
            }
        }
    }

    /// Locks without waiting (tokio's `try_lock`); held, with no dependency into it, on
    /// success.
    #[track_caller]
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        let inner = self.inner.try_lock()?;
        let held = Held::acquired_try(self.dep.map(), Mode::Exclusive, Location::caller());
        Ok(MutexGuard {
            held,
            lock: self,
            inner,
        })
    }

    /// Locks, blocking the thread (tokio's `blocking_lock`: not in an async context). The
    /// lock is then held by the OS thread, as a blocking lock is; validated before it blocks.
    /// The guard is `Send`, but its release is recorded on the thread that drops it: dropped
    /// on another thread, it is reported as a bad unlock there (and stays held here).
    #[track_caller]
    pub fn blocking_lock(&self) -> MutexGuard<'_, T> {
        let held = Held::blocking(self.dep.map(), Mode::Exclusive, Location::caller());
        let inner = self.inner.blocking_lock();
        MutexGuard {
            held,
            lock: self,
            inner,
        }
    }

    /// The protected value, through `&mut` (no locking).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// The lockdep map of this lock (`None` without the `validate` feature), e.g. for
    /// `lockdep::held_locks` queries.
    pub fn lock_map(&self) -> Option<&lockdep::LockMap> {
        self.dep.map()
    }
}

impl<T: ?Sized + 'static> Mutex<T> {
    /// [`lock`](Self::lock) with a guard that owns an `Arc` of the mutex (tokio's
    /// `lock_owned`).
    #[track_caller]
    pub fn lock_owned(self: Arc<Self>) -> impl Future<Output = OwnedMutexGuard<T>> {
        let site = Location::caller();
        async move {
            // SAFETY: the `Arc` moves into the guard, which drops `held` and `inner` (the
            // borrows) before it; the mutex does not move while an `Arc` of it lives.
            let lock: &'static Mutex<T> = unsafe { &*Arc::as_ptr(&self) };
            let held = Held::acquire(lock.dep.map(), Mode::Exclusive, site);
            let inner = held
                .get(lock.inner.try_lock().ok(), || lock.inner.lock())
                .await;
            OwnedMutexGuard {
                _held: held,
                inner,
                lock: self,
            }
        }
    }

    /// [`try_lock`](Self::try_lock) with an owned guard (tokio's `try_lock_owned`).
    #[track_caller]
    pub fn try_lock_owned(self: Arc<Self>) -> Result<OwnedMutexGuard<T>, TryLockError> {
        // SAFETY: as in `lock_owned`.
        let lock: &'static Mutex<T> = unsafe { &*Arc::as_ptr(&self) };
        let inner = lock.inner.try_lock()?;
        let held = Held::acquired_try(lock.dep.map(), Mode::Exclusive, Location::caller());
        Ok(OwnedMutexGuard {
            _held: held,
            inner,
            lock: self,
        })
    }

    /// [`blocking_lock`](Self::blocking_lock) with an owned guard (tokio's
    /// `blocking_lock_owned`).
    #[track_caller]
    pub fn blocking_lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        // SAFETY: as in `lock_owned`.
        let lock: &'static Mutex<T> = unsafe { &*Arc::as_ptr(&self) };
        let held = Held::blocking(lock.dep.map(), Mode::Exclusive, Location::caller());
        let inner = lock.inner.blocking_lock();
        OwnedMutexGuard {
            _held: held,
            inner,
            lock: self,
        }
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Projects the guard onto a part of the value (tokio's `MutexGuard::map`); the lock
    /// stays held, by the same entry.
    pub fn map<U: ?Sized, F: FnOnce(&mut T) -> &mut U>(
        this: Self,
        f: F,
    ) -> MappedMutexGuard<'a, U> {
        let MutexGuard { held, inner, .. } = this;
        MappedMutexGuard {
            _held: held,
            inner: tokio::sync::MutexGuard::map(inner, f),
        }
    }

    /// [`map`](Self::map) that may fail, returning the guard (tokio's `try_map`).
    pub fn try_map<U: ?Sized, F: FnOnce(&mut T) -> Option<&mut U>>(
        this: Self,
        f: F,
    ) -> Result<MappedMutexGuard<'a, U>, Self> {
        let MutexGuard { held, lock, inner } = this;
        match tokio::sync::MutexGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedMutexGuard { _held: held, inner }),
            Err(inner) => Err(MutexGuard { held, lock, inner }),
        }
    }

    /// The mutex this guard locks (tokio's `MutexGuard::mutex`).
    pub fn mutex(this: &Self) -> &'a Mutex<T> {
        this.lock
    }
}

impl<T: ?Sized + 'static> OwnedMutexGuard<T> {
    /// The mutex this guard locks (tokio's `OwnedMutexGuard::mutex`).
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        &this.lock
    }

    /// Projects the guard onto a part of the value (tokio's `OwnedMutexGuard::map`); the
    /// lock stays held, by the same entry.
    pub fn map<U: ?Sized + 'static, F: FnOnce(&mut T) -> &mut U>(
        this: Self,
        f: F,
    ) -> OwnedMappedMutexGuard<T, U> {
        let OwnedMutexGuard {
            _held: held,
            inner,
            lock,
        } = this;
        OwnedMappedMutexGuard {
            _held: held,
            inner: tokio::sync::MutexGuard::map(inner, f),
            _lock: lock,
        }
    }
}

macro_rules! deref {
    ($($G:ident<$($l:lifetime,)? $T:ident> $(where $b:lifetime)?;)*) => {$(
        impl<$($l,)? $T: ?Sized $(+ $b)?> ::std::ops::Deref for $G<$($l,)? $T> {
            type Target = $T;
            fn deref(&self) -> &$T {
                &self.inner
            }
        }
        impl<$($l,)? $T: ?Sized $(+ $b)?> ::std::ops::DerefMut for $G<$($l,)? $T> {
            fn deref_mut(&mut self) -> &mut $T {
                &mut self.inner
            }
        }
        impl<$($l,)? $T: ?Sized + fmt::Debug $(+ $b)?> fmt::Debug for $G<$($l,)? $T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }
        impl<$($l,)? $T: ?Sized + fmt::Display $(+ $b)?> fmt::Display for $G<$($l,)? $T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&**self, f)
            }
        }
    )*};
}
pub(crate) use deref;

deref! {
    MutexGuard<'a, T>;
    MappedMutexGuard<'a, T>;
    OwnedMutexGuard<T> where 'static;
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> std::ops::Deref for OwnedMappedMutexGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        &self.inner
    }
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> std::ops::DerefMut for OwnedMappedMutexGuard<T, U> {
    fn deref_mut(&mut self) -> &mut U {
        &mut self.inner
    }
}

impl<T: ?Sized + 'static, U: ?Sized + fmt::Debug + 'static> fmt::Debug
    for OwnedMappedMutexGuard<T, U>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    #[track_caller]
    fn from(val: T) -> Mutex<T> {
        Mutex::new(val)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    /// tokio's format (the data if a try-lock succeeds, `<locked>` otherwise), under this
    /// lock's own validated [`try_lock`](Self::try_lock): a lock that the data's `Debug`
    /// takes depends on this one, as under any guard.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Ok(guard) => d.field("data", &&*guard),
            Err(_) => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}
