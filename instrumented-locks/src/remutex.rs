//! [`ReentrantMutex`]: `parking_lot::ReentrantMutex` fed to lockdep.
//!
//! Only the *outermost* acquisition by a thread is a lockdep acquisition: re-locking a
//! re-entrant mutex the thread already owns cannot block, so it is neither validated nor
//! pushed on the held stack (the guard of such a nested lock tracks nothing). If the
//! outermost guard is dropped before a nested one, lockdep stops seeing the mutex as held
//! while the nested guard lives: no false report, but dependencies from it are missed.

use std::panic::Location;
use std::time::{Duration, Instant};

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

use crate::dep::{Dep, Track};
use crate::guard_impls::guard_impls;

/// A mutex the owning thread may lock again, with the API of
/// [`parking_lot::ReentrantMutex`]; guards give `&T` only. Class rules as for
/// [`Mutex`](crate::Mutex).
pub struct ReentrantMutex<T: ?Sized> {
    dep: Dep,
    inner: parking_lot::ReentrantMutex<T>,
}

impl<T> ReentrantMutex<T> {
    /// A new unlocked mutex whose class is the caller's location. Not `const` with
    /// `validate` (see [`Mutex::new`](crate::Mutex::new)).
    #[cfg(feature = "validate")]
    #[track_caller]
    pub fn new(val: T) -> ReentrantMutex<T> {
        ReentrantMutex::named(val, std::any::type_name::<T>())
    }

    /// A new unlocked mutex (no validation compiled in: `const`).
    #[cfg(not(feature = "validate"))]
    pub const fn new(val: T) -> ReentrantMutex<T> {
        ReentrantMutex {
            dep: Dep::new(""),
            inner: parking_lot::ReentrantMutex::new(val),
        }
    }

    /// A new mutex of the caller's construction-site class, named `name` in reports.
    #[track_caller]
    pub fn named(val: T, name: &'static str) -> ReentrantMutex<T> {
        ReentrantMutex {
            dep: Dep::new(name),
            inner: parking_lot::ReentrantMutex::new(val),
        }
    }

    /// A new mutex whose class is the static `key`.
    pub fn with_class(val: T, key: &'static LockClassKey, name: &'static str) -> Self {
        ReentrantMutex {
            dep: Dep::with_class(key, name),
            inner: parking_lot::ReentrantMutex::new(val),
        }
    }

    /// A new mutex whose class is the dynamic `key`.
    #[track_caller]
    pub fn with_dynamic_key(val: T, key: &DynamicKey, name: &'static str) -> Self {
        ReentrantMutex {
            dep: Dep::with_dynamic_key(key, name),
            inner: parking_lot::ReentrantMutex::new(val),
        }
    }

    /// Consumes the mutex and returns the data.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> ReentrantMutex<T> {
    #[inline]
    fn track(&self, subclass: u8, site: &'static Location<'static>) -> Track<'_> {
        if self.inner.is_owned_by_current_thread() {
            self.dep.untracked(subclass, Mode::Exclusive, None)
        } else {
            self.dep.lock(subclass, Mode::Exclusive, None, site)
        }
    }

    /// Locks, blocking unless this thread already owns the mutex. The outermost lock is
    /// validated before it can block.
    #[inline]
    #[track_caller]
    pub fn lock(&self) -> ReentrantMutexGuard<'_, T> {
        let track = self.track(0, Location::caller());
        ReentrantMutexGuard {
            track,
            inner: self.inner.lock(),
        }
    }

    /// Locks as subclass `subclass` of the class (for the outermost acquisition).
    #[inline]
    #[track_caller]
    pub fn lock_nested(&self, subclass: u8) -> ReentrantMutexGuard<'_, T> {
        let track = self.track(subclass, Location::caller());
        ReentrantMutexGuard {
            track,
            inner: self.inner.lock(),
        }
    }

    /// Tries to lock without blocking; an outermost success is recorded as a trylock.
    #[track_caller]
    pub fn try_lock(&self) -> Option<ReentrantMutexGuard<'_, T>> {
        let nested = self.inner.is_owned_by_current_thread();
        let inner = self.inner.try_lock()?;
        let track = if nested {
            self.dep.untracked(0, Mode::Exclusive, None)
        } else {
            self.dep
                .locked_try(0, Mode::Exclusive, None, Location::caller())
        };
        Some(ReentrantMutexGuard { track, inner })
    }

    /// Tries to lock for at most `timeout` (validated before waiting).
    #[track_caller]
    pub fn try_lock_for(&self, timeout: Duration) -> Option<ReentrantMutexGuard<'_, T>> {
        let site = Location::caller();
        let mut track = self.track(0, site);
        match self.inner.try_lock_for(timeout) {
            Some(inner) => Some(ReentrantMutexGuard { track, inner }),
            None => {
                track.release(site);
                None
            }
        }
    }

    /// Tries to lock until `deadline` (validated before waiting).
    #[track_caller]
    pub fn try_lock_until(&self, deadline: Instant) -> Option<ReentrantMutexGuard<'_, T>> {
        let site = Location::caller();
        let mut track = self.track(0, site);
        match self.inner.try_lock_until(deadline) {
            Some(inner) => Some(ReentrantMutexGuard { track, inner }),
            None => {
                track.release(site);
                None
            }
        }
    }

    /// A mutable reference to the data (no locking).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Whether any thread holds the mutex (a snapshot).
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// Whether the calling thread holds the mutex (parking_lot's own ownership record).
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.inner.is_owned_by_current_thread()
    }

    /// Reports unless the calling thread holds the mutex (`lockdep_assert_held`).
    #[track_caller]
    pub fn assert_held(&self) {
        self.dep.assert_held();
    }

    /// Reports if the calling thread holds the mutex (`lockdep_assert_not_held`).
    #[track_caller]
    pub fn assert_not_held(&self) {
        self.dep.assert_not_held();
    }

    /// The lockdep map (`None` without the `validate` feature).
    pub fn lock_map(&self) -> Option<&LockMap> {
        self.dep.map()
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for ReentrantMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T: Default> Default for ReentrantMutex<T> {
    #[track_caller]
    fn default() -> Self {
        ReentrantMutex::named(T::default(), std::any::type_name::<T>())
    }
}

/// Holds a [`ReentrantMutex`]; `!Send`. Only the outermost guard of a thread is on lockdep's
/// held stack.
#[must_use = "if unused the ReentrantMutex will immediately unlock"]
pub struct ReentrantMutexGuard<'a, T: ?Sized> {
    track: Track<'a>,
    inner: parking_lot::ReentrantMutexGuard<'a, T>,
}

/// A [`ReentrantMutexGuard`] projected by [`ReentrantMutexGuard::map`].
#[must_use = "if unused the ReentrantMutex will immediately unlock"]
pub struct MappedReentrantMutexGuard<'a, T: ?Sized> {
    track: Track<'a>,
    inner: parking_lot::MappedReentrantMutexGuard<'a, T>,
}

guard_impls!(ReentrantMutexGuard);
guard_impls!(MappedReentrantMutexGuard);

impl<'a, T: ?Sized> ReentrantMutexGuard<'a, T> {
    /// Projects onto part of the data; the lock stays held.
    pub fn map<U: ?Sized, F: FnOnce(&T) -> &U>(s: Self, f: F) -> MappedReentrantMutexGuard<'a, U> {
        let ReentrantMutexGuard { track, inner } = s;
        MappedReentrantMutexGuard {
            track,
            inner: parking_lot::ReentrantMutexGuard::map(inner, f),
        }
    }

    /// Like [`map`](Self::map), but `f` may decline; then the original guard comes back.
    pub fn try_map<U: ?Sized, F: FnOnce(&T) -> Option<&U>>(
        s: Self,
        f: F,
    ) -> Result<MappedReentrantMutexGuard<'a, U>, Self> {
        let ReentrantMutexGuard { track, inner } = s;
        match parking_lot::ReentrantMutexGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedReentrantMutexGuard { track, inner }),
            Err(inner) => Err(ReentrantMutexGuard { track, inner }),
        }
    }

    /// Releases this guard's level of the lock, runs `f`, and locks again (validated before
    /// blocking if this guard was the outermost one).
    #[track_caller]
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        let site = Location::caller();
        let was = s.track.release(site);
        let track = &mut s.track;
        parking_lot::ReentrantMutexGuard::unlocked(&mut s.inner, || {
            let r = f();
            track.restore(was, site);
            r
        })
    }
}

impl<'a, T: ?Sized> MappedReentrantMutexGuard<'a, T> {
    /// Projects further.
    pub fn map<U: ?Sized, F: FnOnce(&T) -> &U>(s: Self, f: F) -> MappedReentrantMutexGuard<'a, U> {
        let MappedReentrantMutexGuard { track, inner } = s;
        MappedReentrantMutexGuard {
            track,
            inner: parking_lot::MappedReentrantMutexGuard::map(inner, f),
        }
    }
}
