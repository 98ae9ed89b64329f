//! [`ReentrantMutex<R, G, T>`]: `lock_api::ReentrantMutex<R, G, T>` fed to lockdep.
//!
//! Only a thread's *outermost* acquisition is a lockdep acquisition: re-locking a re-entrant
//! mutex the thread already owns cannot block, so it is neither validated nor pushed on the
//! held stack (the guard of such a nested lock tracks nothing). The entry lives as long as
//! the thread holds a level: if the outermost guard is dropped before a nested one, the
//! entry stays (at its place on the stack) until the nested guard, the last level, goes.
//! The same rule holds for a guard's `unlocked` and `bump`: only the last level's release and
//! re-lock reach lockdep (see the `Relocks` impl).
//!
//! The raw side is lock_api's: its re-entrant raw mutex (owner and count over `R`) has no
//! public constructor from parts, so the lock wraps the whole `lock_api::ReentrantMutex` and
//! takes and releases levels through its methods (`lock` then `mem::forget` of lock_api's
//! guard, `force_unlock`), which compile to the raw calls.

use std::mem::forget;
#[cfg(feature = "arc_lock")]
use std::sync::Arc;

use lock_api::{GetThreadId, GuardNoSend, RawMutex, RawMutexFair, RawMutexTimed};
use lockdep::{LockMap, Mode};

use super::{
    acquisitions, block, guard_core, here, lock_surface, mapped_guard, projections, timed, tried,
    Defer, Relocks, Tracked,
};
use crate::dep::{Dep, DepRef, Held, Site, Track};

/// The lock_api re-entrant mutex this type wraps.
type Inner<R, G, T> = lock_api::ReentrantMutex<R, G, T>;

/// Whether a lock_api guard came back (a level was taken); the level is kept, the guard
/// forgotten.
#[inline(always)]
fn took<Guard>(guard: Option<Guard>) -> bool {
    guard.map(forget).is_some()
}

/// A mutex the owning thread may lock again, over the raw mutex `R` and the thread id `G`,
/// with the API of `lock_api::ReentrantMutex<R, G, T>`; guards give `&T` only. Class rules
/// as for [`Mutex`](super::Mutex); only the outermost acquisition of a thread is validated
/// and tracked (see the module docs).
///
/// Size: `lock_api::ReentrantMutex<R, G, T>` plus a [`LockMap`] with `validate`, exactly
/// that without it.
pub struct ReentrantMutex<R: RawMutex, G: GetThreadId, T: ?Sized> {
    dep: Dep,
    inner: Inner<R, G, T>,
}

lock_surface!(ReentrantMutex<R: RawMutex, G: GetThreadId>, "ReentrantMutex", lock);

impl<R: RawMutex, G: GetThreadId, T> ReentrantMutex<R, G, T> {
    /// A new unlocked mutex over `raw_mutex` and `get_thread_id`
    /// (`lock_api::ReentrantMutex::from_raw`); class as for [`new`](Self::new).
    #[inline]
    #[track_caller]
    pub const fn from_raw(raw_mutex: R, get_thread_id: G, val: T) -> ReentrantMutex<R, G, T> {
        ReentrantMutex {
            dep: Dep::of_type::<T>("ReentrantMutex"),
            inner: lock_api::ReentrantMutex::from_raw(raw_mutex, get_thread_id, val),
        }
    }

    /// Consumes the mutex and returns its raw mutex, a thread-id source and the data
    /// (lock_api 0.5's `into_inner_with_raw`). The thread-id source is `G::INIT`, not the
    /// mutex's own (lock_api 0.4 keeps that private, and it is forgotten, not dropped): the
    /// same for a stateless one such as [`RawThreadId`](crate::RawThreadId). If the mutex is
    /// still locked (a forgotten guard), lockdep hears that it is destroyed while held, and
    /// the raw mutex comes back locked.
    #[inline]
    pub fn into_inner_with_raw(self) -> (R, G, T) {
        let me = std::mem::ManuallyDrop::new(self);
        me.dep.check_freed(|| me.inner.is_locked());
        // SAFETY: `me` is never used or dropped again, so each field is moved out exactly
        // once (the `Drop` of the lock, which only checks, is skipped).
        let (_dep, inner) = unsafe { (std::ptr::read(&me.dep), std::ptr::read(&me.inner)) };
        let inner = std::mem::ManuallyDrop::new(inner);
        // SAFETY: lock_api's re-entrant mutex has no `Drop` of its own; `inner` is never
        // dropped, so reading the raw mutex and the data out of it moves each once (its owner
        // word, count and thread-id source are forgotten). We own `inner`: no guard exists.
        let (raw, data) = unsafe {
            (
                std::ptr::read(inner.raw()),
                std::ptr::read(inner.data_ptr()),
            )
        };
        (raw, G::INIT, data)
    }

    /// The same as [`from_raw`](Self::from_raw) (lock_api's older name).
    #[inline]
    #[track_caller]
    pub const fn const_new(raw_mutex: R, get_thread_id: G, val: T) -> ReentrantMutex<R, G, T> {
        ReentrantMutex {
            dep: Dep::of_type::<T>("ReentrantMutex"),
            inner: lock_api::ReentrantMutex::from_raw(raw_mutex, get_thread_id, val),
        }
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> ReentrantMutex<R, G, T> {
    /// A blocking acquisition: validated (and tracked) only if it is the thread's outermost.
    #[inline(always)]
    #[track_caller]
    fn blocking_track(
        &self,
        mode: Mode,
        subclass: u8,
        nest: Option<&LockMap>,
        try_lock: impl FnOnce(&Inner<R, G, T>) -> bool,
        lock: impl FnOnce(&Inner<R, G, T>),
    ) -> Track {
        let site = here();
        let track = if self.inner.is_owned_by_current_thread() {
            Track::NONE
        } else {
            self.dep.acquire(mode, subclass, nest, site)
        };
        block(
            &self.dep,
            track,
            site,
            || try_lock(&self.inner),
            || lock(&self.inner),
        );
        track
    }

    #[inline]
    #[track_caller]
    fn tried_guard<Guard: Tracked>(
        &self,
        mode: Mode,
        try_lock: impl FnOnce(&Inner<R, G, T>) -> bool,
        make: impl FnOnce(Track) -> Guard,
    ) -> Option<Guard> {
        let nested = self.inner.is_owned_by_current_thread();
        let locked = try_lock(&self.inner);
        if nested {
            locked.then(|| make(Track::NONE))
        } else {
            tried(locked, &self.dep, mode, here(), make)
        }
    }

    #[inline]
    #[track_caller]
    fn timed_track(
        &self,
        mode: Mode,
        try_lock: impl FnOnce(&Inner<R, G, T>) -> bool,
    ) -> Option<Track> {
        if self.inner.is_owned_by_current_thread() {
            try_lock(&self.inner).then_some(Track::NONE)
        } else {
            timed(&self.dep, mode, here(), || try_lock(&self.inner))
        }
    }

    /// Releases one level with `unlock` (the guards' drop, `force_unlock`); the thread's entry
    /// of the mutex goes with its last level (after the raw unlock), whichever guard that
    /// is: the outermost one (`track` held), a nested guard that outlived it, or a level
    /// whose outermost guard was forgotten.
    ///
    /// # Safety
    ///
    /// The calling thread must hold a level that no live guard owns (any more), and `unlock`
    /// must release one level.
    #[inline]
    unsafe fn release_level(
        &self,
        track: &mut Track,
        site: Site,
        unlock: impl FnOnce(&Inner<R, G, T>),
    ) {
        // Whether this was the thread's last level is known only after the unlock, so
        // lockdep hears of the release just after the raw unlock.
        unlock(&self.inner);
        if self.inner.is_owned_by_current_thread() {
            // A level is left (a nested guard outliving the outermost one): the entry stays.
            return;
        }
        if track.is_held() {
            track.release_exclusive(&self.dep, site);
        } else {
            // The last level of a nested guard that outlived the outermost one, or of a
            // forgotten outermost guard (`force_unlock`): this thread's entry, if any.
            self.dep.release_own(site);
        }
    }

    acquisitions! {
        /// Locks, blocking unless this thread already owns the mutex. The outermost lock is
        /// validated before it can block.
        blocking plain lock() -> ReentrantMutexGuard<'_, R, G, T>
            = Mode::Exclusive, |m| forget(m.lock()), |m| took(m.try_lock());
        /// Tries to lock without blocking; an outermost success is recorded as a trylock.
        try plain try_lock() -> ReentrantMutexGuard<'_, R, G, T>
            = Mode::Exclusive, |m| took(m.try_lock());
        /// [`lock`](Self::lock) through an `Arc`.
        blocking arc lock_arc() -> ArcReentrantMutexGuard<R, G, T>
            = Mode::Exclusive, |m| forget(m.lock()), |m| took(m.try_lock());
        /// [`try_lock`](Self::try_lock) through an `Arc`.
        try arc try_lock_arc() -> ArcReentrantMutexGuard<R, G, T>
            = Mode::Exclusive, |m| took(m.try_lock());
    }

    /// Locks as subclass `subclass` of the class (for the outermost acquisition; the
    /// kernel's `mutex_lock_nested()`).
    #[inline]
    #[track_caller]
    pub fn lock_nested(&self, subclass: u8) -> ReentrantMutexGuard<'_, R, G, T> {
        let track = self.blocking_track(
            Mode::Exclusive,
            subclass,
            None,
            |m| took(m.try_lock()),
            |m| forget(m.lock()),
        );
        ReentrantMutexGuard::new(self, track)
    }

    /// Makes a guard for a level the caller holds without a guard (lock_api's
    /// `make_guard_unchecked`); the guard tracks nothing (its drop releases the lockdep entry
    /// only if it unlocks the thread's last level, see [`force_unlock`](Self::force_unlock)).
    ///
    /// # Safety
    ///
    /// The calling thread must hold a level of the mutex that no other guard owns.
    #[inline]
    pub unsafe fn make_guard_unchecked(&self) -> ReentrantMutexGuard<'_, R, G, T> {
        ReentrantMutexGuard::new(self, Track::NONE)
    }

    /// [`make_guard_unchecked`](Self::make_guard_unchecked) through an `Arc`.
    ///
    /// # Safety
    ///
    /// As for `make_guard_unchecked`.
    #[cfg(feature = "arc_lock")]
    #[inline]
    pub unsafe fn make_arc_guard_unchecked(self: &Arc<Self>) -> ArcReentrantMutexGuard<R, G, T> {
        ArcReentrantMutexGuard::new(Arc::clone(self), Track::NONE)
    }

    /// Whether the calling thread holds the mutex (lock_api's own owner record).
    #[inline]
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.inner.is_owned_by_current_thread()
    }

    /// Releases one level without a guard (after `mem::forget` of one); if it was the
    /// thread's last level, this thread's held-lock entry of the mutex goes too. If the
    /// calling thread owns no level, lockdep reports a bad unlock balance at the caller and
    /// the mutex is left alone.
    ///
    /// # Safety
    ///
    /// The calling thread must hold a level that no live guard owns.
    #[inline]
    #[track_caller]
    pub unsafe fn force_unlock(&self) {
        if !self.owns_a_level(here()) {
            return;
        }
        // SAFETY: the caller's contract is `release_level`'s; lock_api's `force_unlock`
        // releases one level (the caller owns one).
        unsafe { self.release_level(&mut { Track::NONE }, here(), |m| m.force_unlock()) }
    }

    /// For a force-unlock at `site`: true if the calling thread owns a level; else reports
    /// the bad unlock balance (the validator's, when validation is on) and returns false.
    fn owns_a_level(&self, site: Site) -> bool {
        self.inner.is_owned_by_current_thread() || self.dep.force_release(false, site, false)
    }
}

impl<R: RawMutexFair, G: GetThreadId, T: ?Sized> ReentrantMutex<R, G, T> {
    /// [`force_unlock`](Self::force_unlock) with a fair hand-off to a waiting thread when
    /// the last level goes.
    ///
    /// # Safety
    ///
    /// As for `force_unlock`.
    #[inline]
    #[track_caller]
    pub unsafe fn force_unlock_fair(&self) {
        if !self.owns_a_level(here()) {
            return;
        }
        // SAFETY: as in `force_unlock`.
        unsafe { self.release_level(&mut { Track::NONE }, here(), |m| m.force_unlock_fair()) }
    }
}

impl<R: RawMutexTimed, G: GetThreadId, T: ?Sized> ReentrantMutex<R, G, T> {
    acquisitions! {
        /// Tries to lock for at most `timeout` (an outermost lock is validated before it
        /// waits; a timeout is recorded as a release).
        timed plain try_lock_for(timeout: R::Duration) -> ReentrantMutexGuard<'_, R, G, T>
            = Mode::Exclusive, |m| took(m.try_lock_for(timeout));
        /// Tries to lock until the instant `timeout`.
        timed plain try_lock_until(timeout: R::Instant) -> ReentrantMutexGuard<'_, R, G, T>
            = Mode::Exclusive, |m| took(m.try_lock_until(timeout));
        /// [`try_lock_for`](Self::try_lock_for) through an `Arc`.
        timed arc try_lock_arc_for(timeout: R::Duration) -> ArcReentrantMutexGuard<R, G, T>
            = Mode::Exclusive, |m| took(m.try_lock_for(timeout));
        /// [`try_lock_until`](Self::try_lock_until) through an `Arc`.
        timed arc try_lock_arc_until(timeout: R::Instant) -> ArcReentrantMutexGuard<R, G, T>
            = Mode::Exclusive, |m| took(m.try_lock_until(timeout));
    }
}

guard_core! {
    ReentrantMutex<R, G, T>:
        impl[R: RawMutex, G: GetThreadId, T: ?Sized] fair[R: RawMutexFair, G: GetThreadId, T: ?Sized];
    /// Holds a level of a [`ReentrantMutex`]; never `Send` (the mutex belongs to the thread
    /// that took it, as in lock_api). Only the outermost guard of a thread is on lockdep's
    /// held stack.
    #[must_use = "if unused the ReentrantMutex will immediately unlock"]
    plain ReentrantMutexGuard, remutex, marker (&'a T, GuardNoSend);
    /// A [`ReentrantMutexGuard`] through an `Arc` ([`ReentrantMutex::lock_arc`]).
    #[must_use = "if unused the ReentrantMutex will immediately unlock"]
    arc ArcReentrantMutexGuard, marker GuardNoSend;
    // SAFETY: the guard held a level, and is gone; lock_api's `force_unlock` releases one.
    release: |lock, track, site| unsafe {
        lock.release_level(&mut track, site, |m| m.force_unlock())
    };
    // SAFETY: as for `release`, with the fair unlock.
    release_fair: |lock, track, site| unsafe {
        lock.release_level(&mut track, site, |m| m.force_unlock_fair())
    };
    relock: |lock| forget(lock.inner.lock());
    // Not called: a re-entrant guard's bump is a fair `unlocked` (see `Relocks` below).
    bump: |_lock| {};
}

/// `unlocked`, `unlocked_fair` and `bump` of a re-entrant guard release one level; lockdep
/// hears of it only if that was the thread's last level (as of the first acquisition: only
/// the outermost one is validated). Above the last level the mutex stays owned, so the entry
/// stays and `f` runs with it held (its locks depend on the mutex), and the re-lock (a count
/// increment) cannot block and is not validated. If the last level goes (whichever guard
/// holds the entry: this one, or the outermost one that a nested guard outlived), the entry
/// goes with it, and the re-lock is validated as an outermost acquisition with the entry's
/// subclass and nest lock; this guard then holds the entry. The re-lock is judged when it
/// happens: if `f` released the other levels, it is the outermost again.
///
/// lock_api's `ReentrantMutexGuard::bump` is a no-op above one level and does not tell which
/// it is; this `bump` is a fair `unlocked` with nothing to run, which it is "functionally
/// equivalent" to (lock_api's docs): without waiters, a raw unlock and lock of the last level
/// where lock_api's bump reads the lock word once.
impl<R: RawMutex, G: GetThreadId, T: ?Sized> Relocks for ReentrantMutex<R, G, T> {
    #[inline(always)]
    fn dep(&self) -> &Dep {
        &self.dep
    }

    #[inline]
    fn unlocked_track<U>(
        &self,
        track: &mut Track,
        site: Site,
        unlock: impl FnOnce(&Self, &mut Track),
        lock: impl FnOnce(&Self),
        f: impl FnOnce() -> U,
    ) -> U {
        // The thread's entry (whichever guard holds it), for a re-lock of the last level.
        let saved = self.dep.saved_entry(Mode::Exclusive);
        // One level goes; the entry with it if it was the thread's last (`release_level`,
        // with this guard's track).
        unlock(self, track);
        let _relock = Defer::new(move || {
            let outermost = !self.inner.is_owned_by_current_thread();
            let _lock = Defer::new(move || lock(self));
            // Whatever this guard tracked before `f`: the other levels' guards may have
            // released the entry in `f` (the last level went there) and made another (an
            // outermost lock again), which their guard tracks. The entry goes with the last
            // level whichever guard releases it (`release_level`), so this guard need track
            // only what its own re-lock makes.
            *track = Track::NONE;
            if outermost {
                if let Some(saved) = saved {
                    track.resume(&self.dep, saved, site);
                }
            }
        });
        f()
    }

    #[inline]
    fn bump_track(
        &self,
        track: &mut Track,
        site: Site,
        bump: impl FnOnce(&Self),
        unlock_fair: impl FnOnce(&Self, &mut Track),
        lock: impl FnOnce(&Self),
    ) {
        let _ = bump;
        self.unlocked_track(track, site, unlock_fair, lock, || ());
    }
}

// SAFETY: sharing `&Guard` shares only `&T`, `&R` and `&G` (as lock_api's guard).
unsafe impl<R: RawMutex + Sync, G: GetThreadId + Sync, T: ?Sized + Sync> Sync
    for ReentrantMutexGuard<'_, R, G, T>
{
}

super::guard_stable!(impl['a, R: RawMutex, G: GetThreadId, T: ?Sized] ReentrantMutexGuard<'a, R, G, T>;);

impl<'a, R: RawMutex, G: GetThreadId, T: ?Sized> ReentrantMutexGuard<'a, R, G, T> {
    /// Splits the guard for a projection into the mutex, lockdep's release and lock_api's.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn split(
        s: Self,
    ) -> (
        &'a ReentrantMutex<R, G, T>,
        Held<'a>,
        lock_api::ReentrantMutexGuard<'a, R, G, T>,
    ) {
        let (lock, track) = ReentrantMutexGuard::take(s);
        let held = Held::new(DepRef::from(&lock.dep), track);
        // SAFETY: the guard owned a level; the lock_api guard owns it now.
        (lock, held, unsafe { lock.inner.make_guard_unchecked() })
    }

    /// The inverse of [`split`](Self::split).
    #[inline]
    fn join(
        lock: &'a ReentrantMutex<R, G, T>,
        held: Held<'a>,
        raw: lock_api::ReentrantMutexGuard<'a, R, G, T>,
    ) -> Self {
        forget(raw);
        ReentrantMutexGuard::new(lock, held.into_track())
    }

    projections!(MappedReentrantMutexGuard<R, G>, ReentrantMutexGuard, [], try_map_or_err);
}

mapped_guard! {
    /// A [`ReentrantMutexGuard`] projected by [`ReentrantMutexGuard::map`]; never `Send`.
    #[must_use = "if unused the ReentrantMutex will immediately unlock"]
    MappedReentrantMutexGuard<R: RawMutex, G: GetThreadId>, MappedReentrantMutexGuard,
    fair<R: RawMutexFair, G: GetThreadId>, []
}

impl<'a, R: RawMutex, G: GetThreadId, T: ?Sized> MappedReentrantMutexGuard<'a, R, G, T> {
    projections!(MappedReentrantMutexGuard<R, G>, MappedReentrantMutexGuard, [], try_map_or_err);
}
