//! Annotations on held locks: queries, assertions, mode and subclass changes, pinning, and
//! moving a held lock to another thread.
//!
//! Kernel counterparts: `lock_is_held_type()`, `lockdep_assert_held*()`,
//! `lockdep_assert_not_held()`, `lockdep_assert_none_held_once()`, `lock_downgrade()`,
//! `lock_set_subclass()` and `lockdep_pin_lock()`; [`upgrade`] is parking_lot's
//! `RwLockUpgradableReadGuard::upgrade`, which the kernel does not have.

use std::panic::Location;

use crate::graph_lock::graph_lock;
use crate::held::{Find, HeldLock, ThreadState};
use crate::lock_stat;
use crate::map::LockMap;
use crate::mode::Mode;
use crate::report::{self, build, AssertKind, LockDesc};
use crate::resolve::resolve_class;
use crate::thread::with_state;
use crate::validate;

fn fail(kind: AssertKind, lock: &str, site: &'static Location<'static>) {
    let r = with_state(|st| build::assertion_failed(&graph_lock().graph, st, kind, lock, site));
    if let Some(r) = r {
        report::deliver(vec![r]);
    }
}

/// True if this thread holds `map` (in any mode). Thread-local, no lock taken.
pub fn is_held(map: &LockMap) -> bool {
    with_state(|st| st.find(map.instance()).is_some()).unwrap_or(false)
}

/// The number of locks this thread holds, pseudo-locks and unvalidated locks included (the
/// same entries [`held_locks`] lists and [`is_held`] searches). Thread-local, no lock taken.
pub fn held_count() -> usize {
    with_state(|st| st.entries().len()).unwrap_or(0)
}

/// This thread's held locks, bottom first. Takes the graph lock briefly for class names.
pub fn held_locks() -> Vec<LockDesc> {
    with_state(|st| build::held(&graph_lock().graph, st)).unwrap_or_default()
}

/// Reports [`AssertKind::NotHeld`] unless this thread holds `map`
/// (kernel: `lockdep_assert_held()`).
#[track_caller]
pub fn assert_held(map: &LockMap) {
    if !is_held(map) {
        fail(AssertKind::NotHeld, &map.report_name(), Location::caller());
    }
}

/// Like [`assert_held`], and also checks the mode: `Mode::Exclusive` requires a writer, any
/// other mode accepts any reader, upgradable reads included (kernel:
/// `lockdep_assert_held_write()` / `_read()`).
#[track_caller]
pub fn assert_held_mode(map: &LockMap, mode: Mode) {
    let site = Location::caller();
    match with_state(|st| st.find(map.instance()).map(|i| st.entry(i).mode)).flatten() {
        None => fail(AssertKind::NotHeld, &map.report_name(), site),
        Some(m) if m.is_read() != mode.is_read() => {
            fail(AssertKind::WrongMode, &map.report_name(), site)
        }
        Some(_) => {}
    }
}

/// Reports [`AssertKind::Held`] if this thread holds `map`
/// (kernel: `lockdep_assert_not_held()`).
#[track_caller]
pub fn assert_not_held(map: &LockMap) {
    if is_held(map) {
        fail(AssertKind::Held, &map.report_name(), Location::caller());
    }
}

/// Reports [`AssertKind::SomeHeld`] if this thread holds any lock
/// (kernel: `lockdep_assert_none_held_once()`).
#[track_caller]
pub fn assert_none_held() {
    if held_count() != 0 {
        fail(AssertKind::SomeHeld, "", Location::caller());
    }
}

/// Changes the mode of a held lock without releasing it, e.g. a write lock downgraded to a
/// read lock (the kernel's `lock_downgrade()`; parking_lot `RwLockWriteGuard::downgrade`).
/// Later acquisitions see the new mode. Changes this thread's topmost entry of the lock; a
/// wrapper whose guard knows the mode it holds calls [`change_held_mode`]. Reports
/// [`AssertKind::NotHeld`] if this thread does not hold `map`. No lock taken.
#[track_caller]
pub fn set_held_mode(map: &LockMap, mode: Mode) {
    set_mode_of(map, Find::any(map.instance()), mode, Location::caller());
}

/// [`set_held_mode`] of the entry of `map` held in mode `from` (the topmost such, else the
/// topmost entry of the lock): a thread holding one rwlock twice in two modes changes the
/// entry of the guard that changes (an upgradable read downgraded to a read, or upgraded by a
/// successful `try_upgrade`), not whichever is on top. Reports as [`set_held_mode`]. No lock
/// taken.
#[track_caller]
pub fn change_held_mode(map: &LockMap, from: Mode, to: Mode) {
    set_mode_of(
        map,
        Find::in_mode(map.instance(), from),
        to,
        Location::caller(),
    );
}

fn set_mode_of(map: &LockMap, entry: Find, mode: Mode, site: &'static Location<'static>) {
    let was = with_state(|st| {
        let i = st.find_release(entry)?;
        let was = st.entry(i).mode;
        st.set_mode(i, mode);
        Some(was)
    });
    match was {
        Some(None) => fail(AssertKind::NotHeld, &map.report_name(), site),
        Some(Some(was)) if lock_stat::on() => lock_stat::change_mode(map, was, mode),
        _ => {}
    }
}

/// The mode of this thread's topmost entry of `map` held for reading (plain or recursive),
/// if it has one.
pub(crate) fn held_read_mode(map: &LockMap) -> Option<Mode> {
    with_state(|st| {
        st.entries()
            .iter()
            .rev()
            .find(|h| {
                h.instance == map.instance() && matches!(h.mode, Mode::Read | Mode::RecursiveRead)
            })
            .map(|h| h.mode)
    })
    .flatten()
}

/// Upgrades the held upgradable read of `map` to a write lock (parking_lot's
/// `RwLockUpgradableReadGuard::upgrade`): validated as an acquisition of the lock that waits
/// for its readers (no other thread can hold it upgradable or exclusively meanwhile; see the
/// verdicts below) while the locks this thread holds are held, *excluding the lock's own
/// upgradable entry*,
/// so call it **before** the real upgrade may block. Afterwards the lock is held exclusively,
/// at the top of the held stack (later acquisitions depend on it from there). An upgrade while
/// this thread also holds a plain read of the same lock waits for itself: it is reported as
/// [`Report::RecursiveLocking`](crate::Report::RecursiveLocking).
///
/// A successful non-blocking `try_upgrade` cannot wait: record it with
/// [`set_held_mode`]`(map, Mode::Exclusive)` instead. An upgrade that may give up waiting
/// (a timed one) is [`upgrade_timed`].
///
/// Reports [`AssertKind::NotHeld`] (and records nothing) if this thread does not hold `map`,
/// and [`AssertKind::WrongMode`] if it holds it in another mode than upgradable (then it is
/// upgraded all the same). `site` is the location reports name (the user's `upgrade` call).
/// Thread-safe; the graph lock is taken only if the chain is new.
pub fn upgrade(map: &LockMap, site: &'static Location<'static>) {
    upgrade_keeping(map, site);
}

/// What a timed upgrade that may give up keeps of the upgradable entry it moved: where it was
/// on the held stack and the entry itself, for [`upgrade_timed_out`]. From [`upgrade_timed`].
#[derive(Debug)]
#[must_use = "give it to `upgrade_timed_out` if the upgrade gives up"]
pub struct TimedUpgrade {
    taken: Option<(usize, HeldLock)>,
}

/// [`upgrade`] for an upgrade that may give up (parking_lot's `try_upgrade_for` /
/// `try_upgrade_until`): validated and recorded the same way, before the caller waits; if the
/// wait times out, [`upgrade_timed_out`] puts the upgradable entry back where it was, with
/// the site that acquired it. Thread-safe; as [`upgrade`].
pub fn upgrade_timed(map: &LockMap, site: &'static Location<'static>) -> TimedUpgrade {
    TimedUpgrade {
        taken: upgrade_keeping(map, site),
    }
}

/// A timed upgrade ([`upgrade_timed`]) gave up: the lock is the upgradable read it was, at its
/// place on the held stack, acquired where it was (not at the upgrade's site). Thread-safe.
pub fn upgrade_timed_out(map: &LockMap, upgrade: TimedUpgrade) {
    let Some((i, entry)) = upgrade.taken else {
        return;
    };
    with_state(|st| {
        // The exclusive entry the upgrade pushed, replaced by the upgradable one it took.
        if let Some(top) = st
            .entries()
            .iter()
            .rposition(|h| h.instance == map.instance() && h.mode == Mode::Exclusive)
        {
            let _ = st.remove(top);
        }
        let at = i.min(st.len());
        st.insert(at, entry);
    });
    if lock_stat::on() {
        lock_stat::change_mode(map, Mode::Exclusive, entry.mode);
    }
}

/// [`upgrade`]; returns where the upgradable entry was and the entry, if there was one.
fn upgrade_keeping(map: &LockMap, site: &'static Location<'static>) -> Option<(usize, HeldLock)> {
    // The lock's upgradable entry, if it has one besides other holdings of the lock.
    let locate = |st: &ThreadState| {
        st.entries()
            .iter()
            .rposition(|h| h.instance == map.instance() && h.mode == Mode::Upgradable)
            .or_else(|| st.find(map.instance()))
    };
    let found = with_state(|st| locate(st).map(|i| st.entry(i).mode)).flatten();
    let Some(mode) = found else {
        fail(AssertKind::NotHeld, &map.report_name(), site);
        return None;
    };
    if mode != Mode::Upgradable {
        // Reported while the entry is still on the stack, so the report lists it (the
        // report's handler may lock and unlock: the entry is looked up again below).
        fail(AssertKind::WrongMode, &map.report_name(), site);
    }
    let (index, entry) = with_state(|st| locate(st).map(|i| (i, st.remove(i)))).flatten()?;
    if lock_stat::on() {
        lock_stat::change_mode(map, entry.mode, Mode::Exclusive);
    }
    if entry.paired {
        map.mark_paired();
    }
    // Pushed exclusive, with a read's dependencies (see `HeldLock::acquired_as`).
    validate::acquire_with(
        map,
        entry.subclass,
        Mode::Exclusive,
        false,
        entry.nest_lock,
        None,
        site,
        true,
    );
    if entry.pin_count > 0 {
        with_state(|st| {
            if let Some(i) = st.find(map.instance()) {
                for _ in 0..entry.pin_count {
                    st.pin(i);
                }
            }
        });
    }
    Some((index, entry))
}

/// Moves a held lock to another subclass of its key without releasing it (the kernel's
/// `lock_set_subclass()`, used when a nesting level changes while a lock stays held, as in
/// the scheduler's `double_lock_balance()`). Later acquisitions depend on the new class.
/// Reports [`AssertKind::NotHeld`] if this thread does not hold `map`; an invalid subclass is
/// reported like on acquire. The graph lock is taken only if the subclass's class is new.
#[track_caller]
pub fn set_held_subclass(map: &LockMap, subclass: u8) {
    let site = Location::caller();
    let class = resolve_class(map, subclass, site);
    let ok = with_state(|st| match st.find(map.instance()) {
        Some(i) => {
            st.set_class(i, class, subclass);
            true
        }
        None => false,
    });
    if ok == Some(false) {
        fail(AssertKind::NotHeld, &map.report_name(), site);
    }
}

/// Pins a held lock: releasing it before [`unpin`] is reported
/// ([`AssertKind::ReleasedWhilePinned`]); kernel `lockdep_pin_lock()`. Pinning a lock that
/// is not held reports [`AssertKind::NotHeld`].
#[track_caller]
pub fn pin(map: &LockMap) {
    let ok = with_state(|st| match st.find(map.instance()) {
        Some(i) => {
            st.pin(i);
            true
        }
        None => false,
    });
    if ok == Some(false) {
        fail(AssertKind::NotHeld, &map.report_name(), Location::caller());
    }
}

/// Undoes one [`pin`]; reports [`AssertKind::BadUnpin`] if the lock is not held or not pinned.
#[track_caller]
pub fn unpin(map: &LockMap) {
    let ok = with_state(|st| st.find(map.instance()).is_some_and(|i| st.unpin(i)));
    if ok == Some(false) {
        fail(AssertKind::BadUnpin, &map.report_name(), Location::caller());
    }
}

/// A held lock in transit from one thread to another (a guard sent to another thread, an
/// unlock done by a different thread than the lock). Created by [`detach`]; `Send`.
#[must_use = "attach it on the thread that now holds the lock"]
#[derive(Debug)]
pub struct DetachedLock {
    entry: HeldLock,
}

/// Removes a held lock from this thread's held stack without a report, so that another
/// thread can [`DetachedLock::attach`] it (for guards that move between threads, which the
/// kernel's per-task model has no counterpart for). Returns `None` and reports
/// [`AssertKind::NotHeld`] if this thread does not hold `map`. No lock taken.
#[track_caller]
pub fn detach(map: &LockMap) -> Option<DetachedLock> {
    let entry = with_state(|st| {
        let i = st.find(map.instance())?;
        Some(st.remove(i))
    })
    .flatten();
    if entry.is_none() {
        fail(AssertKind::NotHeld, &map.report_name(), Location::caller());
    }
    entry.map(|entry| DetachedLock { entry })
}

impl DetachedLock {
    /// Puts the lock on the current thread's held stack. It did not wait for anything on
    /// this thread, so it gets no dependency into it (like a trylock), but later acquisitions
    /// here depend on it, and it must be released here. No lock taken.
    #[track_caller]
    pub fn attach(self) {
        let mut e = self.entry;
        e.trylock = true;
        e.nest_lock = 0;
        e.pin_count = 0;
        e.site = Location::caller();
        with_state(|st| {
            let next = st.next(e);
            st.push(next);
        });
    }
}
