//! [`Mutex<R, T>`] and its guards: `lock_api::Mutex<R, T>` with every operation fed to lockdep.

use std::mem::ManuallyDrop;

use lock_api::{RawMutex, RawMutexFair, RawMutexTimed};
use lockdep::Mode;

use super::{acquisitions, guard_core, lock_surface, mapped_guard, projections};
use crate::dep::{Dep, DepRef, GuardMarker, Held, TrackMut, TrackedRef};
use crate::HeldGuard;

/// A mutual-exclusion lock over the raw mutex `R`, with the API of `lock_api::Mutex<R, T>`,
/// whose acquisitions are checked by lockdep for lock-order cycles, recursive locking and
/// misuse.
///
/// - **Class**: by default every mutex constructed at one source location (the caller of
///   [`new`](Self::new)) for one type `T` is one lock class, like the kernel's per-init-site
///   static key. Use [`with_class`](Self::with_class) or
///   [`with_dynamic_key`](Self::with_dynamic_key) to choose the class, and
///   [`lock_nested`](Self::lock_nested) / [`lock_nest_lock`](Self::lock_nest_lock) to take two
///   mutexes of one class at once where lockdep's nesting rule asks for it.
/// - **Checked before blocking**: [`lock`](Self::lock) asks lockdep first, so re-locking a
///   mutex this thread holds is reported instead of hanging (with lockdep's default policy,
///   the report is printed and the thread then deadlocks, as it would without lockdep).
/// - **try_lock** follows lockdep: only a success is recorded, and nothing depends on it (it
///   cannot wait). Timed locks are blocking acquisitions that may give up.
/// - **Unlocking without a guard** (`force_unlock*` after `mem::forget`) releases the entry
///   the forgotten guard left; `make_guard_unchecked` takes it over.
///
/// Size: `lock_api::Mutex<R, T>` plus a [`LockMap`](lockdep::LockMap) with the `validate` feature, exactly
/// `lock_api::Mutex<R, T>` without it. `Send`/`Sync` like `lock_api::Mutex<R, T>`.
pub struct Mutex<R: RawMutex, T: ?Sized> {
    dep: Dep,
    inner: lock_api::Mutex<R, T>,
}

lock_surface!(Mutex<R: RawMutex>, "Mutex", lock, try_lock);

// `unlocked` and `bump` as every lock has them (a release, a validated re-lock).
impl<R: RawMutex, T: ?Sized> super::Relocks for Mutex<R, T> {
    #[inline(always)]
    fn dep(&self) -> &Dep {
        &self.dep
    }
}

impl<R: RawMutex, T> Mutex<R, T> {
    /// A new unlocked mutex over the raw mutex `raw_mutex` (`lock_api::Mutex::from_raw`);
    /// class as for [`new`](Self::new).
    #[inline]
    #[track_caller]
    pub const fn from_raw(raw_mutex: R, val: T) -> Mutex<R, T> {
        Mutex {
            dep: Dep::of_type::<T>("Mutex"),
            inner: lock_api::Mutex::from_raw(raw_mutex, val),
        }
    }

    super::into_inner_with_raw!(Mutex);

    /// The same as [`from_raw`](Self::from_raw) (lock_api's older name).
    #[inline]
    #[track_caller]
    pub const fn const_new(raw_mutex: R, val: T) -> Mutex<R, T> {
        Mutex {
            dep: Dep::of_type::<T>("Mutex"),
            inner: lock_api::Mutex::from_raw(raw_mutex, val),
        }
    }
}

impl<R: RawMutex, T: ?Sized> Mutex<R, T> {
    /// The raw mutex, for the lock and unlock calls the guards pair up.
    #[inline]
    fn raw_mutex(&self) -> &R {
        // SAFETY: `raw` is unsafe because unlocking through it could break a guard; this
        // crate unlocks only what its own guard (or a `force_unlock` caller) owns.
        unsafe { self.inner.raw() }
    }

    super::raw_helpers!(raw_mutex);

    /// Makes a guard for a mutex the caller holds without one (lock_api's
    /// `make_guard_unchecked`). The guard takes over this thread's held-lock entry of the
    /// mutex if there is one (the entry of a forgotten guard).
    ///
    /// # Safety
    ///
    /// The calling thread must hold the mutex, and no other guard may own that holding
    /// (a forgotten one may).
    #[inline]
    pub unsafe fn make_guard_unchecked(&self) -> MutexGuard<'_, R, T> {
        MutexGuard::new(self, self.dep.adopt(Mode::Exclusive))
    }

    acquisitions! {
        /// Locks the mutex, blocking until it is available. Validated before it can block.
        ///
        /// Panics only if lockdep's policy is `Policy::Panic` and the acquisition is reported
        /// (before anything is locked).
        blocking plain lock() -> MutexGuard<'_, R, T> = Mode::Exclusive, |r| r.lock(), |r| r.try_lock();
        /// Tries to lock without blocking; only a success is recorded (lockdep's trylock
        /// rule: nothing depends on it, since it cannot wait).
        try plain try_lock() -> MutexGuard<'_, R, T> = Mode::Exclusive, |r| r.try_lock();
        /// [`lock`](Self::lock) through an `Arc`: the guard owns a clone of the `Arc`.
        blocking arc lock_arc() -> ArcMutexGuard<R, T> = Mode::Exclusive, |r| r.lock(), |r| r.try_lock();
        /// [`try_lock`](Self::try_lock) through an `Arc`.
        try arc try_lock_arc() -> ArcMutexGuard<R, T> = Mode::Exclusive, |r| r.try_lock();
    }

    /// Locks the mutex as subclass `subclass` (0..8) of its class (the kernel's
    /// `mutex_lock_nested()`): for two mutexes of one class taken in a fixed order, such as
    /// a parent then a child, where lockdep's nesting rule asks for an annotation.
    #[inline]
    #[track_caller]
    pub fn lock_nested(&self, subclass: u8) -> MutexGuard<'_, R, T> {
        MutexGuard::new(
            self,
            self.blocking_track(Mode::Exclusive, subclass, None, R::try_lock, R::lock),
        )
    }

    /// Locks the mutex while `outer` (a held guard) serializes every nesting of this class
    /// (the kernel's `mutex_lock_nest_lock()`): any number of same-class mutexes may be held
    /// under it, in any order. The returned guard borrows `outer`, so the outer lock stays
    /// held.
    #[inline]
    #[track_caller]
    pub fn lock_nest_lock<'a>(&'a self, outer: &'a impl HeldGuard) -> MutexGuard<'a, R, T> {
        let track = self.blocking_track(Mode::Exclusive, 0, outer.lock_map(), R::try_lock, R::lock);
        MutexGuard::new(self, track)
    }

    super::force_unlocks! {
        /// Unlocks the mutex without a guard (after `mem::forget` of one), releasing the entry
        /// the forgotten guard left on this thread's held stack, if any.
        force_unlock;
    }
}

impl<R: RawMutexFair, T: ?Sized> Mutex<R, T> {
    super::force_unlocks! {
        /// [`force_unlock`](Self::force_unlock) with a fair hand-off to a waiting thread.
        force_unlock_fair;
    }
}

impl<R: RawMutexTimed, T: ?Sized> Mutex<R, T> {
    acquisitions! {
        /// Tries to lock for at most `timeout`. Validated as a blocking acquisition before it
        /// waits; a timeout is recorded as a release.
        timed plain try_lock_for(timeout: R::Duration) -> MutexGuard<'_, R, T>
            = Mode::Exclusive, |r| r.try_lock_for(timeout);
        /// Tries to lock until the instant `timeout`; see [`try_lock_for`](Self::try_lock_for).
        timed plain try_lock_until(timeout: R::Instant) -> MutexGuard<'_, R, T>
            = Mode::Exclusive, |r| r.try_lock_until(timeout);
        /// [`try_lock_for`](Self::try_lock_for) through an `Arc`.
        timed arc try_lock_arc_for(timeout: R::Duration) -> ArcMutexGuard<R, T>
            = Mode::Exclusive, |r| r.try_lock_for(timeout);
        /// [`try_lock_until`](Self::try_lock_until) through an `Arc`.
        timed arc try_lock_arc_until(timeout: R::Instant) -> ArcMutexGuard<R, T>
            = Mode::Exclusive, |r| r.try_lock_until(timeout);
    }
}

guard_core! {
    Mutex<R, T>: impl[R: RawMutex, T: ?Sized] fair[R: RawMutexFair, T: ?Sized];
    /// Holds a [`Mutex`] locked; tells lockdep and unlocks on drop.
    ///
    /// `!Send` (whatever `R::GuardMarker` says) unless the crate's `send_guard` feature is
    /// on: a held lock belongs to the thread that took it. One word, as lock_api's: the
    /// mutex's address, with the acquisition's track in its low bits.
    #[must_use = "if unused the Mutex will immediately unlock"]
    plain MutexGuard, mutex, marker (&'a mut T, GuardMarker, R::GuardMarker);
    /// A [`MutexGuard`] through an `Arc` ([`Mutex::lock_arc`]): no lifetime.
    #[must_use = "if unused the Mutex will immediately unlock"]
    arc ArcMutexGuard, marker (*const (), GuardMarker, R::GuardMarker);
    release: |lock, track, site| {
        track.release_exclusive(&lock.dep, site);
        // SAFETY: the guard held the mutex, and is gone.
        unsafe { lock.raw_mutex().unlock() }
    };
    release_fair: |lock, track, site| {
        track.release_exclusive(&lock.dep, site);
        // SAFETY: as for `release`.
        unsafe { lock.raw_mutex().unlock_fair() }
    };
    relock: |lock| lock.raw_mutex().lock();
    // SAFETY: the guard holds the mutex; the raw bump returns with it held again.
    bump: |lock| unsafe { lock.raw_mutex().bump() };
}

// SAFETY: sharing `&MutexGuard` shares only `&T` and `&R` (as lock_api's `MutexGuard`).
unsafe impl<R: RawMutex + Sync, T: ?Sized + Sync> Sync for MutexGuard<'_, R, T> {}
// SAFETY: as for `MutexGuard` (the `Arc` is only read through `&self`).
#[cfg(feature = "arc_lock")]
unsafe impl<R: RawMutex + Sync, T: ?Sized + Sync> Sync for ArcMutexGuard<R, T> {}
// SAFETY: moving the guard moves the right to `&mut T` (so `T: Send`) and an `Arc` of the
// mutex (so `R: Send + Sync`); the raw lock allows unlocking elsewhere (`R::GuardMarker`).
#[cfg(all(feature = "arc_lock", feature = "send_guard"))]
unsafe impl<R: RawMutex + Send + Sync, T: ?Sized + Send> Send for ArcMutexGuard<R, T> where
    R::GuardMarker: Send
{
}

super::guard_mut! {
    impl['a, R: RawMutex, T: ?Sized] MutexGuard<'a, R, T>;
    data: |s| s.lock.data_ptr();
}
#[cfg(feature = "arc_lock")]
super::guard_mut! {
    impl[R: RawMutex, T: ?Sized] ArcMutexGuard<R, T>;
    data: |s| s.lock.data_ptr();
}
super::guard_stable!(impl['a, R: RawMutex, T: ?Sized] MutexGuard<'a, R, T>;);

impl<'a, R: RawMutex, T: ?Sized> MutexGuard<'a, R, T> {
    /// Splits the guard for a projection into the mutex, what owns lockdep's release (a
    /// [`Held`]) and what owns the raw unlock (a lock_api guard).
    #[inline]
    fn split(s: Self) -> (&'a Mutex<R, T>, Held<'a>, lock_api::MutexGuard<'a, R, T>) {
        let (lock, track) = MutexGuard::take(s);
        let held = Held::new(DepRef::from(&lock.dep), track);
        // SAFETY: the guard held the mutex; the lock_api guard owns that holding now.
        (lock, held, unsafe { lock.inner.make_guard_unchecked() })
    }

    /// The inverse of [`split`](Self::split), for a projection that declined.
    #[inline]
    fn join(lock: &'a Mutex<R, T>, held: Held<'a>, raw: lock_api::MutexGuard<'a, R, T>) -> Self {
        std::mem::forget(raw);
        MutexGuard::new(lock, held.into_track())
    }

    projections!(MappedMutexGuard<R>, MutexGuard, [mut], try_map_or_err);

    /// Leaks the guard: the mutex stays locked for good, and this thread's held-lock entry
    /// stays too (as for `mem::forget`), so locking it again here is reported.
    #[inline]
    pub fn leak(s: Self) -> &'a mut T {
        let s = ManuallyDrop::new(s);
        // SAFETY: the mutex stays locked forever, so nobody else reaches the data again.
        unsafe { &mut *s.lock.data_ptr() }
    }
}

mapped_guard! {
    /// A [`MutexGuard`] projected onto part of the data by [`MutexGuard::map`]: lock_api's
    /// mapped guard (the raw mutex and the data pointer) behind the lock map and the track.
    #[must_use = "if unused the Mutex will immediately unlock"]
    MappedMutexGuard<R: RawMutex>, MappedMutexGuard, fair<R: RawMutexFair>, [mut]
}

impl<'a, R: RawMutex, T: ?Sized> MappedMutexGuard<'a, R, T> {
    projections!(MappedMutexGuard<R>, MappedMutexGuard, [mut], try_map_or_err);
}

impl<'a, R: RawMutex, T: ?Sized> MutexGuard<'a, R, T> {
    /// For a condvar wait: the raw mutex, the lock's dep and this guard's track.
    #[inline]
    pub(crate) fn wait_parts(
        s: &mut Self,
    ) -> (&'a R, &'a Dep, TrackMut<'_, TrackedRef<'a, Mutex<R, T>>>) {
        let lock: &'a Mutex<R, T> = s.lock.get();
        (lock.raw_mutex(), &lock.dep, s.lock.track_mut())
    }
}
