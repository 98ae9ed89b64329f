//! The guards of [`RwLock`](crate::RwLock). All are `!Send` (a held lock belongs to the
//! thread that took it) and tell lockdep about the release before the real unlock.

use std::panic::Location;
use std::time::{Duration, Instant};

use lockdep::Mode;

use crate::dep::Track;
use crate::guard_impls::guard_impls;

/// Shared access to an [`RwLock`](crate::RwLock) (from `read`, `read_recursive`, a
/// downgrade, ...).
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    pub(crate) track: Track<'a>,
    pub(crate) inner: parking_lot::RwLockReadGuard<'a, T>,
}

/// Exclusive access to an [`RwLock`](crate::RwLock).
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    pub(crate) track: Track<'a>,
    pub(crate) inner: parking_lot::RwLockWriteGuard<'a, T>,
}

/// Upgradable shared access to an [`RwLock`](crate::RwLock) (lockdep `Read`).
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockUpgradableReadGuard<'a, T: ?Sized> {
    pub(crate) track: Track<'a>,
    pub(crate) inner: parking_lot::RwLockUpgradableReadGuard<'a, T>,
}

/// A read guard projected by [`RwLockReadGuard::map`].
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct MappedRwLockReadGuard<'a, T: ?Sized> {
    track: Track<'a>,
    inner: parking_lot::MappedRwLockReadGuard<'a, T>,
}

/// A write guard projected by [`RwLockWriteGuard::map`].
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct MappedRwLockWriteGuard<'a, T: ?Sized> {
    track: Track<'a>,
    inner: parking_lot::MappedRwLockWriteGuard<'a, T>,
}

guard_impls!(RwLockReadGuard);
guard_impls!(RwLockWriteGuard, mut);
guard_impls!(RwLockUpgradableReadGuard);
guard_impls!(MappedRwLockReadGuard);
guard_impls!(MappedRwLockWriteGuard, mut);

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// Projects onto part of the data; the lock stays held (and tracked).
    pub fn map<U: ?Sized, F: FnOnce(&T) -> &U>(s: Self, f: F) -> MappedRwLockReadGuard<'a, U> {
        let RwLockReadGuard { track, inner } = s;
        MappedRwLockReadGuard {
            track,
            inner: parking_lot::RwLockReadGuard::map(inner, f),
        }
    }

    /// Like [`map`](Self::map), but `f` may decline; then the original guard comes back.
    pub fn try_map<U: ?Sized, F: FnOnce(&T) -> Option<&U>>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockReadGuard<'a, U>, Self> {
        let RwLockReadGuard { track, inner } = s;
        match parking_lot::RwLockReadGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedRwLockReadGuard { track, inner }),
            Err(inner) => Err(RwLockReadGuard { track, inner }),
        }
    }

    /// Unlocks, runs `f`, and locks again in the same mode (validated before blocking).
    #[track_caller]
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        let site = Location::caller();
        let was = s.track.release(site);
        let track = &mut s.track;
        parking_lot::RwLockReadGuard::unlocked(&mut s.inner, || {
            let r = f();
            track.restore(was, site);
            r
        })
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Projects onto part of the data; the lock stays held (and tracked).
    pub fn map<U: ?Sized, F: FnOnce(&mut T) -> &mut U>(
        s: Self,
        f: F,
    ) -> MappedRwLockWriteGuard<'a, U> {
        let RwLockWriteGuard { track, inner } = s;
        MappedRwLockWriteGuard {
            track,
            inner: parking_lot::RwLockWriteGuard::map(inner, f),
        }
    }

    /// Like [`map`](Self::map), but `f` may decline; then the original guard comes back.
    pub fn try_map<U: ?Sized, F: FnOnce(&mut T) -> Option<&mut U>>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockWriteGuard<'a, U>, Self> {
        let RwLockWriteGuard { track, inner } = s;
        match parking_lot::RwLockWriteGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedRwLockWriteGuard { track, inner }),
            Err(inner) => Err(RwLockWriteGuard { track, inner }),
        }
    }

    /// Atomically turns the write lock into a read lock (lockdep: the held entry becomes
    /// `Read` in place, as the kernel's `lock_downgrade()`; a downgrade cannot wait).
    #[track_caller]
    pub fn downgrade(s: Self) -> RwLockReadGuard<'a, T> {
        let RwLockWriteGuard { mut track, inner } = s;
        track.set_mode(Mode::Read);
        RwLockReadGuard {
            track,
            inner: parking_lot::RwLockWriteGuard::downgrade(inner),
        }
    }

    /// Atomically turns the write lock into an upgradable read lock.
    #[track_caller]
    pub fn downgrade_to_upgradable(s: Self) -> RwLockUpgradableReadGuard<'a, T> {
        let RwLockWriteGuard { mut track, inner } = s;
        track.set_mode(Mode::Upgradable);
        RwLockUpgradableReadGuard {
            track,
            inner: parking_lot::RwLockWriteGuard::downgrade_to_upgradable(inner),
        }
    }

    /// Unlocks, runs `f`, and locks again for writing (validated before blocking).
    #[track_caller]
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        let site = Location::caller();
        let was = s.track.release(site);
        let track = &mut s.track;
        parking_lot::RwLockWriteGuard::unlocked(&mut s.inner, || {
            let r = f();
            track.restore(was, site);
            r
        })
    }
}

impl<'a, T: ?Sized> RwLockUpgradableReadGuard<'a, T> {
    /// Upgrades to a write lock, waiting for readers to leave. Validated as a blocking
    /// `Exclusive` acquire (under the other held locks) before it waits.
    #[track_caller]
    pub fn upgrade(s: Self) -> RwLockWriteGuard<'a, T> {
        let RwLockUpgradableReadGuard { mut track, inner } = s;
        track.upgrade(Location::caller());
        RwLockWriteGuard {
            track,
            inner: parking_lot::RwLockUpgradableReadGuard::upgrade(inner),
        }
    }

    /// Upgrades without waiting; on failure the upgradable guard comes back unchanged.
    #[track_caller]
    pub fn try_upgrade(s: Self) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let RwLockUpgradableReadGuard { mut track, inner } = s;
        match parking_lot::RwLockUpgradableReadGuard::try_upgrade(inner) {
            Ok(inner) => {
                track.set_mode(Mode::Exclusive);
                Ok(RwLockWriteGuard { track, inner })
            }
            Err(inner) => Err(RwLockUpgradableReadGuard { track, inner }),
        }
    }

    /// Upgrades, waiting at most `timeout` (validated like [`upgrade`](Self::upgrade); on
    /// timeout the lock is recorded as the upgradable read it still is).
    #[track_caller]
    pub fn try_upgrade_for(s: Self, timeout: Duration) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let site = Location::caller();
        let RwLockUpgradableReadGuard { mut track, inner } = s;
        track.upgrade(site);
        match parking_lot::RwLockUpgradableReadGuard::try_upgrade_for(inner, timeout) {
            Ok(inner) => Ok(RwLockWriteGuard { track, inner }),
            Err(inner) => {
                track.set_mode(Mode::Upgradable);
                Err(RwLockUpgradableReadGuard { track, inner })
            }
        }
    }

    /// Upgrades, waiting at most until `deadline`.
    #[track_caller]
    pub fn try_upgrade_until(s: Self, deadline: Instant) -> Result<RwLockWriteGuard<'a, T>, Self> {
        let site = Location::caller();
        let RwLockUpgradableReadGuard { mut track, inner } = s;
        track.upgrade(site);
        match parking_lot::RwLockUpgradableReadGuard::try_upgrade_until(inner, deadline) {
            Ok(inner) => Ok(RwLockWriteGuard { track, inner }),
            Err(inner) => {
                track.set_mode(Mode::Upgradable);
                Err(RwLockUpgradableReadGuard { track, inner })
            }
        }
    }

    /// Upgrades to a write lock (validated like [`upgrade`](Self::upgrade), before it
    /// blocks), runs `f` on the data, and downgrades back to an upgradable read (in place:
    /// the lock keeps its new place on the held stack, as an upgradable reader).
    #[track_caller]
    pub fn with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Ret {
        self.track.upgrade(Location::caller());
        let r = self.inner.with_upgraded(f);
        self.track.set_mode(Mode::Upgradable);
        r
    }

    /// Like [`with_upgraded`](Self::with_upgraded) without waiting: `None` (and no change)
    /// if readers are present.
    pub fn try_with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Option<Ret> {
        let track = &mut self.track;
        self.inner.try_with_upgraded(|t| {
            track.set_mode(Mode::Exclusive);
            let r = f(t);
            track.set_mode(Mode::Upgradable);
            r
        })
    }

    /// Turns the upgradable read into a plain read lock (cannot wait).
    #[track_caller]
    pub fn downgrade(s: Self) -> RwLockReadGuard<'a, T> {
        let RwLockUpgradableReadGuard { mut track, inner } = s;
        track.set_mode(Mode::Read);
        RwLockReadGuard {
            track,
            inner: parking_lot::RwLockUpgradableReadGuard::downgrade(inner),
        }
    }

    /// Unlocks, runs `f`, and takes the upgradable read again (validated before blocking).
    #[track_caller]
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        let site = Location::caller();
        let was = s.track.release(site);
        let track = &mut s.track;
        parking_lot::RwLockUpgradableReadGuard::unlocked(&mut s.inner, || {
            let r = f();
            track.restore(was, site);
            r
        })
    }
}

impl<'a, T: ?Sized> MappedRwLockReadGuard<'a, T> {
    /// Projects further.
    pub fn map<U: ?Sized, F: FnOnce(&T) -> &U>(s: Self, f: F) -> MappedRwLockReadGuard<'a, U> {
        let MappedRwLockReadGuard { track, inner } = s;
        MappedRwLockReadGuard {
            track,
            inner: parking_lot::MappedRwLockReadGuard::map(inner, f),
        }
    }

    /// Projects further if `f` returns `Some`; otherwise returns the guard.
    pub fn try_map<U: ?Sized, F: FnOnce(&T) -> Option<&U>>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockReadGuard<'a, U>, Self> {
        let MappedRwLockReadGuard { track, inner } = s;
        match parking_lot::MappedRwLockReadGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedRwLockReadGuard { track, inner }),
            Err(inner) => Err(MappedRwLockReadGuard { track, inner }),
        }
    }
}

impl<'a, T: ?Sized> MappedRwLockWriteGuard<'a, T> {
    /// Projects further.
    pub fn map<U: ?Sized, F: FnOnce(&mut T) -> &mut U>(
        s: Self,
        f: F,
    ) -> MappedRwLockWriteGuard<'a, U> {
        let MappedRwLockWriteGuard { track, inner } = s;
        MappedRwLockWriteGuard {
            track,
            inner: parking_lot::MappedRwLockWriteGuard::map(inner, f),
        }
    }

    /// Projects further if `f` returns `Some`; otherwise returns the guard.
    pub fn try_map<U: ?Sized, F: FnOnce(&mut T) -> Option<&mut U>>(
        s: Self,
        f: F,
    ) -> Result<MappedRwLockWriteGuard<'a, U>, Self> {
        let MappedRwLockWriteGuard { track, inner } = s;
        match parking_lot::MappedRwLockWriteGuard::try_map(inner, f) {
            Ok(inner) => Ok(MappedRwLockWriteGuard { track, inner }),
            Err(inner) => Err(MappedRwLockWriteGuard { track, inner }),
        }
    }
}
