//! [`Mutex`]: `parking_lot::Mutex` with every operation fed to lockdep.

use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

use crate::dep::{Dep, HeldGuard, Track};
use crate::guard_impls::guard_impls;

/// A mutual-exclusion lock with the API of [`parking_lot::Mutex`], whose acquisitions are
/// checked by lockdep for lock-order cycles, recursive locking and misuse.
///
/// - **Class**: by default every mutex constructed at one source location (the caller of
///   [`new`](Self::new)) is one lock class, like the kernel's per-init-site static key. Use
///   [`with_class`](Self::with_class) or [`with_dynamic_key`](Self::with_dynamic_key) to
///   choose the class, and [`lock_nested`](Self::lock_nested) /
///   [`lock_nest_lock`](Self::lock_nest_lock) to take two mutexes of one class at once.
/// - **Checked before blocking**: [`lock`](Self::lock) asks lockdep first, so re-locking a
///   mutex this thread holds is reported instead of hanging (with lockdep's default policy,
///   the report is printed and the thread then deadlocks as parking_lot would).
/// - **try_lock** follows lockdep: only a successful try-lock is recorded, and nothing
///   depends on it (it cannot wait). Timed locks are blocking acquisitions that may give up.
/// - **Dropping a held mutex** (possible only after `mem::forget` of its guard) is reported
///   by lockdep as "held lock freed".
///
/// Size: `parking_lot::Mutex<T>` plus a [`LockMap`] (64 bytes) with the `validate` feature;
/// exactly `parking_lot::Mutex<T>` without it. `Send`/`Sync` like `parking_lot::Mutex`.
pub struct Mutex<T: ?Sized> {
    pub(crate) dep: Dep,
    pub(crate) inner: parking_lot::Mutex<T>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex whose lock class is the caller's source location; the class name
    /// in reports is the type name of `T` (use [`named`](Self::named) for a better one).
    ///
    /// Not `const` with the `validate` feature, because lockdep's `LockMap` constructors are
    /// not `const`: put a validated mutex in a `static` through `std::sync::LazyLock`. Without
    /// the feature it is `const`, like parking_lot's.
    #[cfg(feature = "validate")]
    #[track_caller]
    pub fn new(val: T) -> Mutex<T> {
        Mutex::named(val, std::any::type_name::<T>())
    }

    /// A new unlocked mutex (no validation compiled in: `const`, like parking_lot's).
    #[cfg(not(feature = "validate"))]
    pub const fn new(val: T) -> Mutex<T> {
        Mutex {
            dep: Dep::new(""),
            inner: parking_lot::Mutex::new(val),
        }
    }

    /// A new unlocked mutex of the caller's construction-site class, named `name` in reports.
    #[track_caller]
    pub fn named(val: T, name: &'static str) -> Mutex<T> {
        Mutex {
            dep: Dep::new(name),
            inner: parking_lot::Mutex::new(val),
        }
    }

    /// A new unlocked mutex whose class is the static `key` (the kernel's
    /// `lockdep_set_class()`): all mutexes made with one key are one class wherever they are
    /// constructed.
    pub fn with_class(val: T, key: &'static LockClassKey, name: &'static str) -> Mutex<T> {
        Mutex {
            dep: Dep::with_class(key, name),
            inner: parking_lot::Mutex::new(val),
        }
    }

    /// A new unlocked mutex whose class is the dynamic `key`. A key that is not registered
    /// (or is dropped while the mutex is still used) is reported by lockdep, never a crash.
    #[track_caller]
    pub fn with_dynamic_key(val: T, key: &DynamicKey, name: &'static str) -> Mutex<T> {
        Mutex {
            dep: Dep::with_dynamic_key(key, name),
            inner: parking_lot::Mutex::new(val),
        }
    }

    /// Consumes the mutex and returns the data.
    #[inline]
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks the mutex, blocking until it is available. Validated before it can block.
    ///
    /// Panics only if lockdep's policy is `Policy::Panic` and the acquisition is reported
    /// (before anything is locked).
    #[inline]
    #[track_caller]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let track = self.dep.lock(0, Mode::Exclusive, None, Location::caller());
        MutexGuard {
            track,
            inner: self.inner.lock(),
        }
    }

    /// Locks the mutex as subclass `subclass` (0..8) of its class (the kernel's
    /// `mutex_lock_nested()`): for two mutexes of one class taken in a fixed order, e.g. a
    /// parent then a child.
    #[inline]
    #[track_caller]
    pub fn lock_nested(&self, subclass: u8) -> MutexGuard<'_, T> {
        let track = self
            .dep
            .lock(subclass, Mode::Exclusive, None, Location::caller());
        MutexGuard {
            track,
            inner: self.inner.lock(),
        }
    }

    /// Locks the mutex while `outer` (a held guard) serializes every nesting of this class
    /// (the kernel's `mutex_lock_nest_lock()`): any number of same-class mutexes may be held
    /// under it, in any order. The returned guard borrows `outer`, so the outer lock stays held.
    #[inline]
    #[track_caller]
    pub fn lock_nest_lock<'a>(&'a self, outer: &'a impl HeldGuard) -> MutexGuard<'a, T> {
        let track = self
            .dep
            .lock(0, Mode::Exclusive, outer.lock_map(), Location::caller());
        MutexGuard {
            track,
            inner: self.inner.lock(),
        }
    }

    /// Tries to lock without blocking; only a success is recorded (lockdep's trylock rule).
    #[inline]
    #[track_caller]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let inner = self.inner.try_lock()?;
        let track = self
            .dep
            .locked_try(0, Mode::Exclusive, None, Location::caller());
        Some(MutexGuard { track, inner })
    }

    /// Tries to lock for at most `timeout`. Validated as a blocking acquire before waiting;
    /// a timeout is recorded as a release.
    #[inline]
    #[track_caller]
    pub fn try_lock_for(&self, timeout: Duration) -> Option<MutexGuard<'_, T>> {
        let mut track = self.dep.lock(0, Mode::Exclusive, None, Location::caller());
        match self.inner.try_lock_for(timeout) {
            Some(inner) => Some(MutexGuard { track, inner }),
            None => {
                track.release(Location::caller());
                None
            }
        }
    }

    /// Tries to lock until `deadline`; see [`try_lock_for`](Self::try_lock_for).
    #[inline]
    #[track_caller]
    pub fn try_lock_until(&self, deadline: Instant) -> Option<MutexGuard<'_, T>> {
        let mut track = self.dep.lock(0, Mode::Exclusive, None, Location::caller());
        match self.inner.try_lock_until(deadline) {
            Some(inner) => Some(MutexGuard { track, inner }),
            None => {
                track.release(Location::caller());
                None
            }
        }
    }

    /// A mutable reference to the data; no locking needed (`&mut self` is exclusive).
    #[inline]
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Whether the mutex is locked by any thread (a snapshot).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// A raw pointer to the data (see `parking_lot::Mutex::data_ptr`).
    #[inline]
    pub fn data_ptr(&self) -> *mut T {
        self.inner.data_ptr()
    }

    /// Reports (through lockdep's policy) unless the calling thread holds this mutex
    /// (the kernel's `lockdep_assert_held()`). No-op without validation.
    #[track_caller]
    pub fn assert_held(&self) {
        self.dep.assert_held();
    }

    /// Reports if the calling thread holds this mutex (`lockdep_assert_not_held()`).
    #[track_caller]
    pub fn assert_not_held(&self) {
        self.dep.assert_not_held();
    }

    /// Whether lockdep has this mutex on the calling thread's held-lock stack (false
    /// without validation).
    pub fn is_held_by_current_thread(&self) -> bool {
        self.dep.is_held()
    }

    /// The lockdep map, for lockdep's own annotations (`lockdep::pin`, `might_lock`, ...).
    /// `None` without the `validate` feature.
    pub fn lock_map(&self) -> Option<&LockMap> {
        self.dep.map()
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Mutex::named(T::default(), std::any::type_name::<T>())
    }
}

impl<T> From<T> for Mutex<T> {
    #[track_caller]
    fn from(val: T) -> Self {
        Mutex::named(val, std::any::type_name::<T>())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // parking_lot's Debug uses an untracked raw try-lock: nothing to record.
        self.inner.fmt(f)
    }
}

guard_impls!(MutexGuard, mut);
guard_impls!(MappedMutexGuard, mut);

/// Holds a [`Mutex`] locked; unlocks (and tells lockdep) on drop.
///
/// `!Send`: a held lock belongs to the thread that took it, so a guard cannot be moved to and
/// dropped on another thread: the type system rules that out instead of a run-time report.
///
/// ```compile_fail
/// let m = instrumented_locks::Mutex::new(0);
/// let g = m.lock();
/// std::thread::scope(|s| { s.spawn(move || drop(g)); });
/// ```
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    // Declared first: lockdep's release runs before the real unlock.
    pub(crate) track: Track<'a>,
    pub(crate) inner: parking_lot::MutexGuard<'a, T>,
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Projects the guard onto a part of the data (`parking_lot::MutexGuard::map`). The lock
    /// stays held (and tracked) by the mapped guard.
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let MutexGuard { track, inner } = s;
        MappedMutexGuard {
            track,
            inner: parking_lot::MutexGuard::map(inner, f),
        }
    }

    /// Like [`map`](Self::map), but `f` may decline; then the original guard comes back.
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let MutexGuard { track, inner } = s;
        match parking_lot::MutexGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedMutexGuard { track, inner }),
            Err(inner) => Err(MutexGuard { track, inner }),
        }
    }

    /// Unlocks the mutex, runs `f`, and locks it again. The re-lock is validated before it
    /// can block, with the locks held at that point.
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let was = s.track.release(site);
        let track = &mut s.track;
        parking_lot::MutexGuard::unlocked(&mut s.inner, || {
            let r = f();
            track.restore(was, site);
            r
        })
    }

    /// Unlocks with a fair hand-off to a waiting thread (`parking_lot`'s `unlock_fair`).
    #[track_caller]
    pub fn unlock_fair(s: Self) {
        let MutexGuard { mut track, inner } = s;
        track.release(Location::caller());
        parking_lot::MutexGuard::unlock_fair(inner);
    }
}

/// A [`MutexGuard`] projected onto part of the data by [`MutexGuard::map`]. `!Send`.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    track: Track<'a>,
    inner: parking_lot::MappedMutexGuard<'a, T>,
}

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    /// Projects further (`parking_lot::MappedMutexGuard::map`).
    #[inline]
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedMutexGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let MappedMutexGuard { track, inner } = s;
        MappedMutexGuard {
            track,
            inner: parking_lot::MappedMutexGuard::map(inner, f),
        }
    }

    /// Projects further if `f` returns `Some`; otherwise returns the guard.
    #[inline]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MappedMutexGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let MappedMutexGuard { track, inner } = s;
        match parking_lot::MappedMutexGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedMutexGuard { track, inner }),
            Err(inner) => Err(MappedMutexGuard { track, inner }),
        }
    }
}
