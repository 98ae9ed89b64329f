//! Release-and-relock (`unlocked`, `unlocked_fair`, `bump`) where the guard is not the whole
//! story: a re-entrant mutex with more than one level held, and a closure that unwinds. The
//! held stack must stay exact: an entry for every lock the thread really holds, and none for
//! one it does not.

#![cfg(feature = "validate")]

mod common;

use common::{assert_reports, held_entries, one_cycle, start, take};
use instrumented_locks::{
    set_enabled, MappedReentrantMutexGuard, Mutex, MutexGuard, ReentrantMutex, ReentrantMutexGuard,
    RwLock, RwLockWriteGuard,
};
use lockdep::{held_count, Mode};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Whether this thread's held stack has an entry of `m`.
fn holds<T>(m: &ReentrantMutex<T>) -> bool {
    lockdep::is_held(m.lock_map().expect("validate is on"))
}

/// Every level of `rm` is gone, its entry with it: the thread owns none, holds nothing, and
/// takes `rm` again with no report (no stale entry, no false recursion).
#[track_caller]
fn all_levels_gone_and_clean<T: ?Sized>(rm: &ReentrantMutex<T>) {
    assert!(!rm.is_owned_by_current_thread());
    assert_eq!(held_count(), 0);
    drop(rm.lock());
    assert_reports!();
}

/// `x` (named "X") then `rm` ("RM"), after a test recorded RM -> X: the cycle is reported.
#[track_caller]
fn x_then_rm_is_reported<T, U>(x: &Mutex<T>, rm: &ReentrantMutex<U>) {
    {
        let _x = x.lock();
        drop(rm.lock());
    }
    assert_eq!(one_cycle(&take()), ["X", "RM", "X"]);
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
    x_then_rm_is_reported(&x, &rm);
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
    x_then_rm_is_reported(&x, &rm);
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
            // Mapped: its level is above the last one (g2's), so the entry stays.
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

// Mapped re-entrant guards: the level a mapped guard holds follows the same rule as an
// unmapped guard's, whichever guard (mapped or not) holds the last level.

/// The outermost guard, mapped and dropped while a nested guard lives, releases a level above
/// the last one: the entry stays, so the locks taken meanwhile depend on the mutex, and the
/// inverted order is reported.
#[test]
fn a_mapped_outermost_guard_dropped_above_the_last_level_keeps_the_entry() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let x = Mutex::named(0, "X");
    let g1 = rm.lock();
    let g2 = rm.lock();
    drop(ReentrantMutexGuard::map(g1, |v| v));
    assert!(rm.is_owned_by_current_thread());
    assert!(holds(&rm));
    drop(x.lock()); // RM -> X: RM is really held
    drop(g2);
    assert_eq!(held_count(), 0);
    assert!(!rm.is_owned_by_current_thread());
    assert_reports!();
    x_then_rm_is_reported(&x, &rm);
}

/// A mapped nested guard that outlives the outermost one holds the last level: its drop
/// releases the entry (no stale entry, no false recursion at the next lock), and its
/// `unlock_fair` likewise.
#[test]
fn a_mapped_nested_guard_releasing_the_last_level_releases_the_entry() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let g1 = rm.lock();
    let g2 = rm.lock();
    let m2 = ReentrantMutexGuard::map(g2, |v| v);
    drop(g1);
    assert!(holds(&rm));
    assert_eq!(*m2, 0);
    drop(m2);
    all_levels_gone_and_clean(&rm);
    // The fair unlock, of the last level and above it.
    let g1 = rm.lock();
    let g2 = rm.lock();
    let m1 = ReentrantMutexGuard::map(g1, |v| v);
    MappedReentrantMutexGuard::unlock_fair(ReentrantMutexGuard::map(g2, |v| v));
    assert!(holds(&rm));
    MappedReentrantMutexGuard::unlock_fair(m1);
    all_levels_gone_and_clean(&rm);
}

/// A panic in the closure of `map` releases the guard's level as its drop would: above the
/// last level the entry stays; at the last level it goes.
#[test]
fn a_panic_in_the_map_closure_releases_only_its_level() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let g1 = rm.lock();
    let g2 = rm.lock();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(ReentrantMutexGuard::map(g1, |_| -> &i32 {
            panic!("in map")
        }));
    }));
    assert!(r.is_err());
    assert!(rm.is_owned_by_current_thread());
    assert!(holds(&rm));
    // The nested guard holds the last level now; a panic in its mapped guard's `try_map`.
    let m2 = ReentrantMutexGuard::map(g2, |v| v);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(MappedReentrantMutexGuard::try_map(
            m2,
            |_| -> Option<&i32> { panic!("in try_map") },
        ));
    }));
    assert!(r.is_err());
    all_levels_gone_and_clean(&rm);
}

/// A `try_map` that declines gives the guard back with its level and what it tracked; the
/// guard mapped then releases its level by the same rule, whichever guard holds the last one.
#[test]
fn a_declined_try_map_gives_the_level_back() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    let g1 = rm.lock();
    let g2 = rm.lock();
    let g1 = ReentrantMutexGuard::try_map(g1, |_| None::<&i32>).expect_err("declined");
    let (g2, e) =
        ReentrantMutexGuard::try_map_or_err(g2, |_| Err::<&i32, _>("no")).expect_err("declined");
    assert_eq!(e, "no");
    assert!(holds(&rm));
    let m1 = ReentrantMutexGuard::try_map(g1, |v| Some(v)).expect("mapped");
    let m1 = MappedReentrantMutexGuard::try_map(m1, |_| None::<&i32>).expect_err("declined");
    drop(m1); // above the last level: the entry stays
    assert!(holds(&rm));
    let m2 = ReentrantMutexGuard::try_map_or_err(g2, |v| Ok::<_, ()>(v)).expect("mapped");
    let (m2, ()) = MappedReentrantMutexGuard::try_map_or_err(m2, |_| Err::<&i32, _>(()))
        .expect_err("declined");
    drop(m2); // the last level
    all_levels_gone_and_clean(&rm);
}

/// A mapped guard mapped again (to a part of the part) keeps the one level: dropped above the
/// last level it keeps the entry, at the last level it releases it; two mapped guards of one
/// thread in either drop order release the entry exactly once.
#[test]
fn a_map_of_a_mapped_guard_releases_by_the_same_rule() {
    let _h = start();
    let rm = ReentrantMutex::named((1, 2), "RM");
    for outer_first in [true, false] {
        let g1 = rm.lock();
        let g2 = rm.lock();
        let m1 = ReentrantMutexGuard::map(g1, |v| v);
        let m1 = MappedReentrantMutexGuard::map(m1, |v| &v.0);
        let m2 = MappedReentrantMutexGuard::map(ReentrantMutexGuard::map(g2, |v| v), |v| &v.1);
        assert_eq!((*m1, *m2), (1, 2));
        if outer_first {
            drop(m1);
            assert!(holds(&rm));
            drop(m2);
        } else {
            drop(m2);
            assert!(holds(&rm));
            drop(m1);
        }
        assert!(!rm.is_owned_by_current_thread());
        assert_eq!(held_count(), 0);
    }
    drop(rm.lock());
    assert_reports!();
}

/// The rule holds for a mutex of unsized data too (a mapped guard reaches the owner without
/// the data's type).
#[test]
fn a_mapped_guard_of_unsized_data_releases_by_the_same_rule() {
    let _h = start();
    let rm: std::sync::Arc<ReentrantMutex<[u8]>> =
        std::sync::Arc::new(ReentrantMutex::named([1, 2, 3], "RM"));
    let g1 = rm.lock();
    let g2 = rm.lock();
    let m1 = ReentrantMutexGuard::map(g1, |v| &v[1]);
    assert_eq!(*m1, 2);
    drop(m1);
    assert!(lockdep::is_held(rm.lock_map().expect("validate is on")));
    let m2 = ReentrantMutexGuard::map(g2, |v| &v[1..]);
    assert_eq!(*m2, [2, 3]);
    drop(m2);
    all_levels_gone_and_clean(&rm);
}

/// Validation switched off around a mapped guard's release: an entry made while it was on
/// goes with the last level (mapped or not) all the same, and stays above it; a mutex first
/// taken while switched off has no entry, and its mapped guards release nothing.
#[test]
fn a_mapped_guard_follows_the_levels_while_switched_off() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    // The last level released by a mapped nested guard while switched off.
    let g1 = rm.lock();
    let g2 = rm.lock();
    let m2 = ReentrantMutexGuard::map(g2, |v| v);
    drop(g1);
    set_enabled(false);
    drop(m2);
    set_enabled(true);
    assert_eq!(held_count(), 0);
    drop(rm.lock());
    assert_reports!();
    // The mapped outermost guard dropped above the last level while switched off.
    let g1 = rm.lock();
    let g2 = rm.lock();
    set_enabled(false);
    drop(ReentrantMutexGuard::map(g1, |v| v));
    set_enabled(true);
    assert!(holds(&rm));
    drop(g2);
    assert_eq!(held_count(), 0);
    // Taken while switched off, mapped and released while on: no entry, no report.
    set_enabled(false);
    let g1 = rm.lock();
    set_enabled(true);
    let g2 = rm.lock();
    drop(ReentrantMutexGuard::map(g1, |v| v));
    assert_eq!(held_count(), 0);
    drop(ReentrantMutexGuard::map(g2, |v| v));
    assert_eq!(held_count(), 0);
    drop(rm.lock());
    assert_reports!();
}

/// `unlocked` called while switched off, with validation back on before the relock: the relock
/// is validated and tracked, as a `Mutex` guard's is (`set_enabled` acts on acquisitions from
/// then on), so the locks taken after it depend on it: the inverted order is reported.
#[test]
fn unlocked_called_off_and_relocked_on_is_tracked_as_a_mutex_guard_is() {
    let _h = start();
    let plain = Mutex::named(0, "PLAIN");
    let rm = ReentrantMutex::named(0, "RM");
    let x = Mutex::named(0, "X");
    let mut g = plain.lock();
    set_enabled(false);
    MutexGuard::unlocked(&mut g, || set_enabled(true));
    assert!(plain.is_held_by_current_thread());
    drop(g);
    let mut g = rm.lock();
    set_enabled(false);
    ReentrantMutexGuard::unlocked(&mut g, || set_enabled(true));
    assert!(holds(&rm), "the relock made while on is tracked");
    drop(x.lock());
    drop(g);
    assert_eq!(held_count(), 0);
    assert_reports!();
    x_then_rm_is_reported(&x, &rm);
}

/// `force_unlock` by a thread that owns no level leaves the mutex alone, switched off too
/// (lock_api's level count would underflow: a panic in a debug build); on, it is a bad unlock
/// balance.
#[test]
fn force_unlock_without_a_level_leaves_the_mutex_alone_also_switched_off() {
    let _h = start();
    let rm = ReentrantMutex::named(0, "RM");
    set_enabled(false);
    // SAFETY: deliberately without a level: the call must refuse it.
    let off = catch_unwind(AssertUnwindSafe(|| unsafe { rm.force_unlock() }));
    // SAFETY: as above.
    let off_fair = catch_unwind(AssertUnwindSafe(|| unsafe { rm.force_unlock_fair() }));
    set_enabled(true);
    assert!(
        off.is_ok() && off_fair.is_ok(),
        "no panic while switched off"
    );
    assert!(!rm.is_locked());
    assert_reports!();
    // Another thread's level is not released either.
    let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            let _g = rm.lock();
            held.wait();
            release.wait();
        });
        held.wait();
        set_enabled(false);
        // SAFETY: as above.
        unsafe { rm.force_unlock() };
        set_enabled(true);
        assert!(rm.is_locked(), "the other thread's level stays");
        release.wait();
    });
    assert!(!rm.is_locked());
    assert_reports!();
    // SAFETY: as above; on, it is reported.
    unsafe { rm.force_unlock() };
    let r = take();
    assert_eq!(r.len(), 1, "one bad unlock balance: {r:?}");
    assert!(
        matches!(r[0], lockdep::Report::BadUnlockBalance { .. }),
        "a bad unlock balance: {r:?}"
    );
}
