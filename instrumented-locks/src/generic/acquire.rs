//! How an acquisition is fed to lockdep, once for every lock kind: the rule per kind of
//! acquisition (blocking, try, timed, release-and-relock) and the macros that give each lock
//! its acquiring methods.

use std::panic::Location;

use lockdep::Mode;

use crate::dep::{Dep, Site, Track};

/// A guard whose track can be written after the guard owns the raw lock.
pub(crate) trait Tracked {
    /// Sets the guard's track.
    fn set_track(&mut self, track: Track);
}

/// A try-lock: `locked` is the raw try's result; on success the guard `make` builds owns the
/// raw lock before lockdep records it, so a panicking policy still unlocks it.
#[inline(always)]
pub(crate) fn tried<G: Tracked>(
    locked: bool,
    dep: &Dep,
    mode: Mode,
    site: Site,
    make: impl FnOnce(Track) -> G,
) -> Option<G> {
    if !locked {
        return None;
    }
    let mut guard = make(Track::NONE);
    guard.set_track(dep.acquired_try(mode, site));
    Some(guard)
}

/// The raw part of a blocking acquisition that was validated (`track`): while lockdep
/// tracks it, the raw try first, and only if it fails the wait is announced
/// (`lockdep::lock_contended`, for the watchdog, the dump and lock_stat), the raw lock
/// blocks, and the end of the wait is announced (`lockdep::lock_acquired`). Untracked, the
/// raw lock alone, as without validation.
#[inline(always)]
pub(crate) fn block(
    dep: &Dep,
    track: Track,
    site: Site,
    try_lock: impl FnOnce() -> bool,
    lock: impl FnOnce(),
) {
    if !track.is_held() {
        lock();
    } else if !try_lock() {
        dep.contended(site);
        lock();
        dep.acquired();
    }
}

/// A timed lock: validated as a blocking acquisition that may give up, then `try_lock` (the
/// raw timed call); a timeout is recorded as a release.
#[inline(always)]
pub(crate) fn timed(
    dep: &Dep,
    mode: Mode,
    site: Site,
    try_lock: impl FnOnce() -> bool,
) -> Option<Track> {
    let mut track = dep.acquire(mode, 0, None, site);
    if try_lock() {
        Some(track)
    } else {
        track.release(dep, site);
        None
    }
}

/// How the guards of a lock release it and take it again (`unlocked`, `unlocked_fair`,
/// `bump`): the lockdep side of [`guard_core`](super::guard_core)'s methods. Every lock
/// shares the default, but the re-entrant mutex, whose levels above the thread's last one
/// release nothing.
pub(crate) trait Relocks {
    /// The lock's validator state.
    fn dep(&self) -> &Dep;

    /// Runs `f` with the lock released (`unlocked`, `unlocked_fair`): releases the entry,
    /// `unlock`s (the guard's release, given the guard's track: with the entry gone, the raw
    /// unlock alone), runs `f`, validates the re-lock (blocking, before it can block, with the
    /// locks held then) and `lock`s again. If `f` unwinds, the re-lock is validated and taken
    /// all the same, so the guard owns the lock again and its entry is back on the stack (a
    /// report found then is delivered but does not unwind: lockdep never unwinds a panicking
    /// thread); if lockdep's policy panics at the re-lock, the lock is still taken again and
    /// the guard tracks nothing.
    #[inline]
    fn unlocked_track<U>(
        &self,
        track: &mut Track,
        site: Site,
        unlock: impl FnOnce(&Self, &mut Track),
        lock: impl FnOnce(&Self),
        f: impl FnOnce() -> U,
    ) -> U {
        let dep = self.dep();
        let saved = track.suspend(dep, site);
        unlock(self, track);
        let _relock = Defer::new(move || {
            let _lock = Defer::new(move || lock(self));
            track.resume(dep, saved, site);
        });
        f()
    }

    /// `bump`: a release and a validated re-lock in lockdep, then the raw `bump` (which
    /// takes the lock again before it returns). `unlock_fair` (the guard's fair release) and
    /// `lock` (the raw lock) are for a lock whose bump is a fair `unlocked`.
    #[inline]
    fn bump_track(
        &self,
        track: &mut Track,
        site: Site,
        bump: impl FnOnce(&Self),
        unlock_fair: impl FnOnce(&Self, &mut Track),
        lock: impl FnOnce(&Self),
    ) {
        let _ = (unlock_fair, lock);
        track.relock(self.dep(), site);
        bump(self);
    }
}

/// Runs a closure when dropped, on a normal exit or an unwind (a re-lock or a downgrade that
/// must happen whatever a user closure does).
pub(crate) struct Defer<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> Defer<F> {
    #[inline]
    pub(crate) fn new(f: F) -> Defer<F> {
        Defer(Some(f))
    }
}

impl<F: FnOnce()> Drop for Defer<F> {
    #[inline]
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// The site of a `#[track_caller]` method's caller.
#[inline(always)]
#[track_caller]
pub(crate) fn here() -> Site {
    Location::caller()
}

/// The acquiring methods of a lock, one line each: `blocking`, `try` or `timed`, for a
/// `plain` guard (borrowing the lock) or an `arc` one (owning an `Arc` of it), in lockdep
/// mode `$mode`, with the raw call `|r| $call` (and, for `blocking`, the raw try of the same
/// kind after it, which is tried first: see [`block`]). Each lock implements the three helpers the
/// bodies call (`blocking_track`, `tried_guard`, `timed_track`), which apply lockdep's rule
/// for that kind of acquisition (validated before a blocking one, see [`tried`] and
/// [`timed`] for the others); every method is
/// `#[track_caller]`, so reports name the user's call.
macro_rules! acquisitions {
    ($(
        $(#[$m:meta])*
        $how:ident $flavour:ident $name:ident($($arg:ident: $argty:ty),*)
            -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr
            $(, |$tr:ident| $try:expr)?;
    )*) => {$(
        $crate::generic::acquisitions!(
            @fn $flavour [$(#[$m])*] $how $name($($arg: $argty),*) -> $G<$($gen),*>
            = $mode, |$r| $call $(, |$tr| $try)?
        );
    )*};
    (@fn plain [$($attr:tt)*] $how:ident $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr
        $(, |$tr:ident| $try:expr)?) => {
        $($attr)*
        #[inline]
        #[track_caller]
        pub fn $name(&self $(, $arg: $argty)*)
            -> $crate::generic::acquisitions!(@ret $how $G<$($gen),*>)
        {
            $crate::generic::acquisitions!(
                @body $how self, self, $G, $mode, |$r| $call $(, |$tr| $try)?
            )
        }
    };
    (@fn arc [$($attr:tt)*] $how:ident $name:ident($($arg:ident: $argty:ty),*)
        -> $G:ident<$($gen:tt),*> = $mode:expr, |$r:ident| $call:expr
        $(, |$tr:ident| $try:expr)?) => {
        $($attr)*
        #[cfg(feature = "arc_lock")]
        #[inline]
        #[track_caller]
        pub fn $name(self: &std::sync::Arc<Self> $(, $arg: $argty)*)
            -> $crate::generic::acquisitions!(@ret $how $G<$($gen),*>)
        {
            $crate::generic::acquisitions!(
                @body $how self, std::sync::Arc::clone(self), $G, $mode, |$r| $call
                $(, |$tr| $try)?
            )
        }
    };
    (@ret blocking $G:ident<$($gen:tt),*>) => { $G<$($gen),*> };
    (@ret $how:ident $G:ident<$($gen:tt),*>) => { Option<$G<$($gen),*>> };
    (@body blocking $this:ident, $ptr:expr, $G:ident, $mode:expr, |$r:ident| $call:expr,
        |$tr:ident| $try:expr) => {
        $G::new($ptr, $this.blocking_track($mode, 0, None, |$tr| $try, |$r| $call))
    };
    (@body try $this:ident, $ptr:expr, $G:ident, $mode:expr, |$r:ident| $call:expr) => {
        $this.tried_guard($mode, |$r| $call, |t| $G::new($ptr, t))
    };
    (@body timed $this:ident, $ptr:expr, $G:ident, $mode:expr, |$r:ident| $call:expr) => {{
        let track = $this.timed_track($mode, |$r| $call)?;
        Some($G::new($ptr, track))
    }};
}
pub(crate) use acquisitions;

/// The three helpers [`acquisitions!`] calls, for a lock whose raw lock `R` is reached with
/// `self.$raw()`: a blocking acquisition is validated before the raw call, a try is recorded
/// after it succeeds ([`tried`]), a timed one is validated first and released if it gives up
/// ([`timed`]).
macro_rules! raw_helpers {
    ($raw:ident) => {
        // Always inlined: the two raw calls must fold into the caller's `lock()` (as one call
        // of lockdep and the raw lock's fast path), or every acquisition pays a call here.
        #[inline(always)]
        #[track_caller]
        fn blocking_track(
            &self,
            mode: lockdep::Mode,
            subclass: u8,
            nest: Option<&lockdep::LockMap>,
            try_lock: impl FnOnce(&R) -> bool,
            lock: impl FnOnce(&R),
        ) -> $crate::dep::Track {
            let site = $crate::generic::here();
            let track = self.dep.acquire(mode, subclass, nest, site);
            $crate::generic::block(
                &self.dep,
                track,
                site,
                || try_lock(self.$raw()),
                || lock(self.$raw()),
            );
            track
        }

        #[inline]
        #[track_caller]
        fn tried_guard<Guard: $crate::generic::Tracked>(
            &self,
            mode: lockdep::Mode,
            try_lock: impl FnOnce(&R) -> bool,
            make: impl FnOnce($crate::dep::Track) -> Guard,
        ) -> Option<Guard> {
            let locked = try_lock(self.$raw());
            $crate::generic::tried(locked, &self.dep, mode, $crate::generic::here(), make)
        }

        #[inline]
        #[track_caller]
        fn timed_track(
            &self,
            mode: lockdep::Mode,
            try_lock: impl FnOnce(&R) -> bool,
        ) -> Option<$crate::dep::Track> {
            $crate::generic::timed(&self.dep, mode, $crate::generic::here(), || {
                try_lock(self.$raw())
            })
        }
    };
}
pub(crate) use raw_helpers;
