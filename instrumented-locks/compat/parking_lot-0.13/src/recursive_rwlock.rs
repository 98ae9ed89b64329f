//! [`RecursiveRwLock`]: parking_lot 0.13's reader-biased rwlock, on which a thread may take
//! read locks it already holds.

use core::fmt;
use core::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use instrumented_locks::{RwLock, RwLockReadGuard};

/// A reader-writer lock whose reads are recursive (parking_lot 0.13's `RecursiveRwLock`):
/// a read succeeds while any thread reads, even if a writer waits, so a thread may hold
/// several read locks of it at once; writers may starve.
///
/// It is instrumented-locks' validated [`RwLock`] whose `read*` methods are its
/// `read_recursive*` ones: lockdep sees each read as a *recursive read* (which depends on
/// writers but not on other readers, and may be taken again by its own holder), and every
/// other method (`write*`, `upgradable_read*`, `is_locked`, `data_ptr`, `get_mut`, the
/// validator's queries...) is the `RwLock`'s, reached through `Deref`. The class, as for every
/// lock here, is the construction site and the type `T`; reports call it `RwLock<T>@site`.
///
/// Differences from parking_lot 0.13: the `*_arc` methods are missing (an `Arc` of this type
/// cannot lend an `Arc` of the inner `RwLock` that the `Arc` guards hold), and a guard's
/// `rwlock()` returns the inner [`RwLock`]. `Send`/`Sync` as the `RwLock`'s.
pub struct RecursiveRwLock<T: ?Sized>(RwLock<T>);

/// A recursive read of a [`RecursiveRwLock`] (the inner `RwLock`'s read guard).
pub type RecursiveRwLockReadGuard<'a, T> = RwLockReadGuard<'a, T>;
/// A write lock of a [`RecursiveRwLock`].
pub type RecursiveRwLockWriteGuard<'a, T> = instrumented_locks::RwLockWriteGuard<'a, T>;
/// An upgradable read of a [`RecursiveRwLock`].
pub type RecursiveRwLockUpgradableReadGuard<'a, T> =
    instrumented_locks::RwLockUpgradableReadGuard<'a, T>;
/// A projected recursive read guard.
pub type MappedRecursiveRwLockReadGuard<'a, T> = instrumented_locks::MappedRwLockReadGuard<'a, T>;
/// A projected write guard of a [`RecursiveRwLock`].
pub type MappedRecursiveRwLockWriteGuard<'a, T> = instrumented_locks::MappedRwLockWriteGuard<'a, T>;

impl<T> RecursiveRwLock<T> {
    /// A new unlocked lock; its class is the caller's location and `T`. `const`.
    #[inline]
    #[track_caller]
    pub const fn new(val: T) -> RecursiveRwLock<T> {
        RecursiveRwLock(RwLock::new(val))
    }

    /// A new unlocked lock of the caller's class, named `name` in reports. `const`.
    #[inline]
    #[track_caller]
    pub const fn named(val: T, name: &'static str) -> RecursiveRwLock<T> {
        RecursiveRwLock(RwLock::named(val, name))
    }

    /// Consumes the lock and returns the data (as `RwLock::into_inner`).
    #[inline]
    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }

    /// Consumes the lock and returns the raw lock and the data (lock_api 0.5's
    /// `into_inner_with_raw`; the raw lock is instrumented-locks' `RawRwLock`).
    #[inline]
    pub fn into_inner_with_raw(self) -> (instrumented_locks::RawRwLock, T) {
        self.0.into_inner_with_raw()
    }
}

impl<T: ?Sized> RecursiveRwLock<T> {
    /// Takes a recursive read lock, blocking while a thread writes (not behind a waiting
    /// writer). Validated before it can block.
    #[inline]
    #[track_caller]
    pub fn read(&self) -> RecursiveRwLockReadGuard<'_, T> {
        self.0.read_recursive()
    }

    /// Takes a recursive read lock if no thread writes; only a success is recorded.
    #[inline]
    #[track_caller]
    pub fn try_read(&self) -> Option<RecursiveRwLockReadGuard<'_, T>> {
        self.0.try_read_recursive()
    }

    /// [`read`](Self::read) that gives up after `timeout`.
    #[inline]
    #[track_caller]
    pub fn try_read_for(&self, timeout: Duration) -> Option<RecursiveRwLockReadGuard<'_, T>> {
        self.0.try_read_recursive_for(timeout)
    }

    /// [`read`](Self::read) that gives up at the instant `timeout`.
    #[inline]
    #[track_caller]
    pub fn try_read_until(&self, timeout: Instant) -> Option<RecursiveRwLockReadGuard<'_, T>> {
        self.0.try_read_recursive_until(timeout)
    }
}

impl<T: ?Sized> Deref for RecursiveRwLock<T> {
    type Target = RwLock<T>;

    /// The validated `RwLock` inside, for every method but the reads.
    #[inline]
    fn deref(&self) -> &RwLock<T> {
        &self.0
    }
}

impl<T: ?Sized> DerefMut for RecursiveRwLock<T> {
    /// The `RwLock` inside (for `get_mut`).
    #[inline]
    fn deref_mut(&mut self) -> &mut RwLock<T> {
        &mut self.0
    }
}

impl<T: Default> Default for RecursiveRwLock<T> {
    /// A new lock of `T::default()`, whose class is the caller's location.
    #[inline]
    #[track_caller]
    fn default() -> RecursiveRwLock<T> {
        RecursiveRwLock::new(T::default())
    }
}

impl<T> From<T> for RecursiveRwLock<T> {
    /// A new lock of `val`, whose class is the caller's location.
    #[inline]
    #[track_caller]
    fn from(val: T) -> RecursiveRwLock<T> {
        RecursiveRwLock::new(val)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RecursiveRwLock<T> {
    /// lock_api's format (the data if a raw try-read succeeds, `<locked>` otherwise), named
    /// `RwLock` as in parking_lot.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(feature = "serde")]
impl<T: ?Sized + serde::Serialize> serde::Serialize for RecursiveRwLock<T> {
    /// Serializes the data under a read lock (a validated acquisition).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[cfg(feature = "serde")]
impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for RecursiveRwLock<T> {
    /// A new lock of the deserialized data; its class is this impl's site and `T`.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RwLock::deserialize(deserializer).map(RecursiveRwLock)
    }
}
