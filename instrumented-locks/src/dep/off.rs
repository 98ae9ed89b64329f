//! Without the `validate` feature: zero-sized stand-ins whose methods do nothing, so that
//! every wrapper compiles to the plain lock_api code.

#![allow(
    clippy::unused_self,
    clippy::trivially_copy_pass_by_ref,
    clippy::extra_unused_type_parameters
)]

use std::marker::PhantomData;

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

use super::Site;

/// Zero-sized: no validation compiled in.
pub(crate) struct Dep;

impl Dep {
    #[inline(always)]
    pub(crate) const fn of_type<T: ?Sized>(_kind: &'static str) -> Dep {
        Dep
    }
    #[inline(always)]
    pub(crate) const fn named_of_type<T: ?Sized>(_kind: &'static str, _name: &'static str) -> Dep {
        Dep
    }
    #[inline(always)]
    pub(crate) const fn with_class(_key: &'static LockClassKey, _name: &'static str) -> Dep {
        Dep
    }
    #[inline(always)]
    pub(crate) fn with_dynamic_key(_key: &DynamicKey, _name: &'static str) -> Dep {
        Dep
    }
    #[inline(always)]
    pub(crate) fn map(&self) -> Option<&LockMap> {
        None
    }
    #[inline(always)]
    pub(crate) fn acquire(
        &self,
        _mode: Mode,
        _subclass: u8,
        _nest: Option<&LockMap>,
        _site: Site,
    ) -> Track {
        Track
    }
    #[inline(always)]
    pub(crate) fn acquired_try(&self, _mode: Mode, _site: Site) -> Track {
        Track
    }
    /// Nothing to check: `is_locked` is not called (no load of the raw lock).
    #[inline(always)]
    pub(crate) fn check_freed(&self, _is_locked: impl FnOnce() -> bool) {}
    #[inline(always)]
    pub(crate) fn contended(&self, _site: Site) {}
    #[inline(always)]
    pub(crate) fn acquired(&self) {}
    #[inline(always)]
    pub(crate) fn adopt(&self, _mode: Mode) -> Track {
        Track
    }
    #[inline(always)]
    pub(crate) fn saved_entry(&self, _mode: Mode) -> Option<Saved> {
        None
    }
    #[inline(always)]
    pub(crate) fn release_own(&self, _site: Site) {}
    #[inline(always)]
    pub(crate) fn force_release(&self, locked: bool, _site: Site, _read: bool) -> bool {
        // As with `validate`: a raw lock that is not locked is left alone.
        locked
    }
    #[inline(always)]
    pub(crate) fn assert_held(&self) {}
    #[inline(always)]
    pub(crate) fn assert_held_mode(&self, _mode: Mode) {}
    #[inline(always)]
    pub(crate) fn assert_not_held(&self) {}
    #[inline(always)]
    pub(crate) fn is_held(&self) -> bool {
        false
    }
}

/// Zero-sized: no condvar tracking.
pub(crate) struct CondDep;

impl CondDep {
    #[inline(always)]
    pub(crate) const fn new() -> CondDep {
        CondDep
    }
    #[inline(always)]
    pub(crate) fn wait(&self, _site: Site) {}
    #[inline(always)]
    pub(crate) fn notify(&self, _site: Site) {}
    #[inline(always)]
    pub(crate) fn sleep(&self, _mutex: &LockMap) {}
}

/// Zero-sized (a reference to the zero-sized [`Dep`] would still be a pointer).
#[derive(Clone, Copy)]
pub(crate) struct DepRef<'a>(PhantomData<&'a Dep>);

impl<'a> From<&'a Dep> for DepRef<'a> {
    #[inline(always)]
    fn from(_: &'a Dep) -> DepRef<'a> {
        DepRef(PhantomData)
    }
}

/// Zero-sized: nothing to track.
#[derive(Clone, Copy)]
pub(crate) struct Track;

/// What a release-and-relock keeps: nothing.
pub(crate) type Saved = Track;

impl Track {
    pub(crate) const NONE: Track = Track;
    #[inline(always)]
    pub(crate) fn is_held(self) -> bool {
        false
    }
    #[inline(always)]
    pub(crate) fn release(&mut self, _dep: &Dep, _site: Site) {}
    #[inline(always)]
    pub(crate) fn release_exclusive(&mut self, _dep: &Dep, _site: Site) {}
    #[inline(always)]
    pub(crate) fn release_upgradable(&mut self, _dep: &Dep, _site: Site) {}
    #[inline(always)]
    pub(crate) fn release_shared(&mut self, _dep: &Dep, _site: Site) {}
    #[inline(always)]
    pub(crate) fn suspend(&mut self, _dep: &Dep, _site: Site) -> Track {
        Track
    }
    #[inline(always)]
    pub(crate) fn resume(&mut self, _dep: &Dep, _saved: Track, _site: Site) {}
    #[inline(always)]
    pub(crate) fn relock(&mut self, _dep: &Dep, _site: Site) {}
    #[inline(always)]
    pub(crate) fn set_mode(&mut self, _dep: &Dep, _mode: Mode) {}
    #[inline(always)]
    pub(crate) fn upgrade(&mut self, _dep: &Dep, _site: Site) {}
    #[inline(always)]
    pub(crate) fn upgrade_timed(&mut self, _dep: &Dep, _site: Site) -> TimedUpgrade {
        TimedUpgrade
    }
    #[inline(always)]
    pub(crate) fn upgrade_failed(&mut self, _dep: &Dep, _upgrade: TimedUpgrade) {}
}

/// Zero-sized: nothing to undo.
pub(crate) struct TimedUpgrade;

/// Zero-sized: nothing to release.
pub(crate) struct Held<'a> {
    _dep: PhantomData<&'a Dep>,
    track: Track,
}

impl<'a> Held<'a> {
    #[inline(always)]
    pub(crate) fn new(_dep: DepRef<'a>, track: Track) -> Held<'a> {
        Held {
            _dep: PhantomData,
            track,
        }
    }
    #[inline(always)]
    pub(crate) fn dep(&self) -> &'a Dep {
        &Dep
    }
    #[inline(always)]
    pub(crate) fn into_track(self) -> Track {
        Track
    }
    #[inline(always)]
    pub(crate) fn track(&mut self) -> &mut Track {
        &mut self.track
    }
    #[inline(always)]
    pub(crate) fn map(&self) -> Option<&'a LockMap> {
        None
    }
}

/// The site a guard drop reports (unused without validation).
#[inline(always)]
pub(crate) fn drop_site() -> Site {
    std::panic::Location::caller()
}
