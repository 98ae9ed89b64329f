//! The guards of a validated `tokio::sync::RwLock` that borrow it: tokio's guards, each with
//! the lock's held entry ([`Held`]), and tokio's projections of them.
//!
//! A projection (`map`, `try_map`, `downgrade_map`, `into_mapped`) moves the entry into the
//! new guard unchanged, so the lock stays held by the same acquisition and is released once,
//! when the last guard made from it is dropped. A failed `try_*` hands the original guard
//! back with its entry. A downgrade changes the entry's mode to a read.

use std::fmt;
use std::ops::Deref;

use lockdep::Mode;

use super::held::Held;

/// Shared access ([`RwLock::read`](super::RwLock::read)), tokio's `RwLockReadGuard`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    // Declared in drop order: lockdep hears of the release before tokio unlocks.
    pub(super) held: Held<'a>,
    pub(super) inner: tokio::sync::RwLockReadGuard<'a, T>,
}

/// Exclusive access ([`RwLock::write`](super::RwLock::write)), tokio's `RwLockWriteGuard`.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    pub(super) held: Held<'a>,
    pub(super) inner: tokio::sync::RwLockWriteGuard<'a, T>,
}

/// Exclusive access to a part of the value ([`RwLockWriteGuard::map`]), tokio's
/// `RwLockMappedWriteGuard`. It cannot be downgraded (neither can tokio's).
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    pub(super) held: Held<'a>,
    pub(super) inner: tokio::sync::RwLockMappedWriteGuard<'a, T>,
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// Projects the guard onto a part of the value (tokio's `RwLockReadGuard::map`); the
    /// lock stays held by the same entry. An associated function, so that it does not hide
    /// a method of `T`.
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let RwLockReadGuard { held, inner } = this;
        RwLockReadGuard {
            held,
            inner: tokio::sync::RwLockReadGuard::map(inner, f),
        }
    }

    /// [`map`](Self::map) where `f` may find no part: then the guard comes back unchanged
    /// (tokio's `RwLockReadGuard::try_map`).
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock.
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let RwLockReadGuard { held, inner } = this;
        match tokio::sync::RwLockReadGuard::try_map(inner, f) {
            Ok(inner) => Ok(RwLockReadGuard { held, inner }),
            Err(inner) => Err(RwLockReadGuard { held, inner }),
        }
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Projects the guard onto a part of the value (tokio's `RwLockWriteGuard::map`); the
    /// lock stays held for writing by the same entry.
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let RwLockWriteGuard { held, inner } = this;
        RwLockMappedWriteGuard {
            held,
            inner: tokio::sync::RwLockWriteGuard::map(inner, f),
        }
    }

    /// [`map`](Self::map) where `f` may find no part (tokio's `RwLockWriteGuard::try_map`).
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock for writing.
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let RwLockWriteGuard { held, inner } = this;
        match tokio::sync::RwLockWriteGuard::try_map(inner, f) {
            Ok(inner) => Ok(RwLockMappedWriteGuard { held, inner }),
            Err(inner) => Err(RwLockWriteGuard { held, inner }),
        }
    }

    /// Atomically turns write access into read access to a part of the value (tokio's
    /// `RwLockWriteGuard::downgrade_map`); the entry's mode becomes a read, without
    /// validation (a downgrade cannot wait).
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let RwLockWriteGuard { mut held, inner } = this;
        held.set_mode(Mode::Read);
        RwLockReadGuard {
            held,
            inner: tokio::sync::RwLockWriteGuard::downgrade_map(inner, f),
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) where `f` may find no part (tokio's
    /// `RwLockWriteGuard::try_downgrade_map`); only a success downgrades.
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock for writing.
    pub fn try_downgrade_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let RwLockWriteGuard { mut held, inner } = this;
        match tokio::sync::RwLockWriteGuard::try_downgrade_map(inner, f) {
            Ok(inner) => {
                held.set_mode(Mode::Read);
                Ok(RwLockReadGuard { held, inner })
            }
            Err(inner) => Err(RwLockWriteGuard { held, inner }),
        }
    }

    /// The guard as a mapped guard of the whole value (tokio's
    /// `RwLockWriteGuard::into_mapped`), e.g. to store it where mapped guards go.
    pub fn into_mapped(this: Self) -> RwLockMappedWriteGuard<'a, T> {
        let RwLockWriteGuard { held, inner } = this;
        RwLockMappedWriteGuard {
            held,
            inner: tokio::sync::RwLockWriteGuard::into_mapped(inner),
        }
    }

    /// Atomically turns write access into read access (tokio's `downgrade`, a method as
    /// there); the entry's mode becomes a read, without validation (it cannot wait).
    pub fn downgrade(self) -> RwLockReadGuard<'a, T> {
        let RwLockWriteGuard { mut held, inner } = self;
        held.set_mode(Mode::Read);
        RwLockReadGuard {
            held,
            inner: inner.downgrade(),
        }
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    /// Projects the guard further (tokio's `RwLockMappedWriteGuard::map`).
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let RwLockMappedWriteGuard { held, inner } = this;
        RwLockMappedWriteGuard {
            held,
            inner: tokio::sync::RwLockMappedWriteGuard::map(inner, f),
        }
    }

    /// [`map`](Self::map) where `f` may find no part (tokio's
    /// `RwLockMappedWriteGuard::try_map`).
    ///
    /// # Errors
    ///
    /// `f` returned `None`: the original guard, still holding the lock for writing.
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let RwLockMappedWriteGuard { held, inner } = this;
        match tokio::sync::RwLockMappedWriteGuard::try_map(inner, f) {
            Ok(inner) => Ok(RwLockMappedWriteGuard { held, inner }),
            Err(inner) => Err(RwLockMappedWriteGuard { held, inner }),
        }
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

super::mutex::deref! {
    RwLockWriteGuard<'a, T>;
    RwLockMappedWriteGuard<'a, T>;
}
