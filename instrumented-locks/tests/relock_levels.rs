//! Release-and-relock (`unlocked`, `unlocked_fair`, `bump`) where the guard is not the whole
//! story: a re-entrant mutex with more than one level held, and a closure that unwinds. The
//! held stack must stay exact: an entry for every lock the thread really holds, and none for
//! one it does not.

#![cfg(feature = "validate")]

mod common;

use common::{assert_reports, held_entries, one_cycle, start, take};
use instrumented_locks::{
    set_enabled, Mutex, MutexGuard, ReentrantMutex, ReentrantMutexGuard, RwLock, RwLockWriteGuard,
};
use lockdep::{held_count, Mode};

/// Whether this thread's held stack has an entry of `m`.
fn holds<T>(m: &ReentrantMutex<T>) -> bool {
    lockdep::is_held(m.lock_map().expect("validate is on"))
}

/// `bump` above the last level releases nothing (lock_api's own bump is a no-op there), so it
/// is no re-lock after the row: no row -> table order, and the stack is unchanged.
#[test]
fn a_bump_above_the_last_level_releases_nothing() {
    let _h = start();
    let table = ReentrantMutex::named(0, "table");
    let row = Mutex::named(0, "row");
    {
        let mut t1 = table.lock();
        let _t2 = table.lock();
        let _r = row.lock();
        ReentrantMutexGuard::bump(&mut t1);
        let names: Vec<_> = held_entries().iter().map(|e| e.0).collect();
        assert_eq!(names, [Some("table"), Some("row")]);
    }
    assert_eq!(held_count(), 0);
    assert_reports!();
    // Its twin: the last level's bump is a real release and a re-lock under the row,
    // validated as one: table -> row, then row -> table.
    {
        let mut t1 = table.lock();
        let _r = row.lock();
        ReentrantMutexGuard::bump(&mut t1);
        let names: Vec<_> = held_entries().iter().map(|e| e.0).collect();
        assert_eq!(names, [Some("row"), Some("table")]);
    }
    assert_eq!(one_cycle(&take()), ["row", "table", "row"]);
    assert_eq!(held_count(), 0);
}

/// `unlocked` above the last level: the mutex stays owned, so its entry stays and the
/// closure's locks depend on it; the inverted order is then reported.
#[test]
fn unlocked_above_the_last_level_keeps_the_entry() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let x = Mutex::named(0, "X");
    {
        let mut g1 = rm.lock();
        let _g2 = rm.lock();
        ReentrantMutexGuard::unlocked(&mut g1, || {
            assert!(rm.is_owned_by_current_thread());
            assert!(holds(&rm));
            drop(x.lock()); // RM -> X: RM is really held
        });
        ReentrantMutexGuard::unlocked_fair(&mut g1, || assert!(holds(&rm)));
        assert_eq!(held_count(), 1);
    }
    assert_eq!(held_count(), 0);
    assert_reports!();
    {
        let _x = x.lock();
        let _g = rm.lock();
    }
    assert_eq!(one_cycle(&take()), ["X", "RM", "X"]);
    // Its twin: at the last level the mutex is really released, so X taken in the closure
    // does not depend on it, and X -> RM afterwards is silent.
    let rm2 = ReentrantMutex::named(0, "RM2");
    let mut g = rm2.lock();
    ReentrantMutexGuard::unlocked(&mut g, || {
        assert!(!holds(&rm2));
        drop(x.lock());
    });
    assert!(holds(&rm2));
    drop(g);
    {
        let _x = x.lock();
        let _g = rm2.lock();
    }
    assert_reports!();
}

/// A nested guard that outlived the outermost one holds the last level: its `unlocked`
/// releases the entry, and its re-lock is validated and tracked by it.
#[test]
fn the_last_level_relocked_by_a_nested_guard_is_tracked() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let x = Mutex::named(0, "X");
    let g1 = rm.lock();
    let mut g2 = rm.lock();
    drop(g1);
    assert!(holds(&rm));
    ReentrantMutexGuard::unlocked(&mut g2, || {
        assert!(!rm.is_owned_by_current_thread());
        assert_eq!(held_count(), 0);
    });
    assert!(holds(&rm));
    drop(x.lock()); // RM -> X
    drop(g2);
    assert_eq!(held_count(), 0);
    assert_reports!();
    {
        let _x = x.lock();
        let _g = rm.lock();
    }
    assert_eq!(one_cycle(&take()), ["X", "RM", "X"]);
}

/// The closure of `unlocked` drops the other level: the re-lock is then the outermost one,
/// validated and tracked by this guard, and the stack has one entry throughout.
#[test]
fn a_relock_after_the_other_levels_went_is_the_outermost() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let mut g1 = rm.lock();
    let g2 = rm.lock();
    let rm = &rm;
    ReentrantMutexGuard::unlocked(&mut g1, move || {
        drop(g2);
        assert!(!rm.is_owned_by_current_thread());
        assert_eq!(held_count(), 0);
    });
    assert_eq!(held_count(), 1);
    drop(g1);
    assert_eq!(held_count(), 0);
    assert!(!rm.is_owned_by_current_thread());
    assert_reports!();
}

/// The subclass of the outermost acquisition survives a relock of the last level, from
/// either guard; above it nothing is relocked.
#[test]
fn a_reentrant_relock_keeps_the_subclass() {
    let _h = start();
    let parent = ReentrantMutex::named(0, "node");
    let child = ReentrantMutex::named(0, "node");
    let _p = parent.lock();
    let mut c1 = child.lock_nested(1);
    ReentrantMutexGuard::bump(&mut c1);
    ReentrantMutexGuard::unlocked(&mut c1, || ());
    let mut c2 = child.lock();
    drop(c1);
    ReentrantMutexGuard::unlocked_fair(&mut c2, || ());
    ReentrantMutexGuard::bump(&mut c2);
    let classes: Vec<String> = lockdep::held_locks()
        .into_iter()
        .map(|l| l.class_name)
        .collect();
    assert_eq!(classes, ["node", "node/1"]);
    drop(c2);
    assert_reports!();
}

/// Validation switched off before the last level's `unlocked`: the entry made while it was on
/// still goes with the level, and the re-lock made while off is not tracked.
#[test]
fn the_last_level_released_while_switched_off_leaves_no_entry() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let mut g = rm.lock();
    set_enabled(false);
    ReentrantMutexGuard::unlocked(&mut g, || ());
    set_enabled(true);
    assert_eq!(held_count(), 0);
    drop(g);
    assert_eq!(held_count(), 0);
    assert_reports!();
}

/// A panic in the closure of `unlocked`, caught: the guard owns the lock again, and the
/// stack says so (the re-lock is validated and pushed on the unwind too), so the locks
/// taken afterwards depend on it.
#[test]
fn a_panic_in_unlocked_leaves_the_lock_held_and_tracked() {
    let _h = start();
    let a = Mutex::named(0, "PA");
    let b = Mutex::named(0, "PB");
    let mut g = a.lock();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        MutexGuard::unlocked(&mut g, || panic!("in the closure"));
    }));
    assert!(r.is_err());
    assert!(a.is_locked());
    assert_eq!(held_count(), 1);
    drop(b.lock()); // PA -> PB
    drop(g);
    assert_eq!(held_count(), 0);
    {
        let _b = b.lock();
        let _a = a.lock();
    }
    assert_eq!(one_cycle(&take()), ["PB", "PA", "PB"]);

    // The same for a write guard (kept in write mode) and a re-entrant guard.
    let w = RwLock::named(0, "PW");
    let mut gw = w.write();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        RwLockWriteGuard::unlocked(&mut gw, || panic!("in the closure"));
    }));
    assert!(r.is_err());
    assert_eq!(
        held_entries().iter().map(|e| e.1).collect::<Vec<_>>(),
        [Mode::Exclusive]
    );
    drop(gw);
    let rm = ReentrantMutex::named(0, "PR");
    let mut gr = rm.lock();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ReentrantMutexGuard::unlocked(&mut gr, || panic!("in the closure"));
    }));
    assert!(r.is_err());
    assert!(holds(&rm));
    drop(gr);
    assert_eq!(held_count(), 0);
    assert_reports!();
}

/// `unlocked` of two guards, one inside the other's: the inner one releases the last level and
/// re-locks it as the outermost, so it tracks the one entry, and the outer guard's re-lock
/// (above the last level) tracks nothing. Every drop order releases the entry exactly once,
/// the outer guard mapped too.
#[test]
fn nested_unlocked_calls_leave_one_guard_tracking_the_entry() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    for outer_first in [true, false] {
        let mut g1 = rm.lock();
        let mut g2 = rm.lock();
        ReentrantMutexGuard::unlocked(&mut g1, || {
            ReentrantMutexGuard::unlocked(&mut g2, || assert_eq!(held_count(), 0));
            assert!(holds(&rm));
        });
        assert_eq!(held_count(), 1);
        if outer_first {
            // Mapped: a mapped guard releases what its guard tracked, whatever the levels.
            drop(ReentrantMutexGuard::map(g1, |v| v));
            assert!(holds(&rm));
            drop(g2);
        } else {
            drop(g2);
            assert!(holds(&rm));
            drop(g1);
        }
        assert_eq!(held_count(), 0);
    }
    assert_reports!();
}

/// Validation switched off around the last level's release by a guard that does not track
/// the entry (a nested guard that outlived the outermost one, `force_unlock` of a forgotten
/// guard's level), or inside a closure that re-takes the mutex: the entry made while it was
/// on goes with the lock all the same, so the next lock is no false recursion.
#[test]
fn an_entry_made_while_on_goes_with_its_lock_while_switched_off() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let m = Mutex::named(0, "M");

    let g1 = rm.lock();
    let g2 = rm.lock();
    drop(g1);
    set_enabled(false);
    drop(g2);
    set_enabled(true);
    assert_eq!(held_count(), 0);
    drop(rm.lock());

    std::mem::forget(rm.lock());
    std::mem::forget(m.lock());
    set_enabled(false);
    // SAFETY: the forgotten guards' levels, which no live guard owns.
    unsafe {
        rm.force_unlock();
        m.force_unlock();
    }
    set_enabled(true);
    assert_eq!(held_count(), 0);
    drop((rm.lock(), m.lock()));

    // The closure of `unlocked` above the last level releases the other level (the entry
    // goes) and re-takes the mutex while switched off (no entry): the outer guard's re-lock
    // is above that level, and tracks nothing.
    let mut g1 = rm.lock();
    let g2 = rm.lock();
    let rm_ref = &rm;
    let g3 = ReentrantMutexGuard::unlocked(&mut g1, move || {
        drop(g2);
        set_enabled(false);
        let g3 = rm_ref.lock();
        set_enabled(true);
        g3
    });
    assert_eq!(held_count(), 0);
    drop(g3);
    drop(g1);
    assert_eq!(held_count(), 0);
    assert_reports!();
}
