//! The guards of [`RwLock`]: read, write and upgradable, each borrowing the lock or (feature
//! `arc_lock`) owning an `Arc` of it, and the mapped read and write guards.
//!
//! Every guard tells lockdep about a release before the real unlock, is `!Send` unless the
//! crate's `send_guard` feature is on, and is one word (the lock's address, its track in the low
//! bits: see `dep::TrackedRef`) except the `Arc` guards (the `Arc`, the track) and the mapped
//! ones (lock_api's mapped guard, the lock map, the track).

use lock_api::{
    RawRwLock, RawRwLockDowngrade, RawRwLockFair, RawRwLockUpgrade, RawRwLockUpgradeDowngrade,
    RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};
use lockdep::Mode;

use super::{block, guard_core, here, mapped_guard, projections, Defer, RwLock};
use crate::dep::{DepRef, GuardMarker, Held, UPGRADABLE};

guard_core! {
    RwLock<R, T>: impl[R: RawRwLock, T: ?Sized] fair[R: RawRwLockFair, T: ?Sized];
    /// Shared access to an [`RwLock`] (from `read`, `read_recursive`, a downgrade, ...).
    #[must_use = "if unused the RwLock will immediately unlock"]
    plain RwLockReadGuard, rwlock, marker (&'a T, GuardMarker, R::GuardMarker);
    /// A read guard through an `Arc` ([`RwLock::read_arc`]): no lifetime.
    #[must_use = "if unused the RwLock will immediately unlock"]
    arc ArcRwLockReadGuard, marker (GuardMarker, R::GuardMarker);
    release: |lock, track, site| {
        track.release_shared(&lock.dep, site);
        // SAFETY: the guard held the lock shared, and is gone.
        unsafe { lock.raw_rwlock().unlock_shared() }
    };
    release_fair: |lock, track, site| {
        track.release_shared(&lock.dep, site);
        // SAFETY: as for `release`.
        unsafe { lock.raw_rwlock().unlock_shared_fair() }
    };
    relock: |lock| lock.raw_rwlock().lock_shared();
    // SAFETY: the guard holds the lock shared; the raw bump returns with it held again.
    bump: |lock| unsafe { lock.raw_rwlock().bump_shared() };
}

guard_core! {
    RwLock<R, T>: impl[R: RawRwLock, T: ?Sized] fair[R: RawRwLockFair, T: ?Sized];
    /// Exclusive access to an [`RwLock`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    plain RwLockWriteGuard, rwlock, marker (&'a mut T, GuardMarker, R::GuardMarker);
    /// A write guard through an `Arc` ([`RwLock::write_arc`]): no lifetime.
    #[must_use = "if unused the RwLock will immediately unlock"]
    arc ArcRwLockWriteGuard, marker (GuardMarker, R::GuardMarker);
    release: |lock, track, site| {
        track.release_exclusive(&lock.dep, site);
        // SAFETY: the guard held the lock exclusively, and is gone.
        unsafe { lock.raw_rwlock().unlock_exclusive() }
    };
    release_fair: |lock, track, site| {
        track.release_exclusive(&lock.dep, site);
        // SAFETY: as for `release`.
        unsafe { lock.raw_rwlock().unlock_exclusive_fair() }
    };
    relock: |lock| lock.raw_rwlock().lock_exclusive();
    // SAFETY: the guard holds the lock exclusively; the bump returns with it held again.
    bump: |lock| unsafe { lock.raw_rwlock().bump_exclusive() };
}

guard_core! {
    RwLock<R, T>: impl[R: RawRwLockUpgrade, T: ?Sized] fair[R: RawRwLockUpgradeFair, T: ?Sized];
    /// Upgradable shared access to an [`RwLock`] (lockdep `Upgradable`; see [`RwLock`]).
    #[must_use = "if unused the RwLock will immediately unlock"]
    plain RwLockUpgradableReadGuard, rwlock, marker (&'a T, GuardMarker, R::GuardMarker);
    /// An upgradable read guard through an `Arc` ([`RwLock::upgradable_read_arc`]).
    #[must_use = "if unused the RwLock will immediately unlock"]
    arc ArcRwLockUpgradableReadGuard, marker (GuardMarker, R::GuardMarker);
    release: |lock, track, site| {
        track.release_upgradable(&lock.dep, site);
        // SAFETY: the guard held the lock upgradable, and is gone.
        unsafe { lock.raw_rwlock().unlock_upgradable() }
    };
    release_fair: |lock, track, site| {
        track.release_upgradable(&lock.dep, site);
        // SAFETY: as for `release`.
        unsafe { lock.raw_rwlock().unlock_upgradable_fair() }
    };
    relock: |lock| lock.raw_rwlock().lock_upgradable();
    // SAFETY: the guard holds the lock upgradable; the bump returns with it held again.
    bump: |lock| unsafe { lock.raw_rwlock().bump_upgradable() };
}

// SAFETY: sharing `&Guard` shares only `&T` and `&R` (as lock_api's guards).
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for RwLockReadGuard<'_, R, T> {}
// SAFETY: as above.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, R, T> {}
// SAFETY: as above; lock_api asks only `T: Sync` of an upgradable guard.
unsafe impl<R: RawRwLockUpgrade, T: ?Sized + Sync> Sync for RwLockUpgradableReadGuard<'_, R, T> {}

super::guard_mut! {
    impl['a, R: RawRwLock, T: ?Sized] RwLockWriteGuard<'a, R, T>;
    data: |s| s.lock.data_ptr();
}
#[cfg(feature = "arc_lock")]
super::guard_mut! {
    impl[R: RawRwLock, T: ?Sized] ArcRwLockWriteGuard<R, T>;
    data: |s| s.lock.data_ptr();
}
super::guard_stable!(impl['a, R: RawRwLock, T: ?Sized] RwLockReadGuard<'a, R, T>;);
super::guard_stable!(impl['a, R: RawRwLock, T: ?Sized] RwLockWriteGuard<'a, R, T>;);
super::guard_stable!(impl['a, R: RawRwLockUpgrade, T: ?Sized] RwLockUpgradableReadGuard<'a, R, T>;);

/// A plain read or write guard's projections onto a mapped guard `$Mapped` (through
/// lock_api's guard `$Api`, made by `$make`).
macro_rules! plain_guard {
    ($Guard:ident: $Raw:ident => $Mapped:ident, $Api:ident, $make:ident, [$($mut:tt)?], $or_err:ident) => {
        impl<'a, R: $Raw, T: ?Sized> $Guard<'a, R, T> {
            /// Splits the guard for a projection into the lock, lockdep's release (a
            /// [`Held`]) and the raw release (a lock_api guard).
            #[inline]
            fn split(s: Self) -> (&'a RwLock<R, T>, Held<'a>, lock_api::$Api<'a, R, T>) {
                let (lock, track) = $Guard::take(s);
                let held = Held::new(DepRef::from(&lock.dep), track);
                // SAFETY: the guard held the lock in this mode; the lock_api guard owns that
                // holding now.
                (lock, held, unsafe { lock.inner.$make() })
            }

            /// The inverse of [`split`](Self::split), for a projection that declined.
            #[inline]
            fn join(lock: &'a RwLock<R, T>, held: Held<'a>, raw: lock_api::$Api<'a, R, T>) -> Self {
                std::mem::forget(raw);
                $Guard::new(lock, held.into_track())
            }

            projections!($Mapped<R>, $Api, [$($mut)?], $or_err);
        }
    };
}

plain_guard!(RwLockReadGuard: RawRwLock
    => MappedRwLockReadGuard, RwLockReadGuard, make_read_guard_unchecked, [], try_map_or_err);
plain_guard!(RwLockWriteGuard: RawRwLock
    => MappedRwLockWriteGuard, RwLockWriteGuard, make_write_guard_unchecked, [mut], try_map_or_err);

/// A write guard's downgrades, to the read guard `$Read` and the upgradable guard `$Upg` of
/// the same flavour (plain or `Arc`). The raw downgrade happens first; the new guard then
/// owns the lock when lockdep changes the entry's mode in place (a downgrade cannot wait).
macro_rules! write_ops {
    ($Guard:ident [$($lt:lifetime)?] => $Read:ident, $Upg:ident) => {
        impl<$($lt,)? R: RawRwLockDowngrade, T: ?Sized> $Guard<$($lt,)? R, T> {
            /// Atomically turns the write lock into a read lock (lockdep: the entry becomes
            /// `Read` in place, the kernel's `lock_downgrade()`).
            #[inline]
            pub fn downgrade(s: Self) -> $Read<$($lt,)? R, T> {
                // SAFETY: the guard holds the lock exclusively; the read guard owns the
                // shared holding the downgrade leaves.
                unsafe { s.lock.raw_rwlock().downgrade() };
                let (lock, track) = $Guard::take(s);
                let mut read = $Read::new(lock, track);
                read.lock.with_track(|track, lock| track.set_mode(&lock.dep, Mode::Read));
                read
            }
        }

        impl<$($lt,)? R: RawRwLockUpgradeDowngrade, T: ?Sized> $Guard<$($lt,)? R, T> {
            /// Atomically turns the write lock into an upgradable read lock.
            #[inline]
            pub fn downgrade_to_upgradable(s: Self) -> $Upg<$($lt,)? R, T> {
                // SAFETY: as in `downgrade`, for the upgradable holding.
                unsafe { s.lock.raw_rwlock().downgrade_to_upgradable() };
                let (lock, track) = $Guard::take(s);
                let mut upgradable = $Upg::new(lock, track);
                upgradable.lock.with_track(|track, lock| track.set_mode(&lock.dep, UPGRADABLE));
                upgradable
            }
        }
    };
}

write_ops!(RwLockWriteGuard ['a] => RwLockReadGuard, RwLockUpgradableReadGuard);
#[cfg(feature = "arc_lock")]
write_ops!(ArcRwLockWriteGuard [] => ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard);

/// An upgradable guard's upgrades and downgrade, to the write guard `$Write` and the read
/// guard `$Read` of the same flavour. A blocking upgrade is validated (`Track::upgrade`)
/// while the upgradable guard still owns the lock, before it can block, then tried, and only
/// if that fails its wait is announced (`generic::block`, as for a blocking lock); a timed one that
/// gives up is the upgradable read again.
macro_rules! upgradable_ops {
    ($Guard:ident [$($lt:lifetime)?] => $Write:ident, $Read:ident) => {
        impl<$($lt,)? R: RawRwLockUpgrade, T: ?Sized> $Guard<$($lt,)? R, T> {
            /// Upgrades to a write lock, waiting for the readers to leave. Validated as a
            /// blocking exclusive acquisition before it waits.
            #[inline]
            #[track_caller]
            pub fn upgrade(mut s: Self) -> $Write<$($lt,)? R, T> {
                let site = here();
                s.lock.with_track(|track, lock| track.upgrade(&lock.dep, site));
                let raw = s.lock.raw_rwlock();
                // The wait, if the try fails, is announced like a blocking lock's (`block`).
                block(
                    &s.lock.dep,
                    s.lock.track(),
                    site,
                    // SAFETY: the guard holds the lock upgradable.
                    || unsafe { raw.try_upgrade() },
                    // SAFETY: as for the try; the write guard owns the exclusive holding the
                    // upgrade gives.
                    || unsafe { raw.upgrade() },
                );
                let (lock, track) = $Guard::take(s);
                $Write::new(lock, track)
            }

            /// Upgrades without waiting; on failure the upgradable guard comes back.
            #[inline]
            pub fn try_upgrade(s: Self) -> Result<$Write<$($lt,)? R, T>, Self> {
                // SAFETY: the guard holds the lock upgradable.
                if !unsafe { s.lock.raw_rwlock().try_upgrade() } {
                    return Err(s);
                }
                let (lock, track) = $Guard::take(s);
                let mut write = $Write::new(lock, track);
                write.lock.with_track(|track, lock| track.set_mode(&lock.dep, Mode::Exclusive));
                Ok(write)
            }
        }

        impl<$($lt,)? R: RawRwLockUpgradeDowngrade, T: ?Sized> $Guard<$($lt,)? R, T> {
            /// Turns the upgradable read into a plain read lock (cannot wait).
            #[inline]
            pub fn downgrade(s: Self) -> $Read<$($lt,)? R, T> {
                // SAFETY: the guard holds the lock upgradable; the read guard owns the shared
                // holding the downgrade leaves.
                unsafe { s.lock.raw_rwlock().downgrade_upgradable() };
                let (lock, track) = $Guard::take(s);
                let mut read = $Read::new(lock, track);
                read.lock.with_track(|track, lock| track.set_mode(&lock.dep, Mode::Read));
                read
            }

            /// Upgrades to a write lock (validated before it blocks, like
            /// [`upgrade`](Self::upgrade)), runs `f` on the data, and downgrades back to an
            /// upgradable read, also if `f` panics.
            #[inline]
            #[track_caller]
            pub fn with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Ret {
                let site = here();
                self.lock.with_track(|track, lock| track.upgrade(&lock.dep, site));
                let raw = self.lock.raw_rwlock();
                // The wait is announced as in `upgrade`.
                block(
                    &self.lock.dep,
                    self.lock.track(),
                    site,
                    // SAFETY: the guard holds the lock upgradable.
                    || unsafe { raw.try_upgrade() },
                    // SAFETY: as for the try.
                    || unsafe { raw.upgrade() },
                );
                self.upgraded(f)
            }

            /// [`with_upgraded`](Self::with_upgraded) without waiting: `None`, and no change,
            /// if the lock cannot be upgraded now.
            #[inline]
            pub fn try_with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Option<Ret> {
                // SAFETY: the guard holds the lock upgradable.
                if !unsafe { self.lock.raw_rwlock().try_upgrade() } {
                    return None;
                }
                // Cannot report: the entry is held (a mode change reports only a lock that is
                // not), so nothing can unwind between the raw upgrade and the downgrade guard.
                self.lock.with_track(|track, lock| track.set_mode(&lock.dep, Mode::Exclusive));
                Some(self.upgraded(f))
            }

            /// Runs `f` on the upgraded lock, then downgrades it (raw, then lockdep's mode).
            #[inline]
            fn upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Ret {
                self.lock.with_track(|track, lock| {
                    let _downgrade = Defer::new(|| {
                        // SAFETY: the lock is held exclusively by this guard's thread
                        // (upgraded).
                        unsafe { lock.raw_rwlock().downgrade_to_upgradable() };
                        track.set_mode(&lock.dep, UPGRADABLE);
                    });
                    // SAFETY: the lock is held exclusively until `_downgrade` runs.
                    f(unsafe { &mut *lock.data_ptr() })
                })
            }
        }

        impl<$($lt,)? R: RawRwLockUpgradeTimed, T: ?Sized> $Guard<$($lt,)? R, T> {
            /// Upgrades, waiting at most `timeout` (validated like [`upgrade`](Self::upgrade));
            /// on a timeout the upgradable guard comes back, as the upgradable read it is.
            #[inline]
            #[track_caller]
            pub fn try_upgrade_for(
                s: Self,
                timeout: R::Duration,
            ) -> Result<$Write<$($lt,)? R, T>, Self> {
                // SAFETY: the guard holds the lock upgradable.
                Self::timed_upgrade(s, |r| unsafe { r.try_upgrade_for(timeout) })
            }

            /// Upgrades, waiting at most until the instant `timeout`.
            #[inline]
            #[track_caller]
            pub fn try_upgrade_until(
                s: Self,
                timeout: R::Instant,
            ) -> Result<$Write<$($lt,)? R, T>, Self> {
                // SAFETY: the guard holds the lock upgradable.
                Self::timed_upgrade(s, |r| unsafe { r.try_upgrade_until(timeout) })
            }

            #[inline]
            #[track_caller]
            fn timed_upgrade(
                mut s: Self,
                upgrade: impl FnOnce(&R) -> bool,
            ) -> Result<$Write<$($lt,)? R, T>, Self> {
                let site = here();
                let undo = s.lock.with_track(|track, lock| track.upgrade_timed(&lock.dep, site));
                if upgrade(s.lock.raw_rwlock()) {
                    let (lock, track) = $Guard::take(s);
                    Ok($Write::new(lock, track))
                } else {
                    s.lock.with_track(|track, lock| track.upgrade_failed(&lock.dep, undo));
                    Err(s)
                }
            }
        }

        impl<$($lt,)? R: RawRwLockUpgradeTimed + RawRwLockUpgradeDowngrade, T: ?Sized>
            $Guard<$($lt,)? R, T>
        {
            /// [`with_upgraded`](Self::with_upgraded) waiting at most `timeout` for the
            /// upgrade; `None` on a timeout.
            #[inline]
            #[track_caller]
            pub fn try_with_upgraded_for<Ret, F: FnOnce(&mut T) -> Ret>(
                &mut self,
                timeout: R::Duration,
                f: F,
            ) -> Option<Ret> {
                // SAFETY: the guard holds the lock upgradable.
                self.timed_with_upgraded(|r| unsafe { r.try_upgrade_for(timeout) }, f)
            }

            /// [`with_upgraded`](Self::with_upgraded) waiting at most until the instant
            /// `timeout`; `None` on a timeout.
            #[inline]
            #[track_caller]
            pub fn try_with_upgraded_until<Ret, F: FnOnce(&mut T) -> Ret>(
                &mut self,
                timeout: R::Instant,
                f: F,
            ) -> Option<Ret> {
                // SAFETY: the guard holds the lock upgradable.
                self.timed_with_upgraded(|r| unsafe { r.try_upgrade_until(timeout) }, f)
            }

            #[inline]
            #[track_caller]
            fn timed_with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(
                &mut self,
                upgrade: impl FnOnce(&R) -> bool,
                f: F,
            ) -> Option<Ret> {
                let site = here();
                let undo = self.lock.with_track(|track, lock| track.upgrade_timed(&lock.dep, site));
                if upgrade(self.lock.raw_rwlock()) {
                    Some(self.upgraded(f))
                } else {
                    self.lock.with_track(|track, lock| track.upgrade_failed(&lock.dep, undo));
                    None
                }
            }
        }
    };
}

upgradable_ops!(RwLockUpgradableReadGuard ['a] => RwLockWriteGuard, RwLockReadGuard);
#[cfg(feature = "arc_lock")]
upgradable_ops!(ArcRwLockUpgradableReadGuard [] => ArcRwLockWriteGuard, ArcRwLockReadGuard);

mapped_guard! {
    /// A read guard projected by [`RwLockReadGuard::map`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    MappedRwLockReadGuard<R: RawRwLock>, MappedRwLockReadGuard, fair<R: RawRwLockFair>, []
}

mapped_guard! {
    /// A write guard projected by [`RwLockWriteGuard::map`].
    #[must_use = "if unused the RwLock will immediately unlock"]
    MappedRwLockWriteGuard<R: RawRwLock>, MappedRwLockWriteGuard, fair<R: RawRwLockFair>, [mut]
}

impl<'a, R: RawRwLock, T: ?Sized> MappedRwLockReadGuard<'a, R, T> {
    projections!(
        MappedRwLockReadGuard<R>,
        MappedRwLockReadGuard,
        [],
        try_map_or_else
    );

    /// The same as [`try_map_or_else`](Self::try_map_or_else), under lock_api 0.5's name
    /// (parking_lot 0.13 renamed it; the other guards have always used this one).
    #[inline]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockReadGuard<'a, R, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        Self::try_map_or_else(s, f)
    }
}

impl<'a, R: RawRwLock, T: ?Sized> MappedRwLockWriteGuard<'a, R, T> {
    projections!(MappedRwLockWriteGuard<R>, MappedRwLockWriteGuard, [mut], try_map_or_err);
}
