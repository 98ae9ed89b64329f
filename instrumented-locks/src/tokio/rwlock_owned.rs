//! The guards of a validated `tokio::sync::RwLock` that own an `Arc` of it (tokio's
//! `Owned*` guards), and their projections, which keep the `Arc` and the held entry as the
//! borrowed guards do (see `rwlock_guard`).
//!
//! Each is a tokio guard that borrows the lock for `'static`, made sound by the `Arc` it
//! owns: its fields are declared in drop order, so lockdep hears of the release, then
//! tokio's guard unlocks, then the `Arc` goes. That `'static` borrow is why `T: 'static`
//! here (tokio's own owned guards do not need it).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use lockdep::Mode;

use super::held::Held;
use super::rwlock::RwLock;

/// Shared access that owns an `Arc` of the lock ([`RwLock::read_owned`]), tokio's
/// `OwnedRwLockReadGuard<T, U>`: `U` is the part of `T` it gives access to (`T` unless
/// [mapped](Self::map)). Requires `T: 'static` and `U: 'static`, as this crate's other owned
/// tokio guards (tokio's do not): each holds tokio's guard borrowing the lock for `'static`
/// from the `Arc` it owns, and tokio's owned write guard, whose `downgrade` must stay atomic,
/// has no form that hides `T` without an allocation per acquisition.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct OwnedRwLockReadGuard<T: ?Sized + 'static, U: ?Sized + 'static = T> {
    pub(super) held: Held<'static>,
    pub(super) inner: tokio::sync::RwLockReadGuard<'static, U>,
    pub(super) lock: Arc<RwLock<T>>,
}

/// Exclusive access that owns an `Arc` of the lock ([`RwLock::write_owned`]), tokio's
/// `OwnedRwLockWriteGuard`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct OwnedRwLockWriteGuard<T: ?Sized + 'static> {
    pub(super) held: Held<'static>,
    pub(super) inner: tokio::sync::RwLockWriteGuard<'static, T>,
    pub(super) lock: Arc<RwLock<T>>,
}

/// Exclusive access to the part `U` of the value, owning an `Arc` of the lock
/// ([`OwnedRwLockWriteGuard::map`]), tokio's `OwnedRwLockMappedWriteGuard<T, U>`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct OwnedRwLockMappedWriteGuard<T: ?Sized + 'static, U: ?Sized + 'static = T> {
    held: Held<'static>,
    inner: tokio::sync::RwLockMappedWriteGuard<'static, U>,
    lock: Arc<RwLock<T>>,
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> OwnedRwLockReadGuard<T, U> {
    /// Projects the guard onto a part of the value (tokio's `OwnedRwLockReadGuard::map`); the
    /// lock stays held by the same entry.
    pub fn map<F, V: ?Sized + 'static>(this: Self, f: F) -> OwnedRwLockReadGuard<T, V>
    where
        F: FnOnce(&U) -> &V,
    {
        let OwnedRwLockReadGuard { held, inner, lock } = this;
        OwnedRwLockReadGuard {
            held,
            inner: tokio::sync::RwLockReadGuard::map(inner, f),
            lock,
        }
    }

    /// [`map`](Self::map) where `f` may find no part (tokio's
    /// `OwnedRwLockReadGuard::try_map`).
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock.
    pub fn try_map<F, V: ?Sized + 'static>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockReadGuard<T, V>, Self>
    where
        F: FnOnce(&U) -> Option<&V>,
    {
        let OwnedRwLockReadGuard { held, inner, lock } = this;
        match tokio::sync::RwLockReadGuard::try_map(inner, f) {
            Ok(inner) => Ok(OwnedRwLockReadGuard { held, inner, lock }),
            Err(inner) => Err(OwnedRwLockReadGuard { held, inner, lock }),
        }
    }

    /// The lock this guard holds (tokio's `OwnedRwLockReadGuard::rwlock`).
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized + 'static> OwnedRwLockWriteGuard<T> {
    /// Projects the guard onto a part of the value (tokio's `OwnedRwLockWriteGuard::map`);
    /// the lock stays held for writing by the same entry.
    pub fn map<F, U: ?Sized + 'static>(this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let OwnedRwLockWriteGuard { held, inner, lock } = this;
        OwnedRwLockMappedWriteGuard {
            held,
            inner: tokio::sync::RwLockWriteGuard::map(inner, f),
            lock,
        }
    }

    /// [`map`](Self::map) where `f` may find no part (tokio's
    /// `OwnedRwLockWriteGuard::try_map`).
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock for writing.
    pub fn try_map<F, U: ?Sized + 'static>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let OwnedRwLockWriteGuard { held, inner, lock } = this;
        match tokio::sync::RwLockWriteGuard::try_map(inner, f) {
            Ok(inner) => Ok(OwnedRwLockMappedWriteGuard { held, inner, lock }),
            Err(inner) => Err(OwnedRwLockWriteGuard { held, inner, lock }),
        }
    }

    /// Atomically turns write access into read access to a part of the value (tokio's
    /// `OwnedRwLockWriteGuard::downgrade_map`); the entry's mode becomes a read, without
    /// validation (a downgrade cannot wait).
    pub fn downgrade_map<F, U: ?Sized + 'static>(this: Self, f: F) -> OwnedRwLockReadGuard<T, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let OwnedRwLockWriteGuard {
            mut held,
            inner,
            lock,
        } = this;
        held.set_mode(Mode::Read);
        OwnedRwLockReadGuard {
            held,
            inner: tokio::sync::RwLockWriteGuard::downgrade_map(inner, f),
            lock,
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) where `f` may find no part (tokio's
    /// `OwnedRwLockWriteGuard::try_downgrade_map`); only a success downgrades.
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock for writing.
    pub fn try_downgrade_map<F, U: ?Sized + 'static>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockReadGuard<T, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let OwnedRwLockWriteGuard {
            mut held,
            inner,
            lock,
        } = this;
        match tokio::sync::RwLockWriteGuard::try_downgrade_map(inner, f) {
            Ok(inner) => {
                held.set_mode(Mode::Read);
                Ok(OwnedRwLockReadGuard { held, inner, lock })
            }
            Err(inner) => Err(OwnedRwLockWriteGuard { held, inner, lock }),
        }
    }

    /// The guard as a mapped guard of the whole value (tokio's
    /// `OwnedRwLockWriteGuard::into_mapped`).
    pub fn into_mapped(this: Self) -> OwnedRwLockMappedWriteGuard<T> {
        let OwnedRwLockWriteGuard { held, inner, lock } = this;
        OwnedRwLockMappedWriteGuard {
            held,
            inner: tokio::sync::RwLockWriteGuard::into_mapped(inner),
            lock,
        }
    }

    /// Atomically turns write access into read access (tokio's `downgrade`, a method as
    /// there); the entry's mode becomes a read, without validation.
    pub fn downgrade(self) -> OwnedRwLockReadGuard<T> {
        let OwnedRwLockWriteGuard {
            mut held,
            inner,
            lock,
        } = self;
        held.set_mode(Mode::Read);
        OwnedRwLockReadGuard {
            held,
            inner: inner.downgrade(),
            lock,
        }
    }

    /// The lock this guard holds (tokio's `OwnedRwLockWriteGuard::rwlock`).
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> OwnedRwLockMappedWriteGuard<T, U> {
    /// Projects the guard further (tokio's `OwnedRwLockMappedWriteGuard::map`).
    pub fn map<F, V: ?Sized + 'static>(this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, V>
    where
        F: FnOnce(&mut U) -> &mut V,
    {
        let OwnedRwLockMappedWriteGuard { held, inner, lock } = this;
        OwnedRwLockMappedWriteGuard {
            held,
            inner: tokio::sync::RwLockMappedWriteGuard::map(inner, f),
            lock,
        }
    }

    /// [`map`](Self::map) where `f` may find no part (tokio's
    /// `OwnedRwLockMappedWriteGuard::try_map`).
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock for writing.
    pub fn try_map<F, V: ?Sized + 'static>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, V>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut V>,
    {
        let OwnedRwLockMappedWriteGuard { held, inner, lock } = this;
        match tokio::sync::RwLockMappedWriteGuard::try_map(inner, f) {
            Ok(inner) => Ok(OwnedRwLockMappedWriteGuard { held, inner, lock }),
            Err(inner) => Err(OwnedRwLockMappedWriteGuard { held, inner, lock }),
        }
    }

    /// The lock this guard holds (tokio's `OwnedRwLockMappedWriteGuard::rwlock`).
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> Deref for OwnedRwLockReadGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        &self.inner
    }
}

impl<T: ?Sized + 'static> Deref for OwnedRwLockWriteGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + 'static> DerefMut for OwnedRwLockWriteGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> Deref for OwnedRwLockMappedWriteGuard<T, U> {
    type Target = U;
    fn deref(&self) -> &U {
        &self.inner
    }
}

impl<T: ?Sized + 'static, U: ?Sized + 'static> DerefMut for OwnedRwLockMappedWriteGuard<T, U> {
    fn deref_mut(&mut self) -> &mut U {
        &mut self.inner
    }
}

/// `Debug` and `Display` as the guarded value's.
macro_rules! fmt_as_value {
    ($($G:ident<T $(, $U:ident)?> => $V:ident;)*) => {$(
        impl<T: ?Sized + 'static $(, $U: ?Sized + 'static)?> fmt::Debug for $G<T $(, $U)?>
        where
            $V: fmt::Debug,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }
        impl<T: ?Sized + 'static $(, $U: ?Sized + 'static)?> fmt::Display for $G<T $(, $U)?>
        where
            $V: fmt::Display,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&**self, f)
            }
        }
    )*};
}

fmt_as_value! {
    OwnedRwLockReadGuard<T, U> => U;
    OwnedRwLockWriteGuard<T> => T;
    OwnedRwLockMappedWriteGuard<T, U> => U;
}
