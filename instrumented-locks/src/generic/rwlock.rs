//! [`RwLock<R, T>`]: `lock_api::RwLock<R, T>` with every operation fed to lockdep. Its guards
//! are in `rwlock_guards`.

use lock_api::{
    RawRwLock, RawRwLockFair, RawRwLockRecursive, RawRwLockRecursiveTimed, RawRwLockTimed,
    RawRwLockUpgrade, RawRwLockUpgradeTimed,
};
use lockdep::Mode;

use super::{acquisitions, lock_surface};
#[cfg(feature = "arc_lock")]
use super::{ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard};
use super::{RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
use crate::dep::{Dep, UPGRADABLE};
use crate::HeldGuard;

/// A reader-writer lock over the raw lock `R`, with the API of `lock_api::RwLock<R, T>`,
/// validated by lockdep (class rules as for [`Mutex`](super::Mutex)).
///
/// Mode mapping (lockdep's [`Mode`]):
///
/// | operation | lockdep mode | why |
/// |---|---|---|
/// | `write`, `try_write*` | `Exclusive` | a writer |
/// | `read`, `try_read*` | `Read` | readers queue behind a *waiting* writer (parking_lot's writer preference) |
/// | `read_recursive`, `try_read_recursive*` | `RecursiveRead` | blocks only behind a *holding* writer |
/// | `upgradable_read`, `try_upgradable_read*` | `Upgradable` | shared with readers, exclusive with writers and other upgradable reads |
/// | `upgrade`, `try_upgrade_for/until`, `with_upgraded` | `lockdep::upgrade`: a blocking `Exclusive` acquisition under the other held locks | waits for every other reader to leave |
/// | `try_upgrade` (success) | mode changed in place to `Exclusive` | cannot wait |
/// | `downgrade*` | mode changed in place (the kernel's `lock_downgrade()`) | cannot wait |
///
/// Two upgradable reads of one lock in one thread, or an upgradable read ordered against a
/// write, are reported; an upgradable read ordered against a `read_recursive` is not (they
/// never block each other). A blocking upgrade moves the lock to the top of the held stack
/// (it is validated there); a downgrade keeps its place. Two `read()`s of one lock in one thread are reported (a writer
/// queued between them deadlocks the thread); `read()` then `read_recursive()` is not.
///
/// Size: `lock_api::RwLock<R, T>` plus a [`LockMap`](lockdep::LockMap) with `validate`, exactly
/// `lock_api::RwLock<R, T>` without it.
pub struct RwLock<R: RawRwLock, T: ?Sized> {
    pub(super) dep: Dep,
    pub(super) inner: lock_api::RwLock<R, T>,
}

lock_surface!(RwLock<R: RawRwLock>, "RwLock", read, try_read);

// `unlocked` and `bump` as every lock has them (a release, a validated re-lock).
impl<R: RawRwLock, T: ?Sized> super::Relocks for RwLock<R, T> {
    #[inline(always)]
    fn dep(&self) -> &Dep {
        &self.dep
    }
}

impl<R: RawRwLock, T> RwLock<R, T> {
    /// A new unlocked lock over the raw lock `raw_rwlock` (`lock_api::RwLock::from_raw`);
    /// class as for [`new`](Self::new).
    #[inline]
    #[track_caller]
    pub const fn from_raw(raw_rwlock: R, val: T) -> RwLock<R, T> {
        RwLock {
            dep: Dep::of_type::<T>("RwLock"),
            inner: lock_api::RwLock::from_raw(raw_rwlock, val),
        }
    }

    super::into_inner_with_raw!(RwLock);

    /// The same as [`from_raw`](Self::from_raw) (lock_api's older name).
    #[inline]
    #[track_caller]
    pub const fn const_new(raw_rwlock: R, val: T) -> RwLock<R, T> {
        RwLock {
            dep: Dep::of_type::<T>("RwLock"),
            inner: lock_api::RwLock::from_raw(raw_rwlock, val),
        }
    }
}

impl<R: RawRwLock, T: ?Sized> RwLock<R, T> {
    /// The raw lock, for the lock and unlock calls the guards pair up.
    #[inline]
    pub(super) fn raw_rwlock(&self) -> &R {
        // SAFETY: `raw` is unsafe because unlocking through it could break a guard; this
        // crate unlocks only what its own guard (or a `force_unlock*` caller) owns.
        unsafe { self.inner.raw() }
    }

    super::raw_helpers!(raw_rwlock);

    acquisitions! {
        /// Shared access that may queue behind a waiting writer (lockdep `Read`), validated
        /// before it can block.
        blocking plain read() -> RwLockReadGuard<'_, R, T> = Mode::Read, |r| r.lock_shared(), |r| r.try_lock_shared();
        /// Exclusive access (lockdep `Exclusive`), validated before it can block.
        blocking plain write() -> RwLockWriteGuard<'_, R, T> = Mode::Exclusive, |r| r.lock_exclusive(), |r| r.try_lock_exclusive();
        /// Non-blocking [`read`](Self::read); only a success is recorded.
        try plain try_read() -> RwLockReadGuard<'_, R, T> = Mode::Read, |r| r.try_lock_shared();
        /// Non-blocking [`write`](Self::write); only a success is recorded.
        try plain try_write() -> RwLockWriteGuard<'_, R, T>
            = Mode::Exclusive, |r| r.try_lock_exclusive();
        /// [`read`](Self::read) through an `Arc`.
        blocking arc read_arc() -> ArcRwLockReadGuard<R, T> = Mode::Read, |r| r.lock_shared(), |r| r.try_lock_shared();
        /// [`write`](Self::write) through an `Arc`.
        blocking arc write_arc() -> ArcRwLockWriteGuard<R, T>
            = Mode::Exclusive, |r| r.lock_exclusive(), |r| r.try_lock_exclusive();
        /// [`try_read`](Self::try_read) through an `Arc`.
        try arc try_read_arc() -> ArcRwLockReadGuard<R, T> = Mode::Read, |r| r.try_lock_shared();
        /// [`try_write`](Self::try_write) through an `Arc`.
        try arc try_write_arc() -> ArcRwLockWriteGuard<R, T>
            = Mode::Exclusive, |r| r.try_lock_exclusive();
    }

    /// Shared access as subclass `subclass` (the kernel's `down_read_nested()`).
    #[inline]
    #[track_caller]
    pub fn read_nested(&self, subclass: u8) -> RwLockReadGuard<'_, R, T> {
        RwLockReadGuard::new(
            self,
            self.blocking_track(
                Mode::Read,
                subclass,
                None,
                R::try_lock_shared,
                R::lock_shared,
            ),
        )
    }

    /// Exclusive access as subclass `subclass` (the kernel's `down_write_nested()`).
    #[inline]
    #[track_caller]
    pub fn write_nested(&self, subclass: u8) -> RwLockWriteGuard<'_, R, T> {
        let track = self.blocking_track(
            Mode::Exclusive,
            subclass,
            None,
            R::try_lock_exclusive,
            R::lock_exclusive,
        );
        RwLockWriteGuard::new(self, track)
    }

    /// Exclusive access under the held `outer` lock that serializes this class's nesting
    /// (the kernel's `down_write_nest_lock()`).
    #[inline]
    #[track_caller]
    pub fn write_nest_lock<'a>(&'a self, outer: &'a impl HeldGuard) -> RwLockWriteGuard<'a, R, T> {
        let nest = outer.lock_map();
        let track = self.blocking_track(
            Mode::Exclusive,
            0,
            nest,
            R::try_lock_exclusive,
            R::lock_exclusive,
        );
        RwLockWriteGuard::new(self, track)
    }

    /// Makes a read guard for a shared holding the caller has without a guard (lock_api's
    /// `make_read_guard_unchecked`); it takes over this thread's held-lock entry of the lock
    /// if there is one.
    ///
    /// # Safety
    ///
    /// The calling thread must hold the lock shared, and no other guard may own that holding.
    #[inline]
    pub unsafe fn make_read_guard_unchecked(&self) -> RwLockReadGuard<'_, R, T> {
        RwLockReadGuard::new(self, self.dep.adopt(Mode::Read))
    }

    /// Makes a write guard for an exclusive holding without a guard; see
    /// [`make_read_guard_unchecked`](Self::make_read_guard_unchecked).
    ///
    /// # Safety
    ///
    /// The calling thread must hold the lock exclusively, and no other guard may own that.
    #[inline]
    pub unsafe fn make_write_guard_unchecked(&self) -> RwLockWriteGuard<'_, R, T> {
        RwLockWriteGuard::new(self, self.dep.adopt(Mode::Exclusive))
    }

    /// [`make_read_guard_unchecked`](Self::make_read_guard_unchecked) through an `Arc`.
    ///
    /// # Safety
    ///
    /// As for `make_read_guard_unchecked`.
    #[cfg(feature = "arc_lock")]
    #[inline]
    pub unsafe fn make_arc_read_guard_unchecked(
        self: &std::sync::Arc<Self>,
    ) -> ArcRwLockReadGuard<R, T> {
        ArcRwLockReadGuard::new(std::sync::Arc::clone(self), self.dep.adopt(Mode::Read))
    }

    /// [`make_write_guard_unchecked`](Self::make_write_guard_unchecked) through an `Arc`.
    ///
    /// # Safety
    ///
    /// As for `make_write_guard_unchecked`.
    #[cfg(feature = "arc_lock")]
    #[inline]
    pub unsafe fn make_arc_write_guard_unchecked(
        self: &std::sync::Arc<Self>,
    ) -> ArcRwLockWriteGuard<R, T> {
        ArcRwLockWriteGuard::new(std::sync::Arc::clone(self), self.dep.adopt(Mode::Exclusive))
    }

    /// Whether a writer holds the lock (a snapshot).
    #[inline]
    pub fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }

    super::force_unlocks! {
        /// Releases a shared holding without a guard (after `mem::forget` of one), and this
        /// thread's held-lock entry of the lock, if it has one.
        @read force_unlock_read;
        /// Releases an exclusive holding without a guard; see
        /// [`force_unlock_read`](Self::force_unlock_read).
        force_unlock_write;
    }

    /// Reports unless the calling thread holds the lock as a writer
    /// (`lockdep_assert_held_write()`).
    #[track_caller]
    pub fn assert_held_write(&self) {
        self.dep.assert_held_mode(Mode::Exclusive);
    }

    /// Reports unless the calling thread holds the lock as a reader (any read mode;
    /// `lockdep_assert_held_read()`).
    #[track_caller]
    pub fn assert_held_read(&self) {
        self.dep.assert_held_mode(Mode::Read);
    }
}

impl<R: RawRwLockFair, T: ?Sized> RwLock<R, T> {
    super::force_unlocks! {
        /// [`force_unlock_read`](Self::force_unlock_read) with a fair unlock.
        @read force_unlock_read_fair;
        /// [`force_unlock_write`](Self::force_unlock_write) with a fair unlock.
        force_unlock_write_fair;
    }
}

impl<R: RawRwLockTimed, T: ?Sized> RwLock<R, T> {
    acquisitions! {
        /// [`read`](Self::read) that gives up after `timeout` (validated before it waits; a
        /// timeout is recorded as a release).
        timed plain try_read_for(timeout: R::Duration) -> RwLockReadGuard<'_, R, T>
            = Mode::Read, |r| r.try_lock_shared_for(timeout);
        /// [`read`](Self::read) that gives up at the instant `timeout`.
        timed plain try_read_until(timeout: R::Instant) -> RwLockReadGuard<'_, R, T>
            = Mode::Read, |r| r.try_lock_shared_until(timeout);
        /// [`write`](Self::write) that gives up after `timeout`.
        timed plain try_write_for(timeout: R::Duration) -> RwLockWriteGuard<'_, R, T>
            = Mode::Exclusive, |r| r.try_lock_exclusive_for(timeout);
        /// [`write`](Self::write) that gives up at the instant `timeout`.
        timed plain try_write_until(timeout: R::Instant) -> RwLockWriteGuard<'_, R, T>
            = Mode::Exclusive, |r| r.try_lock_exclusive_until(timeout);
        /// [`try_read_for`](Self::try_read_for) through an `Arc`.
        timed arc try_read_arc_for(timeout: R::Duration) -> ArcRwLockReadGuard<R, T>
            = Mode::Read, |r| r.try_lock_shared_for(timeout);
        /// [`try_read_until`](Self::try_read_until) through an `Arc`.
        timed arc try_read_arc_until(timeout: R::Instant) -> ArcRwLockReadGuard<R, T>
            = Mode::Read, |r| r.try_lock_shared_until(timeout);
        /// [`try_write_for`](Self::try_write_for) through an `Arc`.
        timed arc try_write_arc_for(timeout: R::Duration) -> ArcRwLockWriteGuard<R, T>
            = Mode::Exclusive, |r| r.try_lock_exclusive_for(timeout);
        /// [`try_write_until`](Self::try_write_until) through an `Arc`.
        timed arc try_write_arc_until(timeout: R::Instant) -> ArcRwLockWriteGuard<R, T>
            = Mode::Exclusive, |r| r.try_lock_exclusive_until(timeout);
    }
}

impl<R: RawRwLockRecursive, T: ?Sized> RwLock<R, T> {
    acquisitions! {
        /// Shared access that blocks only behind a writer holding the lock (lockdep
        /// `RecursiveRead`): a thread that already reads may take it again.
        blocking plain read_recursive() -> RwLockReadGuard<'_, R, T>
            = Mode::RecursiveRead, |r| r.lock_shared_recursive(), |r| r.try_lock_shared_recursive();
        /// Non-blocking [`read_recursive`](Self::read_recursive).
        try plain try_read_recursive() -> RwLockReadGuard<'_, R, T>
            = Mode::RecursiveRead, |r| r.try_lock_shared_recursive();
        /// [`read_recursive`](Self::read_recursive) through an `Arc`.
        blocking arc read_arc_recursive() -> ArcRwLockReadGuard<R, T>
            = Mode::RecursiveRead, |r| r.lock_shared_recursive(), |r| r.try_lock_shared_recursive();
        /// [`try_read_recursive`](Self::try_read_recursive) through an `Arc`.
        try arc try_read_recursive_arc() -> ArcRwLockReadGuard<R, T>
            = Mode::RecursiveRead, |r| r.try_lock_shared_recursive();
    }
}

impl<R: RawRwLockRecursiveTimed, T: ?Sized> RwLock<R, T> {
    acquisitions! {
        /// [`read_recursive`](Self::read_recursive) that gives up after `timeout`.
        timed plain try_read_recursive_for(timeout: R::Duration) -> RwLockReadGuard<'_, R, T>
            = Mode::RecursiveRead, |r| r.try_lock_shared_recursive_for(timeout);
        /// [`read_recursive`](Self::read_recursive) that gives up at the instant `timeout`.
        timed plain try_read_recursive_until(timeout: R::Instant) -> RwLockReadGuard<'_, R, T>
            = Mode::RecursiveRead, |r| r.try_lock_shared_recursive_until(timeout);
        /// [`try_read_recursive_for`](Self::try_read_recursive_for) through an `Arc`.
        timed arc try_read_arc_recursive_for(timeout: R::Duration) -> ArcRwLockReadGuard<R, T>
            = Mode::RecursiveRead, |r| r.try_lock_shared_recursive_for(timeout);
        /// [`try_read_recursive_until`](Self::try_read_recursive_until) through an `Arc`.
        timed arc try_read_arc_recursive_until(timeout: R::Instant) -> ArcRwLockReadGuard<R, T>
            = Mode::RecursiveRead, |r| r.try_lock_shared_recursive_until(timeout);
    }
}

impl<R: RawRwLockUpgrade, T: ?Sized> RwLock<R, T> {
    acquisitions! {
        /// Upgradable shared access (lockdep `Upgradable`, see the type's docs), validated before
        /// it can block.
        blocking plain upgradable_read() -> RwLockUpgradableReadGuard<'_, R, T>
            = UPGRADABLE, |r| r.lock_upgradable(), |r| r.try_lock_upgradable();
        /// Non-blocking [`upgradable_read`](Self::upgradable_read).
        try plain try_upgradable_read() -> RwLockUpgradableReadGuard<'_, R, T>
            = UPGRADABLE, |r| r.try_lock_upgradable();
        /// [`upgradable_read`](Self::upgradable_read) through an `Arc`.
        blocking arc upgradable_read_arc() -> ArcRwLockUpgradableReadGuard<R, T>
            = UPGRADABLE, |r| r.lock_upgradable(), |r| r.try_lock_upgradable();
        /// [`try_upgradable_read`](Self::try_upgradable_read) through an `Arc`.
        try arc try_upgradable_read_arc() -> ArcRwLockUpgradableReadGuard<R, T>
            = UPGRADABLE, |r| r.try_lock_upgradable();
    }

    /// Makes an upgradable guard for an upgradable holding without a guard; see
    /// [`make_read_guard_unchecked`](Self::make_read_guard_unchecked).
    ///
    /// # Safety
    ///
    /// The calling thread must hold the lock upgradable, and no other guard may own that.
    #[inline]
    pub unsafe fn make_upgradable_guard_unchecked(&self) -> RwLockUpgradableReadGuard<'_, R, T> {
        RwLockUpgradableReadGuard::new(self, self.dep.adopt(UPGRADABLE))
    }

    /// [`make_upgradable_guard_unchecked`](Self::make_upgradable_guard_unchecked) through an
    /// `Arc`.
    ///
    /// # Safety
    ///
    /// As for `make_upgradable_guard_unchecked`.
    #[cfg(feature = "arc_lock")]
    #[inline]
    pub unsafe fn make_upgradable_arc_guard_unchecked(
        self: &std::sync::Arc<Self>,
    ) -> ArcRwLockUpgradableReadGuard<R, T> {
        ArcRwLockUpgradableReadGuard::new(std::sync::Arc::clone(self), self.dep.adopt(UPGRADABLE))
    }
}

impl<R: RawRwLockUpgradeTimed, T: ?Sized> RwLock<R, T> {
    acquisitions! {
        /// [`upgradable_read`](Self::upgradable_read) that gives up after `timeout`.
        timed plain try_upgradable_read_for(timeout: R::Duration)
            -> RwLockUpgradableReadGuard<'_, R, T>
            = UPGRADABLE, |r| r.try_lock_upgradable_for(timeout);
        /// [`upgradable_read`](Self::upgradable_read) that gives up at the instant `timeout`.
        timed plain try_upgradable_read_until(timeout: R::Instant)
            -> RwLockUpgradableReadGuard<'_, R, T>
            = UPGRADABLE, |r| r.try_lock_upgradable_until(timeout);
        /// [`try_upgradable_read_for`](Self::try_upgradable_read_for) through an `Arc`.
        timed arc try_upgradable_read_arc_for(timeout: R::Duration)
            -> ArcRwLockUpgradableReadGuard<R, T>
            = UPGRADABLE, |r| r.try_lock_upgradable_for(timeout);
        /// [`try_upgradable_read_until`](Self::try_upgradable_read_until) through an `Arc`.
        timed arc try_upgradable_read_arc_until(timeout: R::Instant)
            -> ArcRwLockUpgradableReadGuard<R, T>
            = UPGRADABLE, |r| r.try_lock_upgradable_until(timeout);
    }
}
