//! [`ReentrantMutex<R, G, T>`]: `lock_api::ReentrantMutex<R, G, T>` fed to lockdep.
//!
//! Only a thread's *outermost* acquisition is a lockdep acquisition: re-locking a re-entrant
//! mutex the thread already owns cannot block, so it is neither validated nor pushed on the
//! held stack (the guard of such a nested lock tracks nothing). The entry lives as long as
//! the thread holds a level: if the outermost guard is dropped before a nested one, the
//! entry stays (at its place on the stack) until the nested guard, the last level, goes.
//! The same rule holds for a guard's `unlocked` and `bump` (only the last level's release and
//! re-lock reach lockdep: see the `Relocks` impl) and for a mapped guard
//! ([`MappedReentrantMutexGuard`]): it holds the level of the guard it was mapped from and
//! releases it as that guard's drop would (its drop, `unlock_fair`, or a panic in the closure
//! of `map` or `try_map`: see [`Level`]). The entry goes with the thread's last level, whether
//! a mapped guard or another one holds it, and stays while a level is left, whatever the
//! mapped guard's own guard tracked.
//!
//! The raw side is lock_api's. Its raw re-entrant mutex (owner and count over `R`) has no
//! public constructor from parts, but lock_api's `ReentrantMutex<R, G, ()>` is one that
//! `from_raw` builds from the parts ([`Raw`]): the lock wraps that, next to the data in a cell
//! of its own ([`Inner`]: lock_api's `ReentrantMutex<R, G, T>` taken apart, of the same size),
//! and takes and releases levels through its methods (`lock` then `mem::forget` of lock_api's
//! guard, `force_unlock`), which compile to the raw calls. The mapped guard is this module's
//! own, not lock_api's, whose mapped guard cannot tell whether the thread still owns the
//! mutex: it keeps a reference to the `Raw`, which does not name `T`, and asks it after its
//! release, as the unmapped guards ask the lock.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::{forget, ManuallyDrop};
#[cfg(feature = "arc_lock")]
use std::sync::Arc;

use lock_api::{GetThreadId, GuardNoSend, RawMutex, RawMutexFair, RawMutexTimed};
use lockdep::{LockMap, Mode};

use super::{
    acquisitions, block, guard_core, guard_impls, guard_stable, here, lock_surface, timed, tried,
    Defer, Relocks, Tracked,
};
use crate::dep::{drop_site, Dep, DepRef, Held, Site, Track};

/// The raw re-entrant mutex: lock_api's re-entrant mutex of no data, which is its raw
/// re-entrant mutex (the owner and the level count over `R`) behind lock_api's methods.
type Raw<R, G> = lock_api::ReentrantMutex<R, G, ()>;

/// What the lock wraps: `lock_api::ReentrantMutex<R, G, T>` taken apart into its raw
/// re-entrant mutex and the data's cell, so that a mapped guard can reach the first without
/// `T`. Its methods are the ones of lock_api's type that the shared surface
/// ([`lock_surface`]) calls; the size is lock_api's type's (a `Raw` is a raw re-entrant mutex,
/// its `()` takes no room).
struct Inner<R, G, T: ?Sized> {
    raw: Raw<R, G>,
    data: UnsafeCell<T>,
}

// SAFETY: lock_api's `Sync` impl of its `ReentrantMutex<R, G, T>`, with its bounds: the data
// is reached by shared reference only, under a level, which one thread owns at a time (so
// `T: Send`, not `Sync`); `&mut T` only through `&mut self`. `Send` is the fields' own.
unsafe impl<R: RawMutex + Sync, G: GetThreadId + Sync, T: ?Sized + Send> Sync for Inner<R, G, T> {}

impl<R: RawMutex, G: GetThreadId, T> Inner<R, G, T> {
    /// lock_api's `ReentrantMutex::new`.
    #[inline]
    const fn new(val: T) -> Self {
        Inner::from_raw(R::INIT, G::INIT, val)
    }

    /// lock_api's `ReentrantMutex::from_raw`.
    #[inline]
    const fn from_raw(raw_mutex: R, get_thread_id: G, val: T) -> Self {
        Inner {
            raw: lock_api::ReentrantMutex::from_raw(raw_mutex, get_thread_id, ()),
            data: UnsafeCell::new(val),
        }
    }

    #[inline]
    fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> Inner<R, G, T> {
    #[inline]
    fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    #[inline]
    fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// lock_api's `raw`.
    ///
    /// # Safety
    ///
    /// As lock_api's: unlocking the raw mutex while a guard exists is undefined behaviour.
    #[inline]
    unsafe fn raw(&self) -> &R {
        // SAFETY: the caller takes over lock_api's contract.
        unsafe { self.raw.raw() }
    }

    #[inline]
    fn data_ptr(&self) -> *mut T {
        self.data.get()
    }
}

/// Releases one level of `raw` with `unlock` (the guards' drop, `force_unlock`, a mapped
/// guard's [`Level`]); the thread's entry of the mutex (`dep`'s) goes with its last level
/// (after the raw unlock), whichever guard that is: the one whose `track` is held, a nested
/// guard that outlived it, a mapped guard, or a level whose outermost guard was forgotten.
/// Above the last level nothing reaches lockdep, and `track` is left as it was.
///
/// # Safety
///
/// The calling thread must hold a level of `raw` that no live guard owns (any more), and
/// `unlock` must release one level.
#[inline]
unsafe fn release_level<R: RawMutex, G: GetThreadId>(
    dep: &Dep,
    raw: &Raw<R, G>,
    track: &mut Track,
    site: Site,
    unlock: impl FnOnce(&Raw<R, G>),
) {
    // Whether this was the thread's last level is known only after the unlock, so
    // lockdep hears of the release just after the raw unlock.
    unlock(raw);
    if raw.is_owned_by_current_thread() {
        // A level is left (another guard, mapped or not, or a forgotten one): the entry stays.
        return;
    }
    if track.is_held() {
        track.release_exclusive(dep, site);
    } else {
        // The last level of a guard that does not track the entry (a nested guard that
        // outlived the outermost one, or a forgotten outermost guard's: `force_unlock`):
        // this thread's entry, if any.
        dep.release_own(site);
    }
}

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

lock_surface!(ReentrantMutex<R: RawMutex, G: GetThreadId>, "ReentrantMutex", lock, try_lock, inner Inner);

impl<R: RawMutex, G: GetThreadId, T> ReentrantMutex<R, G, T> {
    /// A new unlocked mutex over `raw_mutex` and `get_thread_id`
    /// (`lock_api::ReentrantMutex::from_raw`); class as for [`new`](Self::new).
    #[inline]
    #[track_caller]
    pub const fn from_raw(raw_mutex: R, get_thread_id: G, val: T) -> ReentrantMutex<R, G, T> {
        ReentrantMutex {
            dep: Dep::of_type::<T>("ReentrantMutex"),
            inner: Inner::from_raw(raw_mutex, get_thread_id, val),
        }
    }

    /// Consumes the mutex and returns its raw mutex, a thread-id source and the data
    /// (lock_api 0.5's `into_inner_with_raw`). The thread-id source is `G::INIT`, not the
    /// mutex's own (lock_api 0.4 keeps that private, and it is forgotten, not dropped): the
    /// same for a stateless one such as [`RawThreadId`](crate::RawThreadId). If the mutex is
    /// still locked (a forgotten guard), lockdep reports it destroyed while held, as
    /// `into_inner` does, and the raw mutex comes back locked.
    #[inline]
    pub fn into_inner_with_raw(self) -> (R, G, T) {
        let me = std::mem::ManuallyDrop::new(self);
        me.dep.check_freed(|| me.inner.is_locked());
        // SAFETY: `me` is never used or dropped again, so each field is moved out exactly
        // once (the `Drop` of the lock, which only checks, is skipped).
        let (_dep, inner) = unsafe { (std::ptr::read(&me.dep), std::ptr::read(&me.inner)) };
        let inner = std::mem::ManuallyDrop::new(inner);
        // SAFETY: neither `Inner` nor lock_api's re-entrant mutex has a `Drop` of its own;
        // `inner` is never dropped, so reading the raw mutex and the data out of it moves each
        // once (the owner word, count and thread-id source are forgotten). We own `inner`: no
        // guard exists.
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
            inner: Inner::from_raw(raw_mutex, get_thread_id, val),
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
        try_lock: impl FnOnce(&Raw<R, G>) -> bool,
        lock: impl FnOnce(&Raw<R, G>),
    ) -> Track {
        let site = here();
        let raw = &self.inner.raw;
        let track = if raw.is_owned_by_current_thread() {
            Track::NONE
        } else {
            self.dep.acquire(mode, subclass, nest, site)
        };
        block(&self.dep, track, site, || try_lock(raw), || lock(raw));
        track
    }

    #[inline]
    #[track_caller]
    fn tried_guard<Guard: Tracked>(
        &self,
        mode: Mode,
        try_lock: impl FnOnce(&Raw<R, G>) -> bool,
        make: impl FnOnce(Track) -> Guard,
    ) -> Option<Guard> {
        let nested = self.inner.raw.is_owned_by_current_thread();
        let locked = try_lock(&self.inner.raw);
        if nested {
            locked.then(|| make(Track::NONE))
        } else {
            tried(locked, &self.dep, mode, here(), make)
        }
    }

    #[inline]
    #[track_caller]
    fn timed_track(&self, mode: Mode, try_lock: impl FnOnce(&Raw<R, G>) -> bool) -> Option<Track> {
        let raw = &self.inner.raw;
        if raw.is_owned_by_current_thread() {
            try_lock(raw).then_some(Track::NONE)
        } else {
            timed(&self.dep, mode, here(), || try_lock(raw))
        }
    }

    /// [`release_level`] of this mutex (the guards' drop, `force_unlock`).
    ///
    /// # Safety
    ///
    /// As for [`release_level`].
    #[inline]
    unsafe fn release_level(&self, track: &mut Track, site: Site, unlock: impl FnOnce(&Raw<R, G>)) {
        // SAFETY: the caller's contract is `release_level`'s.
        unsafe { release_level(&self.dep, &self.inner.raw, track, site, unlock) }
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
        self.inner.raw.is_owned_by_current_thread()
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
    /// the bad unlock balance (the validator's, when validation is on) and returns false, as
    /// `Dep::force_release` does for a raw lock that is not locked (switched off and without
    /// `validate` too: a raw unlock without a level would underflow lock_api's level count or
    /// release another thread's level).
    fn owns_a_level(&self, site: Site) -> bool {
        self.inner.raw.is_owned_by_current_thread() || self.dep.force_release(false, site, false)
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
    arc ArcReentrantMutexGuard, marker (*const (), GuardNoSend);
    // SAFETY: the guard held a level, and is gone; lock_api's `force_unlock` releases one.
    release: |lock, track, site| unsafe {
        lock.release_level(&mut track, site, |m| m.force_unlock())
    };
    // SAFETY: as for `release`, with the fair unlock.
    release_fair: |lock, track, site| unsafe {
        lock.release_level(&mut track, site, |m| m.force_unlock_fair())
    };
    relock: |lock| forget(lock.inner.raw.lock());
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
            let outermost = !self.inner.raw.is_owned_by_current_thread();
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

// SAFETY: as for `ReentrantMutexGuard`: sharing `&Guard` shares `&T`, so `T: Sync` (the
// `Arc` of the mutex is `Sync` with `T: Send` alone, which would let the level's holder hand
// `&T` to other threads: lock_api 0.4.14's `ArcReentrantMutexGuard`, whose marker is only
// `GuardNoSend`, is `Sync` so; the `*const ()` in this guard's marker leaves this impl the
// only one), `&R`, `&G` and the lock map, through the `Arc`, which is only read.
#[cfg(feature = "arc_lock")]
unsafe impl<R: RawMutex + Sync, G: GetThreadId + Sync, T: ?Sized + Sync> Sync
    for ArcReentrantMutexGuard<R, G, T>
{
}

super::guard_stable!(impl['a, R: RawMutex, G: GetThreadId, T: ?Sized] ReentrantMutexGuard<'a, R, G, T>;);

/// A level of the mutex that a mapped guard holds (and a guard being projected, while the
/// closure of `map` or `try_map` runs), with what its guard tracked. Its drop releases the
/// level as an unmapped guard's drop does ([`release_level`]): the raw re-entrant mutex tells
/// whether it was the thread's last, so the entry goes with the last level, whichever guard
/// holds it, and stays above it, whatever this one tracked; on an unwind from the closure
/// too.
///
/// Its size is lock_api's mapped guard's reference to the raw mutex plus a [`Held`] (the lock
/// map's address and the track: nothing without `validate`).
struct Level<'a, R: RawMutex, G: GetThreadId> {
    held: Held<'a>,
    raw: &'a Raw<R, G>,
}

impl<'a, R: RawMutex, G: GetThreadId> Level<'a, R, G> {
    /// The level of a guard of `lock` that is gone, which tracked `track`.
    #[inline]
    fn of<T: ?Sized>(lock: &'a ReentrantMutex<R, G, T>, track: Track) -> Self {
        Level {
            held: Held::new(DepRef::from(&lock.dep), track),
            raw: &lock.inner.raw,
        }
    }

    /// What the level tracked; the caller's guard holds the level from now on.
    #[inline]
    fn into_track(self) -> Track {
        // Never dropped: its level is the caller's now (a `Held` and a reference: nothing
        // else to release).
        let mut me = ManuallyDrop::new(self);
        std::mem::replace(me.held.track(), Track::NONE)
    }

    /// Releases the level with `unlock`, by [`release_level`]'s rule, reporting `site`.
    ///
    /// # Safety
    ///
    /// `unlock` must release one level, and the level must not be released again: called
    /// once, from the drop or with `self` never dropped.
    #[inline]
    unsafe fn release_once(&mut self, site: Site, unlock: impl FnOnce(&Raw<R, G>)) {
        // The track goes to `release_level`; what `held` is left with releases nothing.
        let mut track = std::mem::replace(self.held.track(), Track::NONE);
        // SAFETY: the thread holds this level, which no guard owns (its guard is gone, see
        // `of`), and releases it once (the caller's contract, with `unlock`'s).
        unsafe { release_level(self.held.dep(), self.raw, &mut track, site, unlock) }
    }

    /// Releases the level with `unlock` (a fair unlock), reporting `site`.
    ///
    /// # Safety
    ///
    /// `unlock` must release one level.
    #[inline]
    unsafe fn release(self, site: Site, unlock: impl FnOnce(&Raw<R, G>)) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so this is the one release; `unlock` is the caller's.
        unsafe { me.release_once(site, unlock) }
    }
}

impl<R: RawMutex, G: GetThreadId> Drop for Level<'_, R, G> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: lock_api's `force_unlock` releases one level; this is the drop, so the
        // level is released once.
        unsafe { self.release_once(drop_site(), |raw| raw.force_unlock()) }
    }
}

/// `map`, `try_map` and `try_map_or_err` of a re-entrant guard `Self<'a, R, G, T>` onto a
/// [`MappedReentrantMutexGuard`], as lock_api's. `Self` provides `split` (what to come back
/// to, the [`Level`] the guard held, the data) and `join` (its inverse). The projected guard
/// holds the level and what the guard tracked; if `f` panics, the level goes as the guard's
/// drop would release it (its entry only with the thread's last level).
macro_rules! level_projections {
    () => {
        /// Projects the guard onto a part of the data; the level stays held (and the entry
        /// tracked, if the guard tracked it).
        #[inline]
        pub fn map<U: ?Sized, F>(s: Self, f: F) -> MappedReentrantMutexGuard<'a, R, G, U>
        where
            F: FnOnce(&T) -> &U,
        {
            let (_, level, data) = Self::split(s);
            // SAFETY: `level` holds a level, which gives shared access to the data; the
            // reference lives no longer than `level` or the mapped guard that takes it over.
            let data = f(unsafe { &*data });
            MappedReentrantMutexGuard::new(level, data)
        }

        /// Like `map`, but `f` may decline (`None`); then the guard comes back.
        #[inline]
        pub fn try_map<U: ?Sized, F>(
            s: Self,
            f: F,
        ) -> Result<MappedReentrantMutexGuard<'a, R, G, U>, Self>
        where
            F: FnOnce(&T) -> Option<&U>,
        {
            let (back, level, data) = Self::split(s);
            // SAFETY: as in `map`.
            match f(unsafe { &*data }) {
                Some(mapped) => Ok(MappedReentrantMutexGuard::new(level, mapped)),
                None => Err(Self::join(back, level, data)),
            }
        }

        /// Like `try_map`, with `f`'s error given back next to the guard.
        #[inline]
        pub fn try_map_or_err<U: ?Sized, F, E>(
            s: Self,
            f: F,
        ) -> Result<MappedReentrantMutexGuard<'a, R, G, U>, (Self, E)>
        where
            F: FnOnce(&T) -> Result<&U, E>,
        {
            let (back, level, data) = Self::split(s);
            // SAFETY: as in `map`.
            match f(unsafe { &*data }) {
                Ok(mapped) => Ok(MappedReentrantMutexGuard::new(level, mapped)),
                Err(e) => Err((Self::join(back, level, data), e)),
            }
        }
    };
}

impl<'a, R: RawMutex, G: GetThreadId, T: ?Sized> ReentrantMutexGuard<'a, R, G, T> {
    /// Splits the guard for a projection into the mutex, the level it held and the data.
    #[inline]
    fn split(s: Self) -> (&'a ReentrantMutex<R, G, T>, Level<'a, R, G>, *const T) {
        let (lock, track) = ReentrantMutexGuard::take(s);
        (lock, Level::of(lock, track), lock.data_ptr())
    }

    /// The inverse of [`split`](Self::split).
    #[inline]
    fn join(lock: &'a ReentrantMutex<R, G, T>, level: Level<'a, R, G>, _: *const T) -> Self {
        ReentrantMutexGuard::new(lock, level.into_track())
    }

    level_projections!();
}

/// A [`ReentrantMutexGuard`] projected by [`ReentrantMutexGuard::map`]; never `Send`. It holds
/// its guard's level (and the entry, if its guard tracked it): its drop and `unlock_fair`
/// release that level as an unmapped guard's drop does, and the held-lock entry goes only with
/// the thread's last level, whichever guard holds that one. The size of lock_api's mapped
/// guard plus the lock map's address and the track.
#[must_use = "if unused the ReentrantMutex will immediately unlock"]
#[clippy::has_significant_drop]
pub struct MappedReentrantMutexGuard<'a, R: RawMutex, G: GetThreadId, T: ?Sized> {
    level: Level<'a, R, G>,
    /// The projected data; a pointer (as lock_api's), which keeps the guard `!Send`.
    data: *const T,
    marker: PhantomData<&'a T>,
}

// SAFETY: sharing `&Guard` shares only `&T`, `&R` and `&G` (lock_api's mapped guard has the
// same impl), and the lock map (`Sync`).
unsafe impl<'a, R: RawMutex + Sync + 'a, G: GetThreadId + Sync + 'a, T: ?Sized + Sync + 'a> Sync
    for MappedReentrantMutexGuard<'a, R, G, T>
{
}

impl<'a, R: RawMutex, G: GetThreadId, T: ?Sized> MappedReentrantMutexGuard<'a, R, G, T> {
    #[inline]
    fn new(level: Level<'a, R, G>, data: *const T) -> Self {
        MappedReentrantMutexGuard {
            level,
            data,
            marker: PhantomData,
        }
    }

    #[inline]
    fn split(s: Self) -> ((), Level<'a, R, G>, *const T) {
        let MappedReentrantMutexGuard { level, data, .. } = s;
        ((), level, data)
    }

    #[inline]
    fn join(_: (), level: Level<'a, R, G>, data: *const T) -> Self {
        MappedReentrantMutexGuard::new(level, data)
    }

    level_projections!();
}

impl<R: RawMutexFair, G: GetThreadId, T: ?Sized> MappedReentrantMutexGuard<'_, R, G, T> {
    /// Unlocks with a fair hand-off to a waiting thread (if the level is the thread's last).
    #[inline]
    #[track_caller]
    pub fn unlock_fair(s: Self) {
        let ((), level, _) = Self::split(s);
        // SAFETY: lock_api's `force_unlock_fair` releases one level.
        unsafe { level.release(here(), |raw| raw.force_unlock_fair()) }
    }
}

guard_impls! {
    impl['a, R: RawMutex, G: GetThreadId, T: ?Sized] MappedReentrantMutexGuard<'a, R, G, T>;
    data: |s| s.data;
    map: |s| s.level.held.map();
}
guard_stable!(impl['a, R: RawMutex, G: GetThreadId, T: ?Sized] MappedReentrantMutexGuard<'a, R, G, T>;);
