//! With the `validate` feature: a lock embeds a [`lockdep::LockMap`], a guard a [`Track`]
//! (three bits, kept in the low bits of the lock's address: `super::TrackedRef`).
//!
//! The entry points the generic wrappers call on every lock operation (`Dep::acquire`,
//! `Dep::acquired_try`, the `Track` releases, and `crate::is_enabled`) are `#[inline]` in
//! builds without debug assertions, and out of line with them. An `#[inline]` function is
//! compiled in the crate that calls it, at that crate's opt-level, and a user's tests run in
//! the dev profile. Out of line, those calls run this crate's own code, which the README's
//! `[profile.dev.package.instrumented-locks]` table optimizes. Measured on tokio 1.54.1's
//! `rt_threaded` with the README's tables: 1.35x the unpatched run before, 1.15x after (see
//! BENCHMARKS.md). Release builds are unchanged (same fast-path code).

use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

use super::Site;

/// What a lock embeds: its lockdep map (its instance identity and class).
pub(crate) struct Dep {
    map: LockMap,
}

impl Dep {
    /// Class = the caller's construction site and the protected type `T`; unnamed (reports
    /// name it `kind<T>@file:line`). `const`: the class is found at the first acquisition.
    #[inline]
    #[track_caller]
    pub(crate) const fn of_type<T: ?Sized>(kind: &'static str) -> Dep {
        Dep {
            map: LockMap::of_type::<T>(kind),
        }
    }

    /// Class = the caller's construction site and `T`, named `name` in reports.
    #[inline]
    #[track_caller]
    pub(crate) const fn named_of_type<T: ?Sized>(kind: &'static str, name: &'static str) -> Dep {
        Dep {
            map: LockMap::named_of_type::<T>(kind, name),
        }
    }

    /// Class = a static key.
    #[inline]
    pub(crate) const fn with_class(key: &'static LockClassKey, name: &'static str) -> Dep {
        Dep {
            map: LockMap::with_key(name, key),
        }
    }

    /// Class = a dynamic key (an unregistered key is reported by lockdep).
    #[inline]
    #[track_caller]
    pub(crate) fn with_dynamic_key(key: &DynamicKey, name: &'static str) -> Dep {
        Dep {
            map: LockMap::with_dynamic_key(name, key),
        }
    }

    #[inline]
    pub(crate) fn map(&self) -> Option<&LockMap> {
        Some(&self.map)
    }

    /// A blocking acquisition, validated *before* the caller blocks on the raw lock. Returns
    /// the guard's state: held if validation is on.
    ///
    /// Panics only if lockdep's policy is `Policy::Panic` and the acquisition is reported;
    /// then nothing is held.
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn acquire(
        &self,
        mode: Mode,
        subclass: u8,
        nest: Option<&LockMap>,
        site: Site,
    ) -> Track {
        if !crate::is_enabled() {
            return Track::NONE;
        }
        if subclass == 0 && nest.is_none() {
            acquire_plain(&self.map, mode, false, site);
        } else {
            lockdep_acquire(&self.map, subclass, mode, false, nest, site);
        }
        Track::held(mode, subclass, nest)
    }

    /// A successful try-lock (subclass 0), recorded *after* the raw lock succeeded (lockdep's
    /// trylock rule: nothing depends on it). The caller's guard must already own the raw lock,
    /// so that a panicking policy unlocks it.
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn acquired_try(&self, mode: Mode, site: Site) -> Track {
        if !crate::is_enabled() {
            return Track::NONE;
        }
        acquire_plain(&self.map, mode, true, site);
        Track::held(mode, 0, None)
    }

    /// The lock is being destroyed (dropped, or consumed by `into_inner*`): if `is_locked` says
    /// its raw lock is still locked (a guard was forgotten, here or on another thread), lockdep
    /// reports the other threads that hold it (`lockdep::check_held_lock_freed`; this thread's
    /// entries are reported by the map's own drop).
    ///
    /// `is_locked` runs only while validation is switched on: a load of the raw lock's word
    /// just after this thread's unlock (a locked read-modify-write of the same word) waits for
    /// that write, about 3 ns on an Intel Xeon, where a drop costs nothing else (see
    /// BENCHMARKS.md), so a switched-off drop does not load it.
    #[inline]
    pub(crate) fn check_freed(&self, is_locked: impl FnOnce() -> bool) {
        if crate::is_enabled() && is_locked() {
            self.freed_while_locked();
        }
    }

    /// [`check_freed`](Self::check_freed) with the raw lock found locked. Out of line: only a
    /// forgotten guard's lock gets here.
    #[cold]
    #[inline(never)]
    fn freed_while_locked(&self) {
        lockdep::check_held_lock_freed(&self.map);
    }

    /// The acquisition of this lock, validated and on the held stack, found the raw lock
    /// taken: the thread is about to block (`lockdep::lock_contended`). Out of line: the
    /// contended path only.
    #[cold]
    #[inline(never)]
    pub(crate) fn contended(&self, site: Site) {
        lockdep::lock_contended(&self.map, site);
    }

    /// The wait [`contended`](Self::contended) announced is over (`lockdep::lock_acquired`).
    #[cold]
    #[inline(never)]
    pub(crate) fn acquired(&self) {
        lockdep::lock_acquired(&self.map);
    }

    /// The state of a guard made for a lock the caller already holds without a guard
    /// (`make_guard_unchecked`): it takes over this thread's held-lock entry of the lock if
    /// there is one (a forgotten guard's), and tracks nothing otherwise (a lock taken through
    /// `raw()`), so that its drop never gives a false "bad unlock balance".
    #[inline]
    pub(crate) fn adopt(&self, mode: Mode) -> Track {
        if crate::is_enabled() && lockdep::is_held(&self.map) {
            Track::held(mode, 0, None)
        } else {
            Track::NONE
        }
    }

    /// This thread's held-lock entry of the lock, as [`Track::suspend`] would keep it for a
    /// relock in `mode`, if it has one: what a re-entrant mutex's guard keeps when it may be
    /// releasing the last level, whichever guard holds the entry. Switched off too (an entry
    /// made while on), as a guard's own track is kept: [`Track::resume`] validates the
    /// relock if validation is on by then.
    #[inline]
    pub(crate) fn saved_entry(&self, mode: Mode) -> Option<Saved> {
        if !lockdep::is_held(&self.map) {
            return None;
        }
        let how = lockdep::relock_of(&self.map, mode);
        #[allow(unused_mut)]
        let mut track = Track::held(mode, 0, None);
        #[cfg(feature = "send_guard")]
        {
            track.how = how;
        }
        Some(Saved { track, how })
    }

    /// Releases this thread's held-lock entry of the lock, if it has one, silently otherwise
    /// (a re-entrant mutex's last level went without the guard that tracks the entry).
    /// Whether validation is on or not: an entry made while it was on goes with the lock.
    #[inline]
    pub(crate) fn release_own(&self, site: Site) {
        if lockdep::is_held(&self.map) {
            lockdep::release(&self.map, site);
        }
    }

    /// `force_unlock*`, told whether the raw lock was `locked` just before: releases the
    /// entry a forgotten guard left, on this thread or on the thread that forgot it
    /// (`lockdep::force_release`); silent if no thread has one. A raw lock that is not locked
    /// gives lockdep's "bad unlock balance" at `site` (unless this thread still has an entry
    /// of the lock, which then goes silently). Returns whether the caller may unlock the raw
    /// lock: not when it was not locked. `read`: the forgotten guard was a read guard, so this
    /// thread's entry of a read goes, not of another holding of the lock it also has
    /// (`lockdep::force_release_read`).
    #[inline]
    pub(crate) fn force_release(&self, locked: bool, site: Site, read: bool) -> bool {
        if !crate::is_enabled() {
            // Switched off: no report, but an entry made while it was on still goes (or the
            // lock would be "held" for ever on that thread's stack).
            // A raw lock that is not locked is left alone, as while switched on (only the
            // report is missing).
            if locked {
                if read {
                    lockdep::force_release_read(&self.map, site);
                } else {
                    lockdep::force_release(&self.map, site);
                }
            }
            return locked;
        }
        match (locked, read) {
            (true, true) => lockdep::force_release_read(&self.map, site),
            (true, false) => lockdep::force_release(&self.map, site),
            (false, _) => lockdep::release(&self.map, site),
        }
        locked
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

/// What a condvar embeds: its lockdep pseudo-lock, for lockdep's opt-in condvar tracking
/// (`lockdep::set_condvar_tracking`; off by default, then each call costs one load).
pub(crate) struct CondDep {
    map: lockdep::CondvarMap,
}

impl CondDep {
    /// Class = the caller's construction site.
    #[inline]
    #[track_caller]
    pub(crate) const fn new() -> CondDep {
        CondDep {
            map: lockdep::CondvarMap::new(),
        }
    }

    /// A wait is about to block, its mutex released (`lockdep::condvar_wait`).
    #[inline]
    pub(crate) fn wait(&self, site: Site) {
        if crate::is_enabled() {
            lockdep::condvar_wait(&self.map, site);
        }
    }

    /// A notification (`lockdep::condvar_notify`).
    #[inline]
    pub(crate) fn notify(&self, site: Site) {
        if crate::is_enabled() {
            lockdep::condvar_notify(&self.map, site);
        }
    }

    /// The wait, its re-lock of `mutex` validated, is about to sleep (`lockdep::condvar_sleep`:
    /// other threads see this thread sleeping on this condvar, not holding `mutex`).
    #[inline]
    pub(crate) fn sleep(&self, mutex: &LockMap) {
        lockdep::condvar_sleep(mutex, &self.map);
    }
}

/// What a timed upgrade keeps to undo itself if it gives up ([`Track::upgrade_timed`]).
pub(crate) enum TimedUpgrade {
    /// Nothing to undo (the guard tracks nothing).
    Untracked,
    /// The entry this thread's stack had, moved by `lockdep::upgrade_timed`.
    Here(lockdep::TimedUpgrade),
    /// The entry is on the acquiring thread's stack (a guard that moved): its mode changed by
    /// mail, and changes back the same way.
    #[cfg(feature = "send_guard")]
    Away,
}

/// A borrowed [`Dep`], for guards that do not borrow the whole lock (mapped guards).
pub(crate) type DepRef<'a> = &'a Dep;

// Track word layout: `HELD`, then the mode's code (`mode_code`) in the next two bits. The
// acquisition's subclass and nest lock are not kept: this thread's held-lock entry has them,
// and a release-and-relock asks it for them (`lockdep::relock_of`). So the word fits in the
// low bits of a lock's address (`TrackedRef`).
const HELD: usize = 0b001;
const MODE_SHIFT: u32 = 1;

/// What a guard knows about its acquisition, in three bits: whether it is on this thread's
/// held-lock stack, and its mode. Written when the guard is made, read when it drops; a
/// guard keeps it in the low bits of its lock's address ([`TrackedRef`]).
///
/// With `send_guard`, also the holding (lockdep's token of the thread) that holds the entry,
/// and the acquisition's subclass and nest lock (a guard that moved relocks on a thread
/// whose stack does not have the entry).
///
/// [`TrackedRef`]: super::TrackedRef
#[derive(Clone, Copy)]
pub(crate) struct Track {
    word: usize,
    #[cfg(feature = "send_guard")]
    home: Option<lockdep::Holder>,
    #[cfg(feature = "send_guard")]
    how: lockdep::Relock,
}

fn mode_code(mode: Mode) -> usize {
    match mode {
        Mode::Exclusive => 0,
        Mode::Read => 1,
        Mode::RecursiveRead => 2,
        Mode::Upgradable => 3,
    }
}

fn code_mode(code: usize) -> Mode {
    match code & 0b11 {
        0 => Mode::Exclusive,
        1 => Mode::Read,
        2 => Mode::RecursiveRead,
        _ => Mode::Upgradable,
    }
}

/// What [`Track::suspend`] keeps for [`Track::resume`]: the track, and how the acquisition
/// was made beyond its mode.
#[derive(Clone, Copy)]
pub(crate) struct Saved {
    track: Track,
    how: lockdep::Relock,
}

impl Track {
    /// Not on the held stack: validation was off, or a nested re-entrant acquisition.
    pub(crate) const NONE: Track = Track {
        word: 0,
        #[cfg(feature = "send_guard")]
        home: None,
        #[cfg(feature = "send_guard")]
        how: lockdep::Relock::NONE,
    };

    /// The bits a track takes in a guard's lock address.
    #[cfg(not(feature = "send_guard"))]
    pub(crate) const TAGS: usize = 0b111;

    /// The track as the low bits of an address (within [`TAGS`](Self::TAGS)), with `HELD`
    /// inverted: the usual guard, held exclusively on the stack, has tag 0, so its word is
    /// the lock's address itself. (With `HELD` as it is, that guard's word is the lock's
    /// address plus a flag the validating path sets: measured on an Intel Xeon, a
    /// `std_sync::Mutex` lock+unlock cost 2.9 ns more that way, and the 8-deep nest 0.3 ns a
    /// lock; see BENCHMARKS.md.)
    #[cfg(not(feature = "send_guard"))]
    #[inline]
    pub(crate) fn tag(self) -> usize {
        self.word ^ HELD
    }

    /// The inverse of [`tag`](Self::tag).
    #[cfg(not(feature = "send_guard"))]
    #[inline]
    pub(crate) fn from_tag(tag: usize) -> Track {
        Track { word: tag ^ HELD }
    }

    #[inline]
    fn held(mode: Mode, subclass: u8, nest: Option<&LockMap>) -> Track {
        debug_assert!(nest.is_none() || (mode == Mode::Exclusive && subclass == 0));
        #[cfg(not(feature = "send_guard"))]
        let _ = (subclass, nest);
        Track {
            word: HELD | mode_code(mode) << MODE_SHIFT,
            #[cfg(feature = "send_guard")]
            home: home(),
            #[cfg(feature = "send_guard")]
            how: lockdep::Relock::new(subclass, nest),
        }
    }

    /// Whether this guard's acquisition is on the held stack.
    #[inline]
    pub(crate) fn is_held(self) -> bool {
        self.word & HELD != 0
    }

    #[inline]
    fn mode(self) -> Mode {
        code_mode(self.word >> MODE_SHIFT)
    }

    /// The acquisition's subclass and nest lock: this thread's entry's, or with `send_guard`
    /// the track's own.
    #[inline]
    fn how(self, dep: &Dep) -> lockdep::Relock {
        #[cfg(feature = "send_guard")]
        {
            let _ = dep;
            self.how
        }
        #[cfg(not(feature = "send_guard"))]
        lockdep::relock_of(&dep.map, self.mode())
    }

    /// Records the release of what this guard acquired, if it is held; afterwards it is not.
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn release(&mut self, dep: &Dep, site: Site) {
        if self.is_held() {
            let was = std::mem::replace(self, Track::NONE);
            was.release_held(dep, site);
        }
    }

    /// [`release`](Self::release) by a guard whose every acquisition is exclusive (a mutex's,
    /// a write guard's): the mode is a constant, not read from the word.
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn release_exclusive(&mut self, dep: &Dep, site: Site) {
        self.release_as(dep, Mode::Exclusive, site);
    }

    /// [`release`](Self::release) by an upgradable read guard (a constant mode).
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn release_upgradable(&mut self, dep: &Dep, site: Site) {
        self.release_as(dep, super::UPGRADABLE, site);
    }

    /// [`release`](Self::release) by a read guard (a read or a recursive read: the word's
    /// mode bits).
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn release_shared(&mut self, dep: &Dep, site: Site) {
        let mode = self.mode();
        self.release_as(dep, mode, site);
    }

    /// [`release`](Self::release) of an acquisition the caller knows was made in `mode`.
    #[inline]
    fn release_as(&mut self, dep: &Dep, mode: Mode, site: Site) {
        if self.is_held() {
            let was = std::mem::replace(self, Track::NONE);
            debug_assert!(was.mode() == mode);
            was.release_held_as(dep, mode, site);
        }
    }

    /// [`release`](Self::release) from a guard's `Drop`, which has no caller location.
    #[cfg_attr(not(debug_assertions), inline)]
    #[cfg_attr(debug_assertions, inline(never))]
    pub(crate) fn release_on_drop(&mut self, dep: &Dep) {
        if self.is_held() {
            self.release(dep, drop_site());
        }
    }

    #[inline]
    fn release_held(self, dep: &Dep, site: Site) {
        self.release_held_as(dep, self.mode(), site);
    }

    /// Releases the held acquisition, made in `mode`: this thread's entry of the lock in
    /// that mode (`lockdep::release_mode`), so that of two guards of one rwlock held in two
    /// modes each releases its own.
    #[inline]
    fn release_held_as(self, dep: &Dep, mode: Mode, site: Site) {
        // A guard sent to another thread: its entry leaves the acquiring thread's held stack
        // (lockdep applies it there before that thread's next lock operation).
        #[cfg(feature = "send_guard")]
        if self.away() {
            lockdep::release_from_mode(self.home, &dep.map, mode);
            return;
        }
        lockdep_release(&dep.map, mode, site);
    }

    /// The first half of a release-and-relock (condvar wait, `unlocked`, `bump`): releases
    /// the entry and returns what [`resume`](Self::resume) needs to take it again (the mode,
    /// and the subclass and nest lock, which this thread's entry tells before it goes:
    /// `lockdep::relock_of`).
    #[inline]
    pub(crate) fn suspend(&mut self, dep: &Dep, site: Site) -> Saved {
        let how = if self.is_held() {
            self.how(dep)
        } else {
            lockdep::Relock::NONE
        };
        let saved = Saved { track: *self, how };
        self.release(dep, site);
        saved
    }

    /// The second half: validates the re-acquisition (blocking, with the mode, subclass and
    /// nest lock of `saved`) *before* the caller re-locks, if `saved` was held
    /// (`lockdep::relock`). If lockdep's policy panics, this track stays not held and the
    /// caller must still re-lock.
    #[inline]
    pub(crate) fn resume(&mut self, dep: &Dep, saved: Saved, site: Site) {
        if saved.track.is_held() && crate::is_enabled() {
            let mode = saved.track.mode();
            lockdep::relock(&dep.map, mode, saved.how, site);
            #[allow(unused_mut)]
            let mut track = Track::held(mode, 0, None);
            #[cfg(feature = "send_guard")]
            {
                track.how = saved.how;
            }
            *self = track;
        }
    }

    /// Release then validated re-acquire, in one step (a condvar wait, which re-locks inside
    /// the raw wait: the verdict is given before the wait starts, with the same held locks).
    #[inline]
    pub(crate) fn relock(&mut self, dep: &Dep, site: Site) {
        let saved = self.suspend(dep, site);
        self.resume(dep, saved, site);
    }

    /// Whether this guard's entry is on another thread's held stack: with `send_guard`, a
    /// guard that moved from the thread that acquired it. Its mode changes then go to that
    /// thread by mail (`lockdep::change_held_mode_from`).
    #[inline]
    fn away(&self) -> bool {
        #[cfg(feature = "send_guard")]
        return self.home != lockdep::current_holder();
        #[cfg(not(feature = "send_guard"))]
        false
    }

    /// The held entry is held in mode `to` from now on, on whichever thread's stack it is.
    #[inline]
    fn change_mode(&self, dep: &Dep, to: Mode) {
        #[cfg(feature = "send_guard")]
        if self.away() {
            lockdep::change_held_mode_from(self.home, &dep.map, self.mode(), to);
            return;
        }
        lockdep::change_held_mode(&dep.map, self.mode(), to);
    }

    /// The track word of this acquisition held in mode `mode`.
    #[inline]
    fn set_word_mode(&mut self, mode: Mode) {
        self.word = HELD | mode_code(mode) << MODE_SHIFT;
    }

    /// Changes the mode of the held entry in place, without validation (downgrade, a
    /// successful try-upgrade: neither can wait). The kernel's `lock_downgrade()`.
    #[inline]
    pub(crate) fn set_mode(&mut self, dep: &Dep, mode: Mode) {
        if self.is_held() {
            self.change_mode(dep, mode);
            self.set_word_mode(mode);
        }
    }

    /// A blocking upgrade of a held upgradable read to a write (`lockdep::upgrade`):
    /// validated as an exclusive acquisition under the other held locks before the caller
    /// blocks; the entry moves to the top of the held stack, held exclusively. A guard whose
    /// entry is on another thread's stack waits here: the wait is validated against this
    /// thread's held locks (`lockdep::might_lock` as a read, an upgrade's dependencies), and
    /// the other thread learns the new mode by mail.
    #[inline]
    pub(crate) fn upgrade(&mut self, dep: &Dep, site: Site) {
        if self.is_held() {
            if self.away() {
                lockdep::might_lock(&dep.map, self.how(dep).subclass(), Mode::Read, site);
                self.change_mode(dep, Mode::Exclusive);
            } else {
                lockdep::upgrade(&dep.map, site);
            }
            self.set_word_mode(Mode::Exclusive);
        }
    }

    /// [`upgrade`](Self::upgrade) for a timed upgrade, which may give up
    /// (`lockdep::upgrade_timed`); give what it returns to
    /// [`upgrade_failed`](Self::upgrade_failed) if it does.
    #[inline]
    pub(crate) fn upgrade_timed(&mut self, dep: &Dep, site: Site) -> TimedUpgrade {
        if !self.is_held() {
            return TimedUpgrade::Untracked;
        }
        #[cfg(feature = "send_guard")]
        if self.away() {
            self.upgrade(dep, site);
            return TimedUpgrade::Away;
        }
        let undo = lockdep::upgrade_timed(&dep.map, site);
        self.set_word_mode(Mode::Exclusive);
        TimedUpgrade::Here(undo)
    }

    /// A timed upgrade that gave up: the lock is the upgradable read it still is, back at its
    /// place on the held stack with its acquisition site (`lockdep::upgrade_timed_out`).
    #[inline]
    pub(crate) fn upgrade_failed(&mut self, dep: &Dep, upgrade: TimedUpgrade) {
        match upgrade {
            TimedUpgrade::Untracked => return,
            TimedUpgrade::Here(undo) => lockdep::upgrade_timed_out(&dep.map, undo),
            #[cfg(feature = "send_guard")]
            TimedUpgrade::Away => self.change_mode(dep, super::UPGRADABLE),
        }
        self.set_word_mode(super::UPGRADABLE);
    }
}

/// `lockdep::acquire`, called, not inlined: the wrapper's own part of an acquisition (the
/// switch, the track word, the raw lock) stays inline in the caller, and lockdep's fast path
/// runs as one function. Measured faster per lock than inlining lockdep into every call site
/// (the loop then keeps its registers; see BENCHMARKS.md, instrumented-locks).
#[inline(never)]
fn lockdep_acquire(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest: Option<&LockMap>,
    site: Site,
) {
    lockdep::acquire(map, subclass, mode, trylock, nest, site);
}

/// [`lockdep_acquire`] of subclass 0 with no nest lock (nearly every acquisition), one
/// function per mode and trylock flag: the constants fold into lockdep's fast path, which then
/// needs fewer registers.
#[inline(always)]
fn acquire_plain(map: &LockMap, mode: Mode, trylock: bool, site: Site) {
    match (mode, trylock) {
        (Mode::Exclusive, false) => lockdep_acquire_as::<0, false>(map, site),
        (Mode::Read, false) => lockdep_acquire_as::<1, false>(map, site),
        (Mode::RecursiveRead, false) => lockdep_acquire_as::<2, false>(map, site),
        (Mode::Upgradable, false) => lockdep_acquire_as::<3, false>(map, site),
        (Mode::Exclusive, true) => lockdep_acquire_as::<0, true>(map, site),
        (Mode::Read, true) => lockdep_acquire_as::<1, true>(map, site),
        (Mode::RecursiveRead, true) => lockdep_acquire_as::<2, true>(map, site),
        (Mode::Upgradable, true) => lockdep_acquire_as::<3, true>(map, site),
    }
}

/// One of [`acquire_plain`]'s functions: mode `MODE` (its code in [`mode_code`]), trylock
/// `TRY`.
#[inline(never)]
fn lockdep_acquire_as<const MODE: usize, const TRY: bool>(map: &LockMap, site: Site) {
    lockdep::acquire(map, 0, code_mode(MODE), TRY, None, site);
}

/// `lockdep::release_mode`, called, not inlined (as [`lockdep_acquire`]): inlined, it saves a
/// little on the lock_api rows but makes the std-flavoured guards' drop glue too large to
/// inline (measured: see BENCHMARKS.md, instrumented-locks). One function per mode, as
/// [`acquire_plain`]'s: the mode is a constant in the compared word. The guard's mode picks
/// its own entry when the thread holds the lock twice in two modes.
#[inline(always)]
fn lockdep_release(map: &LockMap, mode: Mode, site: Site) {
    match mode {
        Mode::Exclusive => lockdep_release_as::<0>(map, site),
        Mode::Read => lockdep_release_as::<1>(map, site),
        Mode::RecursiveRead => lockdep_release_as::<2>(map, site),
        Mode::Upgradable => lockdep_release_as::<3>(map, site),
    }
}

/// One of [`lockdep_release`]'s functions: mode `MODE` (its code in [`mode_code`]).
#[inline(never)]
fn lockdep_release_as<const MODE: usize>(map: &LockMap, site: Site) {
    lockdep::release_mode(map, code_mode(MODE), site);
}

/// The holding of the calling thread, for a guard's `home`; the first call declares to
/// lockdep that guards may move between threads (`send_guard`).
#[cfg(feature = "send_guard")]
#[inline]
fn home() -> Option<lockdep::Holder> {
    static DECLARED: std::sync::Once = std::sync::Once::new();
    DECLARED.call_once(|| lockdep::set_guards_movable(true));
    lockdep::current_holder()
}

/// The site a guard drop reports: a guard's `Drop` cannot be `#[track_caller]`, so lockdep's
/// placeholder, which reports show as "(guard drop)".
#[inline]
pub(crate) fn drop_site() -> Site {
    lockdep::guard_drop_site()
}

/// A held acquisition with the map it belongs to: releases it on drop. Mapped guards carry
/// one (declared before the lock_api guard that unlocks, so lockdep hears of the release
/// first); guard projections hold one while a user closure runs, so that a panic in it still
/// releases. The re-entrant mutex's mapped guard keeps its one in a level that releases it
/// itself, after the raw unlock and only with the thread's last level (`Level` in
/// `generic::remutex`).
pub(crate) struct Held<'a> {
    dep: DepRef<'a>,
    track: Track,
}

impl<'a> Held<'a> {
    #[inline]
    pub(crate) fn new(dep: DepRef<'a>, track: Track) -> Held<'a> {
        Held { dep, track }
    }

    #[inline]
    pub(crate) fn dep(&self) -> DepRef<'a> {
        self.dep
    }

    /// The track, and this no longer releases it.
    #[inline]
    pub(crate) fn into_track(self) -> Track {
        let me = std::mem::ManuallyDrop::new(self);
        me.track
    }

    #[inline]
    pub(crate) fn track(&mut self) -> &mut Track {
        &mut self.track
    }

    #[inline]
    pub(crate) fn map(&self) -> Option<&'a LockMap> {
        self.dep.map()
    }
}

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        self.track.release_on_drop(self.dep);
    }
}
