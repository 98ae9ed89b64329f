//! The glue between a wrapper and lockdep: what a lock embeds ([`Dep`]) and what a guard
//! carries ([`Track`]).
//!
//! With the `validate` feature, [`Dep`] is a [`lockdep::LockMap`] and [`Track`] remembers
//! whether *this* guard's acquisition is on the thread's held-lock stack, so that a guard
//! releases exactly what it acquired even if validation was switched off in between (see
//! [`crate::set_enabled`]). Without the feature both are zero-sized and every call is an empty
//! inline function, so the wrappers are plain parking_lot.

#[cfg(feature = "validate")]
pub(crate) use on::{Dep, Track};

#[cfg(not(feature = "validate"))]
pub(crate) use off::{Dep, Track};

/// A guard of a held lock, usable as the `nest_lock` of [`Mutex::lock_nest_lock`]
/// (the kernel's `mutex_lock_nest_lock()`): every guard type of this crate implements it.
///
/// Sealed: only this crate's guards implement it.
///
/// [`Mutex::lock_nest_lock`]: crate::Mutex::lock_nest_lock
pub trait HeldGuard: sealed::Sealed {
    /// The validator map of the lock this guard holds (`None` without the `validate`
    /// feature).
    fn lock_map(&self) -> Option<&lockdep::LockMap>;
}

pub(crate) mod sealed {
    /// Keeps [`super::HeldGuard`] implementable only in this crate.
    pub trait Sealed {}
}

#[cfg(feature = "validate")]
mod on;

#[cfg(not(feature = "validate"))]
mod off;
