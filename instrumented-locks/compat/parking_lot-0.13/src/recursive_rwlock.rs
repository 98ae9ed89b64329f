//! [`RecursiveRwLock`]: parking_lot 0.13's reader-biased rwlock, on which a thread may take
//! read locks it already holds.

use core::fmt;
use core::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use instrumented_locks::generic;

use crate::RawRwLockRecursive;

/// The validated rwlock inside a [`RecursiveRwLock`].
type RwLock<T> = generic::RwLock<RawRwLockRecursive, T>;

/// A reader-writer lock whose reads are recursive (parking_lot 0.13's `RecursiveRwLock`):
/// a read succeeds while any thread reads, even if a writer waits, so a thread may hold
/// several read locks of it at once; writers may starve.
///
/// It is instrumented-locks' validated `generic::RwLock<RawRwLockRecursive, T>` whose `read*`
/// methods are its `read_recursive*` ones: lockdep sees each read as a *recursive read* (which
/// depends on writers but not on other readers, and may be taken again by its own holder), and
/// every other method (`write*`, `upgradable_read*`, `is_locked`, `data_ptr`, `get_mut`, the
/// validator's queries...) is that `RwLock`'s, reached through `Deref`, except the `*_arc`
/// ones, written here. The class, as for every lock here, is the construction site and the
/// type `T`; reports call it `RwLock<T>@site`.
///
/// The one difference from parking_lot 0.13 to be seen: a guard's `rwlock()` returns the inner
/// `RwLock` (the guards are `generic::RwLock*Guard<'a, RawRwLockRecursive, T>`, as 0.13's are
/// lock_api's over `RawRwLockRecursive`). `Send`/`Sync` as the `RwLock`'s.
#[repr(transparent)]
pub struct RecursiveRwLock<T: ?Sized>(RwLock<T>);

/// A recursive read of a [`RecursiveRwLock`].
pub type RecursiveRwLockReadGuard<'a, T> = generic::RwLockReadGuard<'a, RawRwLockRecursive, T>;
/// A write lock of a [`RecursiveRwLock`].
pub type RecursiveRwLockWriteGuard<'a, T> = generic::RwLockWriteGuard<'a, RawRwLockRecursive, T>;
/// An upgradable read of a [`RecursiveRwLock`].
pub type RecursiveRwLockUpgradableReadGuard<'a, T> =
    generic::RwLockUpgradableReadGuard<'a, RawRwLockRecursive, T>;
/// A projected recursive read guard.
pub type MappedRecursiveRwLockReadGuard<'a, T> =
    generic::MappedRwLockReadGuard<'a, RawRwLockRecursive, T>;
/// A projected write guard of a [`RecursiveRwLock`].
pub type MappedRecursiveRwLockWriteGuard<'a, T> =
    generic::MappedRwLockWriteGuard<'a, RawRwLockRecursive, T>;

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
    /// `into_inner_with_raw`).
    #[inline]
    pub fn into_inner_with_raw(self) -> (RawRwLockRecursive, T) {
        self.0.into_inner_with_raw()
    }
}

/// The `*_arc` methods: the inner `RwLock`'s, on an `Arc` of it made from `self`.
#[cfg(feature = "arc_lock")]
macro_rules! arc_methods {
    ($($(#[$m:meta])* $name:ident => $inner:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        $(#[$m])*
        #[inline]
        #[track_caller]
        pub fn $name(self: &std::sync::Arc<Self>, $($arg: $ty),*) -> $ret {
            Self::inner_arc(self).$inner($($arg),*)
        }
    )*};
}

#[cfg(feature = "arc_lock")]
impl<T: ?Sized> RecursiveRwLock<T> {
    /// The `Arc` of the inner `RwLock` that shares `this`'s allocation (one more strong
    /// count, released when the `Arc` guard that owns it drops).
    #[inline]
    fn inner_arc(this: &std::sync::Arc<Self>) -> std::sync::Arc<RwLock<T>> {
        let raw = std::sync::Arc::into_raw(std::sync::Arc::clone(this)) as *const RwLock<T>;
        // SAFETY: `RecursiveRwLock<T>` is `repr(transparent)` over `RwLock<T>`: the same size,
        // alignment and pointer metadata, which is what `Arc::from_raw` asks of a pointer that
        // `Arc::<RecursiveRwLock<T>>::into_raw` returned; the clone's strong count moves to
        // the new `Arc`.
        unsafe { std::sync::Arc::from_raw(raw) }
    }

    arc_methods! {
        /// [`read`](Self::read) through an `Arc`: the guard owns a clone of it.
        read_arc => read_arc_recursive() -> generic::ArcRwLockReadGuard<RawRwLockRecursive, T>;
        /// [`try_read`](Self::try_read) through an `Arc`.
        try_read_arc => try_read_recursive_arc()
            -> Option<generic::ArcRwLockReadGuard<RawRwLockRecursive, T>>;
        /// [`try_read_for`](Self::try_read_for) through an `Arc`.
        try_read_arc_for => try_read_arc_recursive_for(timeout: Duration)
            -> Option<generic::ArcRwLockReadGuard<RawRwLockRecursive, T>>;
        /// [`try_read_until`](Self::try_read_until) through an `Arc`.
        try_read_arc_until => try_read_arc_recursive_until(timeout: Instant)
            -> Option<generic::ArcRwLockReadGuard<RawRwLockRecursive, T>>;
        /// A write lock through an `Arc`.
        write_arc => write_arc() -> generic::ArcRwLockWriteGuard<RawRwLockRecursive, T>;
        /// A non-blocking write lock through an `Arc`.
        try_write_arc => try_write_arc()
            -> Option<generic::ArcRwLockWriteGuard<RawRwLockRecursive, T>>;
        /// A write lock through an `Arc` that gives up after `timeout`.
        try_write_arc_for => try_write_arc_for(timeout: Duration)
            -> Option<generic::ArcRwLockWriteGuard<RawRwLockRecursive, T>>;
        /// A write lock through an `Arc` that gives up at the instant `timeout`.
        try_write_arc_until => try_write_arc_until(timeout: Instant)
            -> Option<generic::ArcRwLockWriteGuard<RawRwLockRecursive, T>>;
        /// An upgradable read through an `Arc`.
        upgradable_read_arc => upgradable_read_arc()
            -> generic::ArcRwLockUpgradableReadGuard<RawRwLockRecursive, T>;
        /// A non-blocking upgradable read through an `Arc`.
        try_upgradable_read_arc => try_upgradable_read_arc()
            -> Option<generic::ArcRwLockUpgradableReadGuard<RawRwLockRecursive, T>>;
        /// An upgradable read through an `Arc` that gives up after `timeout`.
        try_upgradable_read_arc_for => try_upgradable_read_arc_for(timeout: Duration)
            -> Option<generic::ArcRwLockUpgradableReadGuard<RawRwLockRecursive, T>>;
        /// An upgradable read through an `Arc` that gives up at the instant `timeout`.
        try_upgradable_read_arc_until => try_upgradable_read_arc_until(timeout: Instant)
            -> Option<generic::ArcRwLockUpgradableReadGuard<RawRwLockRecursive, T>>;
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
