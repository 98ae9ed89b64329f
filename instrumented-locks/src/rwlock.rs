//! [`RwLock`]: `parking_lot::RwLock` with every operation fed to lockdep.

use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

use crate::dep::{Dep, HeldGuard};

/// A reader-writer lock with the API of [`parking_lot::RwLock`], validated by lockdep
/// (class rules as for [`Mutex`](crate::Mutex)).
///
/// Mode mapping (lockdep's [`Mode`]):
///
/// | operation | lockdep mode | why |
/// |---|---|---|
/// | `write`, `try_write*` | `Exclusive` | a writer |
/// | `read`, `try_read*` | `Read` | parking_lot readers queue behind a *waiting* writer |
/// | `read_recursive`, `try_read_recursive*` | `RecursiveRead` | blocks only behind a *holding* writer |
/// | `upgradable_read`, `try_upgradable_read` | `Upgradable` | shared with readers, exclusive with writers and upgradable reads |
/// | `upgrade`, `try_upgrade_for/until`, `with_upgraded` | `lockdep::upgrade`: a blocking `Exclusive` acquire under the other held locks | waits for every other reader to leave |
/// | `try_upgrade` (success) | mode changed in place to `Exclusive` | cannot wait |
/// | `downgrade` | mode changed in place to `Read` (the kernel's `lock_downgrade()`) | cannot wait |
/// | `downgrade_to_upgradable`, end of `with_upgraded` | mode changed in place to `Upgradable` | cannot wait |
///
/// A blocking upgrade moves the lock to the top of the held stack (it is re-validated there);
/// a downgrade keeps its place.
///
/// Two `read()`s of one lock in one thread are reported (a writer queued between them
/// deadlocks the thread); `read()` then `read_recursive()` is not.
///
/// Size: `parking_lot::RwLock<T>` plus a 64-byte `LockMap` with `validate`, exactly
/// `parking_lot::RwLock<T>` without it.
pub struct RwLock<T: ?Sized> {
    dep: Dep,
    inner: parking_lot::RwLock<T>,
}

impl<T> RwLock<T> {
    /// A new unlocked lock whose class is the caller's location (named after `T`). Not
    /// `const` with `validate` (see [`Mutex::new`](crate::Mutex::new)).
    #[cfg(feature = "validate")]
    #[track_caller]
    pub fn new(val: T) -> RwLock<T> {
        RwLock::named(val, std::any::type_name::<T>())
    }

    /// A new unlocked lock (no validation compiled in: `const`).
    #[cfg(not(feature = "validate"))]
    pub const fn new(val: T) -> RwLock<T> {
        RwLock {
            dep: Dep::new(""),
            inner: parking_lot::RwLock::new(val),
        }
    }

    /// A new lock of the caller's construction-site class, named `name` in reports.
    #[track_caller]
    pub fn named(val: T, name: &'static str) -> RwLock<T> {
        RwLock {
            dep: Dep::new(name),
            inner: parking_lot::RwLock::new(val),
        }
    }

    /// A new lock whose class is the static `key`.
    pub fn with_class(val: T, key: &'static LockClassKey, name: &'static str) -> RwLock<T> {
        RwLock {
            dep: Dep::with_class(key, name),
            inner: parking_lot::RwLock::new(val),
        }
    }

    /// A new lock whose class is the dynamic `key` (misuse is reported by lockdep).
    #[track_caller]
    pub fn with_dynamic_key(val: T, key: &DynamicKey, name: &'static str) -> RwLock<T> {
        RwLock {
            dep: Dep::with_dynamic_key(key, name),
            inner: parking_lot::RwLock::new(val),
        }
    }

    /// Consumes the lock and returns the data.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

macro_rules! timed {
    ($self:ident, $mode:expr, $call:expr, $guard:ident) => {{
        let site = Location::caller();
        let mut track = $self.dep.lock(0, $mode, None, site);
        match $call {
            Some(inner) => Some($guard { track, inner }),
            None => {
                track.release(site);
                None
            }
        }
    }};
}

macro_rules! tried {
    ($self:ident, $mode:expr, $call:expr, $guard:ident) => {{
        let inner = $call?;
        let track = $self.dep.locked_try(0, $mode, None, Location::caller());
        Some($guard { track, inner })
    }};
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access that may queue behind a waiting writer (lockdep `Read`).
    #[inline]
    #[track_caller]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        let track = self.dep.lock(0, Mode::Read, None, Location::caller());
        RwLockReadGuard {
            track,
            inner: self.inner.read(),
        }
    }

    /// Shared access as subclass `subclass` (the kernel's `down_read_nested()`).
    #[inline]
    #[track_caller]
    pub fn read_nested(&self, subclass: u8) -> RwLockReadGuard<'_, T> {
        let track = self
            .dep
            .lock(subclass, Mode::Read, None, Location::caller());
        RwLockReadGuard {
            track,
            inner: self.inner.read(),
        }
    }

    /// Shared access that blocks only behind a writer holding the lock (lockdep
    /// `RecursiveRead`): may be taken again by a thread that already reads.
    #[inline]
    #[track_caller]
    pub fn read_recursive(&self) -> RwLockReadGuard<'_, T> {
        let track = self
            .dep
            .lock(0, Mode::RecursiveRead, None, Location::caller());
        RwLockReadGuard {
            track,
            inner: self.inner.read_recursive(),
        }
    }

    /// Exclusive access (lockdep `Exclusive`).
    #[inline]
    #[track_caller]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        let track = self.dep.lock(0, Mode::Exclusive, None, Location::caller());
        RwLockWriteGuard {
            track,
            inner: self.inner.write(),
        }
    }

    /// Exclusive access as subclass `subclass` (the kernel's `down_write_nested()`).
    #[inline]
    #[track_caller]
    pub fn write_nested(&self, subclass: u8) -> RwLockWriteGuard<'_, T> {
        let track = self
            .dep
            .lock(subclass, Mode::Exclusive, None, Location::caller());
        RwLockWriteGuard {
            track,
            inner: self.inner.write(),
        }
    }

    /// Exclusive access under the held `outer` lock that serializes this class's nesting
    /// (the kernel's `down_write_nest_lock()`).
    #[inline]
    #[track_caller]
    pub fn write_nest_lock<'a>(&'a self, outer: &'a impl HeldGuard) -> RwLockWriteGuard<'a, T> {
        let track = self
            .dep
            .lock(0, Mode::Exclusive, outer.lock_map(), Location::caller());
        RwLockWriteGuard {
            track,
            inner: self.inner.write(),
        }
    }

    /// Upgradable shared access (lockdep `Upgradable`, see the module docs).
    #[inline]
    #[track_caller]
    pub fn upgradable_read(&self) -> RwLockUpgradableReadGuard<'_, T> {
        let track = self.dep.lock(0, Mode::Upgradable, None, Location::caller());
        RwLockUpgradableReadGuard {
            track,
            inner: self.inner.upgradable_read(),
        }
    }

    /// Non-blocking [`read`](Self::read); only a success is recorded.
    #[track_caller]
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        tried!(self, Mode::Read, self.inner.try_read(), RwLockReadGuard)
    }

    /// [`read`](Self::read) that gives up after `timeout` (validated before waiting).
    #[track_caller]
    pub fn try_read_for(&self, timeout: Duration) -> Option<RwLockReadGuard<'_, T>> {
        timed!(
            self,
            Mode::Read,
            self.inner.try_read_for(timeout),
            RwLockReadGuard
        )
    }

    /// [`read`](Self::read) that gives up at `deadline`.
    #[track_caller]
    pub fn try_read_until(&self, deadline: Instant) -> Option<RwLockReadGuard<'_, T>> {
        timed!(
            self,
            Mode::Read,
            self.inner.try_read_until(deadline),
            RwLockReadGuard
        )
    }

    /// Non-blocking [`read_recursive`](Self::read_recursive).
    #[track_caller]
    pub fn try_read_recursive(&self) -> Option<RwLockReadGuard<'_, T>> {
        tried!(
            self,
            Mode::RecursiveRead,
            self.inner.try_read_recursive(),
            RwLockReadGuard
        )
    }

    /// Non-blocking [`write`](Self::write).
    #[track_caller]
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        tried!(
            self,
            Mode::Exclusive,
            self.inner.try_write(),
            RwLockWriteGuard
        )
    }

    /// [`write`](Self::write) that gives up after `timeout`.
    #[track_caller]
    pub fn try_write_for(&self, timeout: Duration) -> Option<RwLockWriteGuard<'_, T>> {
        timed!(
            self,
            Mode::Exclusive,
            self.inner.try_write_for(timeout),
            RwLockWriteGuard
        )
    }

    /// [`write`](Self::write) that gives up at `deadline`.
    #[track_caller]
    pub fn try_write_until(&self, deadline: Instant) -> Option<RwLockWriteGuard<'_, T>> {
        timed!(
            self,
            Mode::Exclusive,
            self.inner.try_write_until(deadline),
            RwLockWriteGuard
        )
    }

    /// Non-blocking [`upgradable_read`](Self::upgradable_read).
    #[track_caller]
    pub fn try_upgradable_read(&self) -> Option<RwLockUpgradableReadGuard<'_, T>> {
        tried!(
            self,
            Mode::Upgradable,
            self.inner.try_upgradable_read(),
            RwLockUpgradableReadGuard
        )
    }

    /// A mutable reference to the data (no locking).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Whether any thread holds the lock in any mode (a snapshot).
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// Whether a writer holds the lock (a snapshot).
    pub fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }

    /// Reports unless the calling thread holds the lock in any mode (`lockdep_assert_held`).
    #[track_caller]
    pub fn assert_held(&self) {
        self.dep.assert_held();
    }

    /// Reports unless the calling thread holds the lock as a writer
    /// (`lockdep_assert_held_write`).
    #[track_caller]
    pub fn assert_held_write(&self) {
        self.dep.assert_held_mode(Mode::Exclusive);
    }

    /// Reports unless the calling thread holds the lock as a reader
    /// (`lockdep_assert_held_read`).
    #[track_caller]
    pub fn assert_held_read(&self) {
        self.dep.assert_held_mode(Mode::Read);
    }

    /// Reports if the calling thread holds the lock (`lockdep_assert_not_held`).
    #[track_caller]
    pub fn assert_not_held(&self) {
        self.dep.assert_not_held();
    }

    /// Whether lockdep has this lock on the calling thread's held stack.
    pub fn is_held_by_current_thread(&self) -> bool {
        self.dep.is_held()
    }

    /// The lockdep map (`None` without the `validate` feature).
    pub fn lock_map(&self) -> Option<&LockMap> {
        self.dep.map()
    }
}

impl<T: Default> Default for RwLock<T> {
    #[track_caller]
    fn default() -> Self {
        RwLock::named(T::default(), std::any::type_name::<T>())
    }
}

impl<T> From<T> for RwLock<T> {
    #[track_caller]
    fn from(val: T) -> Self {
        RwLock::named(val, std::any::type_name::<T>())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

pub use crate::rwlock_guards::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};
