//! Without the `validate` feature: zero-sized stand-ins whose methods do nothing.

use std::marker::PhantomData;
use std::panic::Location;

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

type Site = &'static Location<'static>;

/// Zero-sized: no validation compiled in.
pub(crate) struct Dep;

#[allow(clippy::unused_self)]
impl Dep {
    #[inline(always)]
    pub(crate) const fn new(_name: &'static str) -> Dep {
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
    pub(crate) fn lock<'a>(
        &'a self,
        _subclass: u8,
        _mode: Mode,
        _nest: Option<&'a LockMap>,
        _site: Site,
    ) -> Track<'a> {
        Track(PhantomData)
    }
    #[inline(always)]
    pub(crate) fn locked_try<'a>(
        &'a self,
        _subclass: u8,
        _mode: Mode,
        _nest: Option<&'a LockMap>,
        _site: Site,
    ) -> Track<'a> {
        Track(PhantomData)
    }
    #[inline(always)]
    pub(crate) fn untracked<'a>(
        &'a self,
        _subclass: u8,
        _mode: Mode,
        _nest: Option<&'a LockMap>,
    ) -> Track<'a> {
        Track(PhantomData)
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

/// Zero-sized: nothing to track.
pub(crate) struct Track<'a>(PhantomData<&'a ()>);

#[allow(clippy::unused_self)]
impl<'a> Track<'a> {
    #[inline(always)]
    pub(crate) fn release(&mut self, _site: Site) -> bool {
        false
    }
    #[inline(always)]
    pub(crate) fn reacquire(&mut self, _mode: Mode, _site: Site) {}
    #[inline(always)]
    pub(crate) fn upgrade(&mut self, _site: Site) {}
    #[inline(always)]
    pub(crate) fn set_mode(&mut self, _mode: Mode) {}
    #[inline(always)]
    pub(crate) fn restore(&mut self, _was_held: bool, _site: Site) {}
    #[inline(always)]
    pub(crate) fn map(&self) -> Option<&'a LockMap> {
        None
    }
}
