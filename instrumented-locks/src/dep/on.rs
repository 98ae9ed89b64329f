//! With the `validate` feature: a lock embeds a [`lockdep::LockMap`], a guard a `Track`.

use std::panic::Location;

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

type Site = &'static Location<'static>;

/// What a lock embeds: its lockdep map (its instance identity and class).
pub(crate) struct Dep {
    map: LockMap,
}

impl Dep {
    /// Class = the caller's construction site.
    #[track_caller]
    pub(crate) fn new(name: &'static str) -> Dep {
        Dep {
            map: LockMap::new(name),
        }
    }

    /// Class = a static key.
    pub(crate) fn with_class(key: &'static LockClassKey, name: &'static str) -> Dep {
        Dep {
            map: LockMap::with_key(name, key),
        }
    }

    /// Class = a dynamic key (an unregistered key is reported by lockdep).
    #[track_caller]
    pub(crate) fn with_dynamic_key(key: &DynamicKey, name: &'static str) -> Dep {
        Dep {
            map: LockMap::with_dynamic_key(name, key),
        }
    }

    pub(crate) fn map(&self) -> Option<&LockMap> {
        Some(&self.map)
    }

    /// A blocking acquire: validated *before* the caller blocks on the real lock.
    #[inline]
    pub(crate) fn lock<'a>(
        &'a self,
        subclass: u8,
        mode: Mode,
        nest: Option<&'a LockMap>,
        site: Site,
    ) -> Track<'a> {
        let mut t = self.untracked(subclass, mode, nest);
        t.acquire(false, site);
        t
    }

    /// A successful try-lock: recorded *after* the real lock succeeded.
    #[inline]
    pub(crate) fn locked_try<'a>(
        &'a self,
        subclass: u8,
        mode: Mode,
        nest: Option<&'a LockMap>,
        site: Site,
    ) -> Track<'a> {
        let mut t = self.untracked(subclass, mode, nest);
        t.acquire(true, site);
        t
    }

    /// A guard state that is not on the held stack (a nested re-entrant acquisition).
    #[inline]
    pub(crate) fn untracked<'a>(
        &'a self,
        subclass: u8,
        mode: Mode,
        nest: Option<&'a LockMap>,
    ) -> Track<'a> {
        Track {
            map: &self.map,
            nest,
            subclass,
            mode,
            held: false,
        }
    }

    #[track_caller]
    pub(crate) fn assert_held(&self) {
        if crate::is_enabled() {
            lockdep::assert_held(&self.map);
        }
    }

    #[track_caller]
    pub(crate) fn assert_held_mode(&self, mode: Mode) {
        if crate::is_enabled() {
            lockdep::assert_held_mode(&self.map, mode);
        }
    }

    #[track_caller]
    pub(crate) fn assert_not_held(&self) {
        if crate::is_enabled() {
            lockdep::assert_not_held(&self.map);
        }
    }

    pub(crate) fn is_held(&self) -> bool {
        lockdep::is_held(&self.map)
    }
}

/// What a guard carries: which lock, how it was taken, and whether this acquisition is on
/// the thread's held stack. Dropping it releases the lock in lockdep (before the real
/// unlock, because guards declare it before the parking_lot guard).
pub(crate) struct Track<'a> {
    map: &'a LockMap,
    nest: Option<&'a LockMap>,
    subclass: u8,
    mode: Mode,
    held: bool,
}

impl<'a> Track<'a> {
    /// Records an acquisition if validation is on. `held` becomes true only after lockdep
    /// accepted it, so a report that panics leaves nothing to release.
    #[inline]
    pub(crate) fn acquire(&mut self, trylock: bool, site: Site) {
        if crate::is_enabled() {
            lockdep::acquire(self.map, self.subclass, self.mode, trylock, self.nest, site);
            self.held = true;
        }
    }

    /// Records a release of what this guard acquired; returns whether it was held.
    #[inline]
    pub(crate) fn release(&mut self, site: Site) -> bool {
        let was = self.held;
        if was {
            self.held = false;
            lockdep::release(self.map, site);
        }
        was
    }

    /// Release, then a blocking re-acquire in `mode` (condvar wait, `unlocked`, upgrade):
    /// validated before the caller blocks.
    #[inline]
    pub(crate) fn reacquire(&mut self, mode: Mode, site: Site) {
        if self.release(site) {
            self.mode = mode;
            self.acquire(false, site);
        }
    }

    /// A blocking upgrade of the held upgradable read: validated as a write acquisition under
    /// the other held locks before the caller blocks (`lockdep::upgrade`); then held
    /// exclusively.
    #[inline]
    pub(crate) fn upgrade(&mut self, site: Site) {
        if self.held {
            lockdep::upgrade(self.map, site);
            self.mode = Mode::Exclusive;
        }
    }

    /// Changes the mode of the held entry in place, without validation (downgrade,
    /// successful try-upgrade: neither can wait). The kernel's `lock_downgrade()`.
    #[inline]
    pub(crate) fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        if self.held {
            lockdep::set_held_mode(self.map, mode);
        }
    }

    /// Re-acquire after a [`release`](Self::release) that returned `was_held`.
    #[inline]
    pub(crate) fn restore(&mut self, was_held: bool, site: Site) {
        if was_held {
            self.acquire(false, site);
        }
    }

    pub(crate) fn map(&self) -> Option<&'a LockMap> {
        Some(self.map)
    }
}

impl Drop for Track<'_> {
    fn drop(&mut self) {
        self.release(lockdep::guard_drop_site());
    }
}
