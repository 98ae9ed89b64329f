//! How lockdep sees the lock_api methods beyond lock/unlock: guards made or released by hand
//! (`make_guard_unchecked`, `force_unlock*`, `leak`), the release-and-relock operations
//! (`bump`, `unlocked_fair`), fair unlocks, timed attempts that give up, the recursive and
//! upgradable timed reads, the `Arc` guards, and condvar tracking.

#![cfg(feature = "validate")]

mod common;

use std::time::Duration;

use common::{assert_reports, on_thread, start};
use instrumented_locks::{
    Condvar, Mutex, MutexGuard, ReentrantMutex, RwLock, RwLockUpgradableReadGuard, RwLockWriteGuard,
};
use lockdep::{held_count, held_locks, Mode, Report};

/// A timeout for attempts that must fail (the lock is held): its length decides nothing.
const SHORT: Duration = Duration::from_millis(1);

#[test]
fn force_unlock_releases_what_a_forgotten_guard_left() {
    let _h = start();
    let m = Mutex::named(0, "forgotten");
    std::mem::forget(m.lock());
    assert_eq!(held_count(), 1, "mem::forget keeps the entry");
    // SAFETY: the mutex is locked by the forgotten guard.
    unsafe { m.force_unlock() };
    assert_eq!(held_count(), 0);
    drop(m.lock());
    // Locked through `raw()`, unlocked by force: nothing tracked, nothing reported.
    // SAFETY: the raw lock is taken here and released below, with no guard in between.
    unsafe { lock_api::RawMutex::lock(m.raw()) };
    // SAFETY: locked just above, by this thread, without a guard.
    unsafe { m.force_unlock_fair() };
    assert_reports!();
}

/// `force_unlock` of a lock nobody holds (its raw lock is not locked) is a bad unlock
/// balance at the caller's line, and leaves the lock usable.
#[test]
fn force_unlock_of_an_unlocked_lock_is_a_bad_unlock_balance() {
    let _h = start();
    let m = Mutex::named(0u32, "never locked");
    let here = std::panic::Location::caller();
    // SAFETY: deliberately broken contract: lockdep must report it, and the raw lock, which
    // is not locked, is left alone.
    unsafe { m.force_unlock() };
    let r = assert_reports!(Report::BadUnlockBalance { .. });
    let Report::BadUnlockBalance { releasing, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!(
        (releasing.site.file(), releasing.site.line()),
        (file!(), here.line() + 3)
    );
    assert!(!m.is_locked());
    drop(m.lock());
    assert!(m.try_lock().is_some());
    let r = ReentrantMutex::named(0u32, "never owned");
    // SAFETY: as above.
    unsafe { r.force_unlock() };
    assert_reports!(Report::BadUnlockBalance { .. });
    assert!(!r.is_locked());
    drop(r.lock());
    let l = RwLock::named(0u32, "never read");
    // SAFETY: as above.
    unsafe { l.force_unlock_read() };
    assert_reports!(Report::BadUnlockBalance { .. });
    drop(l.write());
    assert_reports!();
}

/// A guard forgotten on one thread and force-unlocked on another: the entry leaves the
/// forgetting thread's held stack exactly, so its later locks get no dependency from it and
/// the lock's drop reports nothing.
#[test]
fn force_unlock_on_another_thread_releases_the_forgetting_threads_entry() {
    let _h = start();
    let m = std::sync::Arc::new(Mutex::named(0u32, "forgotten elsewhere"));
    std::mem::forget(m.lock());
    let m2 = m.clone();
    // SAFETY: the mutex is locked by the guard forgotten above; no live guard owns it.
    on_thread(move || unsafe { m2.force_unlock() });
    assert!(!m.is_locked());
    let n = Mutex::named(0u8, "after");
    drop(n.lock());
    assert!(!m.is_held_by_current_thread());
    assert_eq!(held_count(), 0);
    assert!(
        lockdep::dependencies().is_empty(),
        "{:?}",
        lockdep::dependencies()
    );
    drop(m);
    assert_reports!();
}

#[test]
fn make_guard_unchecked_adopts_a_forgotten_entry_and_nothing_else() {
    let _h = start();
    let m = Mutex::named(0, "adopted");
    std::mem::forget(m.lock());
    // SAFETY: the forgotten guard's holding, owned by no live guard.
    let g = unsafe { m.make_guard_unchecked() };
    drop(g);
    assert_eq!(held_count(), 0);
    // SAFETY: locked through `raw()` with no guard: the made guard owns that holding.
    unsafe { lock_api::RawMutex::lock(m.raw()) };
    // SAFETY: as above.
    drop(unsafe { m.make_guard_unchecked() });
    assert_reports!();
    let l = RwLock::named(0, "adopted rwlock");
    std::mem::forget(l.read());
    // SAFETY: the forgotten read guard's holding.
    drop(unsafe { l.make_read_guard_unchecked() });
    assert_eq!(held_count(), 0);
    assert_reports!();
}

/// A leaked guard's lock stays locked for good, and held by this thread for lockdep: a
/// timed re-lock is reported as recursive locking (it would wait for itself), and the thread
/// exits holding it (not reported with `send_guard`: guards are movable then, and a lock held
/// at exit may be a guard that lives on elsewhere).
#[test]
fn leak_keeps_the_entry() {
    let _h = start();
    let m: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named(0, "leaked")));
    on_thread(move || {
        *MutexGuard::leak(m.lock()) += 1;
        assert!(m.try_lock_for(SHORT).is_none());
    });
    if cfg!(feature = "send_guard") {
        assert_reports!(Report::RecursiveLocking(_));
    } else {
        assert_reports!(Report::RecursiveLocking(_), Report::LockHeldAtExit { .. });
    }
}

/// `bump` and `unlocked_fair` release the lock and take it again: the re-lock is validated
/// under the locks held then, so doing it under a lock taken later inverts the order.
#[test]
fn bump_and_unlocked_fair_revalidate_the_relock() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    let mut ga = a.lock();
    MutexGuard::bump(&mut ga); // nothing else held: silent
    let gb = b.lock(); // A -> B
    assert_reports!();
    MutexGuard::bump(&mut ga); // A re-taken under B: B -> A
    assert_reports!(Report::CircularDependency(_));
    drop(gb);
    MutexGuard::unlocked_fair(&mut ga, || ());
    MutexGuard::unlock_fair(ga);
    assert_eq!(held_count(), 0);
    assert_reports!();
}

#[test]
fn timed_attempts_that_give_up_leave_nothing_held() {
    let _h = start();
    let m = Mutex::named(0, "held elsewhere");
    let l = RwLock::named(0, "written elsewhere");
    let r = ReentrantMutex::named(0, "owned elsewhere");
    std::thread::scope(|s| {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (m, l, r) = (&m, &l, &r);
        s.spawn(move || {
            let _g = (m.lock(), l.write(), r.lock());
            held_tx.send(()).unwrap();
            let _ = done_rx.recv();
        });
        held_rx.recv().unwrap();
        assert!(m.try_lock_for(SHORT).is_none());
        assert!(l.try_read_recursive_for(SHORT).is_none());
        assert!(l.try_upgradable_read_for(SHORT).is_none());
        assert!(r.try_lock_for(SHORT).is_none());
        assert_eq!(held_count(), 0);
        drop(done_tx);
    });
    assert_reports!();
}

/// The timed reads keep their modes: a recursive read under a read is silent, a second
/// plain read is recursive locking (a queued writer would deadlock the thread).
#[test]
fn timed_reads_keep_their_modes() {
    let _h = start();
    let l = RwLock::named(0, "L");
    let first = l.read();
    let recursive = l.try_read_recursive_for(Duration::from_secs(20)).unwrap();
    assert_reports!();
    let second = l.try_read_for(Duration::from_secs(20)).unwrap();
    assert_reports!(Report::RecursiveLocking(_));
    drop((first, recursive, second));
    assert_eq!(held_count(), 0);
}

/// Upgrades change the entry's mode: an upgradable read is `Upgradable`, a successful
/// upgrade `Exclusive`, and the end of `with_upgraded` / a downgrade upgradable or read again.
#[test]
fn upgrades_and_downgrades_change_the_mode_in_place() {
    let _h = start();
    let l = RwLock::named(0, "U");
    let mode = || held_locks().last().map(|d| d.mode);
    let mut u = l.upgradable_read();
    assert_eq!(mode(), Some(Mode::Upgradable));
    assert_eq!(u.try_with_upgraded(|v| *v += 1), Some(()));
    assert_eq!(u.with_upgraded(|v| *v + 1), 2);
    assert_eq!(
        u.try_with_upgraded_for(Duration::from_secs(20), |v| *v),
        Some(1)
    );
    assert_eq!(mode(), Some(Mode::Upgradable));
    let w = RwLockUpgradableReadGuard::try_upgrade(u).ok().unwrap();
    assert_eq!(mode(), Some(Mode::Exclusive));
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    assert_eq!(mode(), Some(Mode::Upgradable));
    let w = RwLockUpgradableReadGuard::upgrade(u);
    l.assert_held_write();
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(mode(), Some(Mode::Read));
    drop(r);
    assert_eq!(held_count(), 0);
    assert_reports!();
}

/// Re-entrant levels: only the outermost is tracked; forcing a nested level open keeps the
/// entry, forcing the last one releases it.
#[test]
fn reentrant_force_unlock_releases_only_the_last_level() {
    let _h = start();
    let r = ReentrantMutex::named(0, "R");
    let outer = r.lock();
    std::mem::forget(r.lock());
    // SAFETY: the forgotten nested guard's level.
    unsafe { r.force_unlock() };
    assert!(
        r.is_held_by_current_thread(),
        "the outer level is still held"
    );
    drop(outer);
    assert_eq!(held_count(), 0);
    std::mem::forget(r.lock());
    // SAFETY: the forgotten outermost guard's level.
    unsafe { r.force_unlock() };
    assert_eq!(held_count(), 0);
    assert_reports!();
}

/// With lockdep's condvar tracking on, waiting while holding `L` and notifying only after
/// taking `L` is reported without the hang (the waiter here times out instead).
#[test]
fn condvar_tracking_reports_wait_under_a_lock_the_notifier_needs() {
    let _h = start();
    struct Tracking;
    impl Drop for Tracking {
        fn drop(&mut self) {
            lockdep::set_condvar_tracking(false);
        }
    }
    lockdep::set_condvar_tracking(true);
    let _off = Tracking;
    let l = Mutex::named(0, "L");
    let m = Mutex::named(false, "M");
    let cv = Condvar::new();
    {
        let _l = l.lock();
        let mut g = m.lock();
        assert!(cv.wait_for(&mut g, SHORT).timed_out()); // L -> cv
    }
    assert_reports!();
    {
        let _l = l.lock();
        cv.notify_one(); // cv -> L: the cycle L -> cv -> L
    }
    assert_reports!(Report::CircularDependency(_));
}

#[cfg(feature = "arc_lock")]
#[test]
fn arc_guards_are_tracked_like_borrowed_ones() {
    use instrumented_locks::{ArcMutexGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard};
    use std::sync::Arc;
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    let b = Arc::new(RwLock::named(0, "B"));
    {
        let _a = a.lock_arc();
        let _b = b.write_arc();
    }
    {
        let _b = b.read_arc();
        let _a = a.try_lock_arc_for(Duration::from_secs(20)).unwrap();
    }
    assert_reports!(Report::CircularDependency(_));
    let g = a.lock_arc();
    assert!(Arc::ptr_eq(ArcMutexGuard::mutex(&g), &a));
    let back = ArcMutexGuard::into_arc(g);
    assert!(Arc::ptr_eq(&back, &a) && held_count() == 0);
    let u = b.upgradable_read_arc();
    let w = ArcRwLockUpgradableReadGuard::upgrade(u);
    let r = ArcRwLockWriteGuard::downgrade(w);
    drop(r);
    assert_eq!(held_count(), 0);
    assert_reports!();
}

/// A lock's data whose `Debug` takes another lock.
struct LocksOnFormat<'a>(&'a Mutex<u32>);

impl std::fmt::Debug for LocksOnFormat<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", *self.0.lock())
    }
}

/// `{:?}` of a lock formats its data under the lock's own validated try-lock: a lock the
/// data's `Debug` takes depends on it, so the other order is reported (a thread formatting
/// `M` while another holds `N` and waits for `M` deadlocks); and formatting a lock this
/// thread already holds reports nothing (`<locked>`, or a re-entrant level, or a shared read).
#[test]
fn debug_formats_the_data_under_a_validated_try_lock() {
    let _h = start();
    let n = Mutex::named(7, "N");
    let m = Mutex::named(LocksOnFormat(&n), "M");
    assert_eq!(format!("{m:?}"), "Mutex { data: 7 }");
    assert_eq!(held_count(), 0);
    assert_reports!();
    {
        let _n = n.lock();
        drop(m.lock());
    }
    assert_eq!(common::one_cycle(&common::take()), ["N", "M", "N"]);

    let rw = RwLock::named(LocksOnFormat(&n), "RW");
    let re = ReentrantMutex::named(LocksOnFormat(&n), "RE");
    let p = Mutex::named(1, "P");
    {
        let _p = p.lock();
        assert_eq!(format!("{p:?}"), "Mutex { data: <locked> }");
        let _r = rw.read();
        assert_eq!(format!("{rw:?}"), "RwLock { data: 7 }");
        let _e = re.lock();
        assert_eq!(format!("{re:?}"), "ReentrantMutex { data: 7 }");
    }
    assert_eq!(held_count(), 0);
    assert_reports!();
}
