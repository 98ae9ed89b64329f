//! The glue between the data wrappers and lockdep: what a lock embeds ([`Dep`]), what a guard
//! carries ([`Track`], three bits in its lock's address: [`TrackedRef`]), and the owner of a mapped guard's release ([`Held`]).
//!
//! With the `validate` feature, [`Dep`] is a [`lockdep::LockMap`] and [`Track`] records how
//! *this* guard's acquisition was made (mode, subclass, nest lock) and whether it is on the
//! thread's held-lock stack, so that a guard releases exactly what it acquired even if
//! validation was switched off in between (see [`crate::set_enabled`]). Without the feature
//! all three are zero-sized and every call is an empty inline function, so the wrappers are
//! the plain lock_api types.
//!
//! Every validated lock operation of the crate goes through this module: acquisitions
//! ([`Dep::acquire`], [`Dep::acquired_try`]), releases ([`Track::release`],
//! [`Track::release_on_drop`]), the release-and-relock of condvar waits, `unlocked` and
//! `bump` ([`Track::suspend`] / [`Track::resume`]), mode changes ([`Track::set_mode`]) and
//! upgrades ([`Track::upgrade`]). A change of lockdep's API is a change here.

#[cfg(feature = "validate")]
pub(crate) use on::{drop_site, CondDep, Dep, DepRef, Held, Track};

#[cfg(not(feature = "validate"))]
pub(crate) use off::{drop_site, CondDep, Dep, DepRef, Held, Track};

use std::panic::Location;

/// A source location a report names.
pub(crate) type Site = &'static Location<'static>;

/// The lockdep mode of an upgradable read (`RwLock::upgradable_read`): shared with readers,
/// exclusive with writers and other upgradable reads.
pub(crate) const UPGRADABLE: lockdep::Mode = lockdep::Mode::Upgradable;

/// The marker that makes guards `!Send`, whatever the raw lock's `GuardMarker` says: a held
/// lock belongs to the thread that took it. With the `send_guard` feature, `Send`.
#[cfg(not(feature = "send_guard"))]
pub type GuardMarker = lock_api::GuardNoSend;

/// The marker that makes guards `Send` (the `send_guard` feature).
#[cfg(feature = "send_guard")]
pub type GuardMarker = lock_api::GuardSend;

/// A guard of a held lock, usable as the `nest_lock` of [`lock_nest_lock`]
/// (the kernel's `mutex_lock_nest_lock()`): every guard type of this crate implements it.
///
/// Sealed: only this crate's guards implement it.
///
/// [`lock_nest_lock`]: crate::generic::Mutex::lock_nest_lock
pub trait HeldGuard: sealed::Sealed {
    /// The validator map of the lock this guard holds (`None` without the `validate`
    /// feature).
    fn lock_map(&self) -> Option<&lockdep::LockMap>;
}

pub(crate) mod sealed {
    /// Keeps [`super::HeldGuard`] implementable only in this crate.
    pub trait Sealed {}
}

mod tracked;
#[cfg(feature = "arc_lock")]
pub(crate) use tracked::TrackedArc;
pub(crate) use tracked::{Locked, TrackMut, TrackedRef};

#[cfg(feature = "validate")]
mod on;

#[cfg(not(feature = "validate"))]
mod off;
