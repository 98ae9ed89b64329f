//! The wrappers feed lockdep correctly: order inversions, recursion, reader modes, trylock,
//! nesting annotations, classes, assertions, and locks freed while held.

#![cfg(feature = "validate")]

mod common;

use common::{
    assert_reports, cycles, expect_panic, on_thread, one_cycle, recursive, same_class, start, take,
};
use instrumented_locks::{set_enabled, RwLockWriteGuard};
use instrumented_locks::{Mutex, MutexGuard, ReentrantMutex, RwLock, RwLockUpgradableReadGuard};
use lockdep::{held_count, AssertKind, DynamicKey, LockClassKey, Report};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn abba_between_two_mutexes_is_a_cycle_in_one_thread() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    assert!(take().is_empty());
    {
        let _gb = b.lock();
        let _ga = a.lock();
    }
    assert_eq!(one_cycle(&take()), ["B", "A", "B"]);
    // The rejected dependency was not recorded: A then B is still accepted, silently.
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    assert!(take().is_empty());
}

#[test]
fn abba_across_threads_on_arc_mutexes() {
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    let b = Arc::new(Mutex::named(0, "B"));
    let (a2, b2) = (a.clone(), b.clone());
    on_thread(move || {
        let _ga = a2.lock();
        let _gb = b2.lock();
    });
    on_thread(move || {
        let _gb = b.lock();
        let _ga = a.lock();
    });
    assert_eq!(one_cycle(&take()), ["B", "A", "B"]);
}

#[test]
fn relocking_a_held_mutex_is_reported_before_blocking() {
    let _h = start();
    let a = Mutex::named(0, "A");
    common::set_panicking(true);
    let g = a.lock();
    expect_panic(|| drop(a.lock()));
    drop(g);
    common::set_panicking(false);
    let r = take();
    assert_eq!(recursive(&r), 1, "{r:#?}");
    assert_eq!(held_count(), 0);
    // After the unlock, another thread may take it silently.
    let a = Arc::new(a);
    let a2 = a.clone();
    on_thread(move || drop(a2.lock()));
    assert!(take().is_empty());
}

#[test]
fn try_lock_follows_the_lockdep_rule() {
    let _h = start();
    // (a) lock A; try_lock B -> ok: no A->B, so B then A is silent.
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    {
        let _ga = a.lock();
        let _gb = b.try_lock().expect("free");
    }
    {
        let _gb = b.lock();
        let _ga = a.lock();
    }
    assert!(take().is_empty());
    // (b) try_lock C -> ok; lock D (C->D); then D, C is a cycle.
    let c = Mutex::named(0, "C");
    let d = Mutex::named(0, "D");
    {
        let _gc = c.try_lock().expect("free");
        let _gd = d.lock();
    }
    {
        let _gd = d.lock();
        let _gc = c.lock();
    }
    assert_eq!(one_cycle(&take()), ["D", "C", "D"]);
    // A failed try-lock records nothing.
    let g = a.lock();
    let a_ref = &a;
    std::thread::scope(|s| {
        s.spawn(|| assert!(a_ref.try_lock().is_none()));
    });
    drop(g);
    assert_eq!(held_count(), 0);
}

#[test]
fn timed_lock_that_times_out_leaves_nothing_held() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let g = a.lock();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(a.try_lock_for(Duration::from_millis(1)).is_none());
            assert_eq!(held_count(), 0);
            let g2 = a.try_lock_until(std::time::Instant::now());
            assert!(g2.is_none());
            assert_eq!(held_count(), 0);
        });
    });
    drop(g);
    let g = a.try_lock_for(Duration::from_secs(1)).expect("free");
    assert!(a.is_held_by_current_thread());
    drop(g);
    assert!(take().is_empty());
}

#[test]
fn rwlock_reader_modes() {
    let _h = start();
    let l = RwLock::named(0, "L");
    // read -> read_recursive: silent.
    {
        let _r1 = l.read();
        let _r2 = l.read_recursive();
    }
    assert!(take().is_empty());
    // read -> read: reported (a queued writer would deadlock it).
    {
        let _r1 = l.read();
        let _r2 = l.read();
    }
    assert_eq!(recursive(&take()), 1);
    // read -> write and write -> read would block for real: panic on the report.
    common::set_panicking(true);
    {
        let _r = l.read();
        expect_panic(|| drop(l.write()));
    }
    {
        let _w = l.write();
        expect_panic(|| drop(l.read()));
        expect_panic(|| drop(l.read_recursive()));
    }
    common::set_panicking(false);
    assert_eq!(recursive(&take()), 3);
    assert_eq!(held_count(), 0);
}

#[test]
fn recursive_readers_make_no_false_cycle() {
    let _h = start();
    let a = RwLock::named(0, "A");
    let b = Mutex::named(0, "B");
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ra = a.read_recursive();
            let _gb = b.lock();
        });
    });
    {
        let _gb = b.lock();
        let _ra = a.read_recursive();
    }
    // A(recursive read) -> B and B -> A(recursive read): no strong cycle.
    assert!(take().is_empty());
    {
        let _gb = b.lock();
        let _wa = a.write();
    }
    // B -> A(write) is EN and A(reader) -> B is SN: a strong cycle, reported.
    assert_eq!(cycles(&take()), 1);
}

#[test]
fn upgradable_read_is_a_non_recursive_reader() {
    let _h = start();
    let a = RwLock::named(0, "A");
    let b = Mutex::named(0, "B");
    {
        let _ua = a.upgradable_read();
        let _gb = b.lock();
    }
    // B then read_recursive(A): upgradable and recursive readers never block each other.
    {
        let _gb = b.lock();
        let _ra = a.read_recursive();
    }
    assert!(take().is_empty());
    // B then upgradable(A): a second upgradable waits for the first one: a cycle.
    {
        let _gb = b.lock();
        let _ua = a.upgradable_read();
    }
    assert_eq!(cycles(&take()), 1);
    // Two upgradable reads in one thread would deadlock: reported before blocking.
    common::set_panicking(true);
    {
        let _u = a.upgradable_read();
        expect_panic(|| drop(a.upgradable_read()));
    }
    common::set_panicking(false);
    assert_eq!(recursive(&take()), 1);
}

#[test]
fn blocking_upgrade_is_validated_with_the_locks_held() {
    let _h = start();
    let a = RwLock::named(0, "A");
    let b = Mutex::named(0, "B");
    // A(upgradable) -> B, then the upgrade while B is held: B -> A, waiting for A's readers.
    // No other thread can hold A upgradable meanwhile: no cycle.
    let u = a.upgradable_read();
    let gb = b.lock();
    let w = RwLockUpgradableReadGuard::upgrade(u);
    assert!(take().is_empty());
    a.assert_held_write();
    drop(gb);
    // Downgrade keeps the lock held, now as a reader, with no report.
    let r = RwLockWriteGuard::downgrade(w);
    a.assert_held_read();
    let r2 = a.read_recursive();
    drop((r, r2));
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);
    // A reader of A that takes B: A(read) -> B. The upgrade under B waits for such a
    // reader, which waits for B: a cycle, reported when the reader takes B.
    drop((a.read(), b.lock()));
    assert_eq!(one_cycle(&take()), ["A", "B", "A"]);
}

#[test]
fn try_upgrade_and_downgrades_keep_the_held_stack_exact() {
    let _h = start();
    let a = RwLock::named(0, "A");
    let u = a.upgradable_read();
    let w = RwLockUpgradableReadGuard::try_upgrade(u).unwrap_or_else(|_| panic!("no readers"));
    a.assert_held_write();
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    a.assert_held_read();
    let r = RwLockUpgradableReadGuard::downgrade(u);
    a.assert_held_read();
    assert_eq!(held_count(), 1);
    drop(r);
    let u = a.upgradable_read();
    let w = RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_secs(1))
        .unwrap_or_else(|_| panic!("no readers"));
    a.assert_held_write();
    drop(w);
    assert_eq!(held_count(), 0);
    assert!(take().is_empty());
}

/// The kernel's strict nesting rule for one test: these tests check the annotations it asks
/// for (lockdep's default, instance order, accepts any fixed order of two instances).
struct Strict(lockdep::Nesting);

impl Strict {
    fn on() -> Strict {
        Strict(lockdep::set_nesting(lockdep::Nesting::Strict))
    }
}

impl Drop for Strict {
    fn drop(&mut self) {
        lockdep::set_nesting(self.0);
    }
}

#[test]
fn same_class_nesting_needs_an_annotation() {
    let _h = start();
    let _strict = Strict::on();
    let nodes: Vec<Mutex<u32>> = (0..3).map(|i| Mutex::named(i, "node")).collect();
    {
        let _p = nodes[0].lock();
        let _c = nodes[1].lock();
    }
    assert_eq!(same_class(&take()), 1);
    {
        let _p = nodes[0].lock();
        let _c = nodes[1].lock_nested(1);
    }
    assert!(take().is_empty());
    // Inverted subclasses between two classes' instances are a cycle.
    let other = Mutex::named(0, "other");
    {
        let _c = nodes[1].lock_nested(1);
        let _o = other.lock();
    }
    {
        let _o = other.lock();
        let _c = nodes[2].lock_nested(1);
    }
    assert_eq!(cycles(&take()), 1);
}

#[test]
fn nest_lock_allows_any_order_under_the_outer_lock() {
    let _h = start();
    let table = Mutex::named((), "table");
    let rows: Vec<Mutex<u32>> = (0..3).map(|i| Mutex::named(i, "row")).collect();
    {
        let t = table.lock();
        let _r2 = rows[2].lock_nest_lock(&t);
        let _r0 = rows[0].lock_nest_lock(&t);
        let _r1 = rows[1].lock_nest_lock(&t);
    }
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);
}

/// A release-and-relock (`unlocked`, `bump`, a condvar wait) takes the lock again with the
/// subclass and the nest lock of its first acquisition: the guard keeps only the mode, and
/// the relock asks the held-lock entry for the rest (`lockdep::relock_of`). Taken again as
/// subclass 0 or without its nest lock, the lock would be a second instance of a held class
/// with no annotation (reported under the strict rule).
#[test]
fn a_relock_keeps_the_subclass_and_the_nest_lock() {
    use instrumented_locks::{Condvar, RwLockReadGuard};
    let _h = start();
    let _strict = Strict::on();
    let nodes: Vec<Mutex<u32>> = (0..2).map(|i| Mutex::named(i, "node")).collect();
    let cv = Condvar::new();
    {
        let _p = nodes[0].lock();
        let mut c = nodes[1].lock_nested(1);
        MutexGuard::unlocked(&mut c, || {});
        MutexGuard::bump(&mut c);
        assert!(cv.wait_for(&mut c, Duration::from_millis(1)).timed_out());
        MutexGuard::unlocked_fair(&mut c, || {});
    }
    assert!(take().is_empty());

    let table = Mutex::named((), "table");
    let rows: Vec<Mutex<u32>> = (0..2).map(|i| Mutex::named(i, "row")).collect();
    {
        let t = table.lock();
        let _r0 = rows[0].lock_nest_lock(&t);
        let mut r1 = rows[1].lock_nest_lock(&t);
        MutexGuard::unlocked(&mut r1, || {});
        assert!(cv.wait_for(&mut r1, Duration::from_millis(1)).timed_out());
        MutexGuard::bump(&mut r1);
    }
    assert!(take().is_empty());

    let rw: Vec<RwLock<u32>> = (0..2).map(|i| RwLock::named(i, "rw")).collect();
    {
        let _p = rw[0].read();
        let mut c = rw[1].read_nested(1);
        RwLockReadGuard::unlocked(&mut c, || {});
    }
    {
        let _p = rw[0].read();
        let mut w = rw[1].write_nested(1);
        RwLockWriteGuard::unlocked(&mut w, || {});
    }
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);

    // The fault twin: the same shapes with no annotation are reported.
    {
        let _p = nodes[0].lock();
        let _c = nodes[1].lock();
    }
    assert_eq!(same_class(&take()), 1);
}

#[test]
fn explicit_classes() {
    let _h = start();
    let _strict = Strict::on();
    static KEY: LockClassKey = LockClassKey::new();
    let a = Mutex::with_class(0, &KEY, "keyed");
    let b = Mutex::with_class(0, &KEY, "keyed");
    {
        let _a = a.lock();
        let _b = b.lock();
    }
    assert_eq!(same_class(&take()), 1, "one key, one class");

    let key = DynamicKey::new("dyn");
    let c = RwLock::with_dynamic_key(0, &key, "dyn-lock");
    let d = RwLock::with_dynamic_key(0, &key, "dyn-lock");
    {
        let _c = c.write();
        let _d = d.write();
    }
    assert_eq!(same_class(&take()), 1);
    drop((c, d));

    let unregistered = DynamicKey::new_unregistered("never");
    let e = Mutex::with_dynamic_key(0, &unregistered, "orphan");
    drop(e.lock());
    let r = take();
    assert!(
        r.iter().any(|r| matches!(r, Report::KeyMisuse { .. })),
        "{r:#?}"
    );
}

#[test]
fn assertions() {
    let _h = start();
    let m = Mutex::named(0, "M");
    let l = RwLock::named(0, "L");
    let re = ReentrantMutex::named(0, "R");
    m.assert_not_held();
    l.assert_not_held();
    re.assert_not_held();
    assert!(take().is_empty());
    m.assert_held();
    l.assert_held();
    re.assert_held();
    let r = take();
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|r| matches!(
        r,
        Report::AssertionFailed {
            kind: AssertKind::NotHeld,
            ..
        }
    )));
    let _g = m.lock();
    let _w = l.read();
    let _re = re.lock();
    m.assert_held();
    l.assert_held();
    l.assert_held_read();
    re.assert_held();
    assert!(take().is_empty());
    m.assert_not_held();
    l.assert_held_write();
    let r = take();
    assert!(matches!(
        r[..],
        [
            Report::AssertionFailed {
                kind: AssertKind::Held,
                ..
            },
            Report::AssertionFailed {
                kind: AssertKind::WrongMode,
                ..
            }
        ]
    ));
}

#[test]
fn mutex_dropped_while_held_is_reported() {
    let _h = start();
    {
        let m = Mutex::named(0, "doomed");
        std::mem::forget(m.lock());
        assert_eq!(held_count(), 1);
        // Dropped in place at the end of the scope. (`drop(m)` would first *move* the
        // unborrowed mutex, and a moved lock is another instance to lockdep.)
    }
    assert_reports!(Report::HeldLockFreed { .. });
    assert_eq!(held_count(), 0);
}

#[test]
fn reentrant_mutex_tracks_only_the_outermost_lock() {
    let _h = start();
    let r = ReentrantMutex::named(0, "R");
    let m = Mutex::named(0, "M");
    {
        let g1 = r.lock();
        let g2 = r.lock();
        let g3 = r.try_lock().expect("owner may re-lock");
        assert_eq!(held_count(), 1);
        drop((g1, g2, g3));
    }
    assert_eq!(held_count(), 0);
    assert!(take().is_empty());
    // Its order against other locks is still checked.
    {
        let _g = r.lock();
        let _m = m.lock();
    }
    {
        let _m = m.lock();
        let _g = r.lock();
    }
    assert_eq!(one_cycle(&take()), ["M", "R", "M"]);
}

/// The outermost guard dropped before a nested one: the thread still holds the mutex, and so
/// does its held stack, until the nested guard (the last level) goes. A lock taken meanwhile
/// depends on it, and the inverted order is reported.
#[test]
fn a_nested_reentrant_guard_that_outlives_the_outermost_keeps_the_mutex_held() {
    let _h = start();
    let r = ReentrantMutex::named(0, "R");
    let m = Mutex::named(0, "M");
    let outer = r.lock();
    let nested = r.lock();
    drop(outer);
    assert_eq!(held_count(), 1);
    assert!(lockdep::is_held(r.lock_map().unwrap()));
    drop(m.lock()); // R -> M, with only the nested guard holding R
    drop(nested);
    assert_eq!(held_count(), 0);
    assert!(take().is_empty());
    {
        let _m = m.lock();
        let _g = r.lock();
    }
    assert_eq!(one_cycle(&take()), ["M", "R", "M"]);
    // A forgotten outermost guard's level, released by `force_unlock`, still ends the entry.
    std::mem::forget(r.lock());
    let nested = r.lock();
    drop(nested);
    assert_eq!(held_count(), 1);
    // SAFETY: the forgotten guard's level, which no live guard owns.
    unsafe { r.force_unlock() };
    assert_eq!(held_count(), 0);
    assert!(take().is_empty());
}

#[test]
fn unlocked_releases_and_revalidates() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    let mut ga = a.lock();
    MutexGuard::unlocked(&mut ga, || {
        assert_eq!(held_count(), 0);
        // B taken while A is really unlocked: no A -> B.
        drop(b.lock());
    });
    assert!(a.is_held_by_current_thread());
    drop(ga);
    {
        let _gb = b.lock();
        let _ga = a.lock();
    }
    assert!(take().is_empty());
    // Re-locking A inside `unlocked` of B's guard, with B... B is released there: silent.
    let mut gb = b.lock();
    MutexGuard::unlocked(&mut gb, || drop(a.lock()));
    drop(gb);
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);
}

#[test]
fn runtime_switch_stops_tracking_and_balances_guards() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    let ga = a.lock(); // tracked
    set_enabled(false);
    let gb = b.lock(); // not tracked
    assert_eq!(held_count(), 1);
    set_enabled(true);
    drop(gb); // releases nothing
    drop(ga); // releases A
    assert_eq!(held_count(), 0);
    set_enabled(false);
    {
        let _gb = b.lock();
        let _ga = a.lock();
    }
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    set_enabled(true);
    assert!(
        take().is_empty(),
        "no bad unlock balance, no reports while off"
    );
}

#[test]
fn lock_maps_and_held_queries() {
    let _h = start();
    let m = Mutex::named(0, "M");
    let l = RwLock::named(0, "L");
    let r = ReentrantMutex::named(0, "R");
    let (mm, lm, rm) = (
        m.lock_map().unwrap(),
        l.lock_map().unwrap(),
        r.lock_map().unwrap(),
    );
    assert_eq!((mm.name(), lm.name(), rm.name()), ("M", "L", "R"));
    let _g = m.lock();
    let _w = l.write();
    let _re = r.lock();
    assert!(lockdep::is_held(mm) && lockdep::is_held(lm) && lockdep::is_held(rm));
    assert!(m.is_held_by_current_thread() && l.is_held_by_current_thread());
    // The guards expose the same maps as nest locks.
    use instrumented_locks::HeldGuard;
    assert!(std::ptr::eq(_g.lock_map().unwrap(), mm));
    assert!(std::ptr::eq(_w.lock_map().unwrap(), lm));
    assert!(std::ptr::eq(_re.lock_map().unwrap(), rm));
    // An unnamed lock reads as its kind, protected type and construction site.
    let unnamed = Mutex::new(0u8);
    let map = unnamed.lock_map().unwrap();
    assert!(!map.is_named());
    let class = map.class_name();
    assert!(
        class.starts_with("Mutex<u8>@") && class.contains("validation.rs"),
        "{class}"
    );
    assert!(take().is_empty());
}

#[test]
fn reentrant_and_std_flavoured_explicit_classes() {
    let _h = start();
    let _strict = Strict::on();
    static RKEY: LockClassKey = LockClassKey::new();
    let r1 = ReentrantMutex::with_class(0, &RKEY, "rkey");
    let r2 = ReentrantMutex::with_class(0, &RKEY, "rkey");
    {
        let _a = r1.lock();
        let _b = r2.lock();
    }
    assert_eq!(same_class(&take()), 1);
    {
        let _a = r1.lock();
        let _b = r2.lock_nested(1);
    }
    assert!(take().is_empty());
    let key = DynamicKey::new("rdyn");
    let r3 = ReentrantMutex::with_dynamic_key(0, &key, "rdyn");
    drop(r3.lock());
    assert!(take().is_empty());

    use instrumented_locks::std_sync;
    static SKEY: LockClassKey = LockClassKey::new();
    let s1 = std_sync::Mutex::with_class(0, &SKEY, "skey");
    let s2 = std_sync::RwLock::with_class(0, &SKEY, "skey");
    {
        let _a = s1.lock().unwrap();
        s1.assert_held();
        s2.assert_not_held();
        let _b = s2.write().unwrap();
        s2.assert_held();
    }
    assert_eq!(same_class(&take()), 1, "one key, one class");
    s1.assert_not_held();
    s2.assert_held();
    assert_eq!(take().len(), 1);
    assert_eq!(s1.lock_map().unwrap().name(), "skey");
    // std-flavoured guards serve as nest locks too.
    let rows: Vec<Mutex<u8>> = (0..2).map(|_| Mutex::named(0, "row")).collect();
    {
        let table = s2.read().unwrap();
        let _r1 = rows[1].lock_nest_lock(&table);
        let _r0 = rows[0].lock_nest_lock(&table);
    }
    {
        let table = s1.lock().unwrap();
        let _r0 = rows[0].lock_nest_lock(&table);
        let _r1 = rows[1].lock_nest_lock(&table);
    }
    assert!(take().is_empty());
    assert_eq!(
        std_sync::RwLock::named(0, "sr").lock_map().unwrap().name(),
        "sr"
    );
}

#[test]
fn with_upgraded_validates_and_returns_to_a_reader() {
    let _h = start();
    let a = RwLock::named(0, "A");
    let b = Mutex::named(0, "B");
    let mut u = a.upgradable_read();
    let got = u.try_with_upgraded(|v| {
        a.assert_held_write();
        *v += 1;
        *v
    });
    assert_eq!(got, Some(1));
    a.assert_held_read();
    // A reader of A takes B somewhere (A(read) -> B): an upgrade under B waits for it.
    drop((a.read(), b.lock()));
    let gb = b.lock();
    // Upgrading while B (taken after A) is held: B -> A, the inverse of A -> B.
    let got = u.with_upgraded(|v| {
        *v += 1;
        *v
    });
    assert_eq!(got, 2);
    assert_eq!(one_cycle(&take()), ["B", "A", "B"]);
    a.assert_held_read();
    drop((gb, u));
    assert_eq!(held_count(), 0);
    // try_with_upgraded fails (and changes nothing) while a reader is present.
    let mut u = a.upgradable_read();
    let r = a.read_recursive();
    assert_eq!(u.try_with_upgraded(|v| *v), None);
    a.assert_held_read();
    drop((r, u));
    assert!(take().is_empty());
}

#[test]
fn panic_policy_reports_before_blocking_and_leaves_state_clean() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    lockdep::set_policy(lockdep::Policy::Panic);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _gb = b.lock();
        let _ga = a.lock();
    }));
    let msg = r.expect_err("the report panics");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("circular locking dependency"), "{text}");
    assert_eq!(held_count(), 0);
    assert!(!a.is_locked() && !b.is_locked());
    // The rejected dependency was not recorded.
    let _ga = a.lock();
    let _gb = b.lock();
}

/// A timed upgrade that gives up leaves the upgradable read as it was: at its place on the
/// held stack, acquired where it was (reports name that line, not the upgrade's). Before, the
/// entry came back on top, "acquired" at the try's line.
#[test]
fn a_timed_upgrade_that_gives_up_leaves_the_entry_as_it_was() {
    let _h = start();
    let rw = Arc::new(RwLock::named(0, "TU"));
    let m = Mutex::named(0, "TM");
    let acquired = std::panic::Location::caller();
    let u = rw.upgradable_read();
    // Held above it (a trylock: no TU -> TM dependency, so the upgrade closes no cycle).
    let g = m.try_lock().expect("free");
    let before: Vec<_> = lockdep::held_locks()
        .iter()
        .map(|l| (l.name, l.mode, l.site.line()))
        .collect();
    assert_eq!(
        before[0],
        (Some("TU"), lockdep::Mode::Upgradable, acquired.line() + 1)
    );
    // Another thread's read keeps the upgrade waiting until it gives up.
    let (read_tx, read_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let other = Arc::clone(&rw);
    let reader = std::thread::spawn(move || {
        let _r = other.read();
        read_tx.send(()).unwrap();
        done_rx.recv().unwrap();
    });
    read_rx.recv().unwrap();
    let u = RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(1))
        .expect_err("a reader holds it");
    let after: Vec<_> = lockdep::held_locks()
        .iter()
        .map(|l| (l.name, l.mode, l.site.line()))
        .collect();
    assert_eq!(after, before);
    let u = RwLockUpgradableReadGuard::try_upgrade_until(u, std::time::Instant::now())
        .expect_err("a reader holds it");
    assert_eq!(
        lockdep::held_locks()
            .iter()
            .map(|l| (l.name, l.mode, l.site.line()))
            .collect::<Vec<_>>(),
        before
    );
    done_tx.send(()).unwrap();
    reader.join().unwrap();
    drop(g);
    drop(u);
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);
}

#[test]
fn a_guard_of_a_lock_held_twice_releases_its_own_entry() {
    use lockdep::Mode::{Read, Upgradable};
    let _h = start();
    let rw = RwLock::named(0, "TWICE");
    // Read, then upgradable read (reported: a queued writer would deadlock it), then the read
    // guard goes first: the upgradable read is what is left.
    let r = rw.read();
    let at = line!() + 1;
    let u = rw.upgradable_read();
    assert_eq!(take().len(), 1);
    drop(r);
    assert_eq!(common::held_entries(), [(Some("TWICE"), Upgradable, at)]);
    // So a read under it is silent, and its upgrade too.
    drop(rw.read());
    let w = RwLockUpgradableReadGuard::upgrade(u);
    drop(w);
    assert!(take().is_empty());
    // Upgradable read, then read, then the upgradable guard goes first: the read is left, and
    // another read under it is a recursive read, reported.
    let u = rw.upgradable_read();
    let at = line!() + 1;
    let r = rw.read();
    drop(u);
    assert_eq!(common::held_entries(), [(Some("TWICE"), Read, at)]);
    let r2 = rw.read();
    assert_reports!(Report::RecursiveLocking(_));
    drop((r2, r));
    // A downgrade changes the upgradable guard's entry, not the read above it.
    let u = rw.upgradable_read();
    let r = rw.read();
    let r0 = RwLockUpgradableReadGuard::downgrade(u);
    assert_eq!(
        common::held_entries()
            .iter()
            .map(|e| e.1)
            .collect::<Vec<_>>(),
        [Read, Read]
    );
    drop((r, r0));
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);
}

/// lock_stat times each guard's own hold of a lock held twice in two modes: the read guard
/// dropped first ends the read's hold, not the upgradable read's. (Each hold here lasts at
/// least the sleep before its release, whatever the machine's speed: a hold ended by the
/// wrong guard would be the instant between the two acquisitions.)
#[test]
fn lock_stat_times_each_guard_of_a_lock_held_twice() {
    let _h = start();
    lockdep::reset_lock_stat();
    lockdep::set_lock_stat(true);
    let rw = RwLock::named(0, "STAT TWICE");
    let pause = Duration::from_millis(20);
    let r = rw.read();
    std::thread::sleep(pause);
    let u = rw.upgradable_read();
    drop(r);
    std::thread::sleep(pause);
    let w = RwLockUpgradableReadGuard::upgrade(u);
    std::thread::sleep(pause);
    drop(w);
    lockdep::set_lock_stat(false);
    let s = lockdep::lock_stat();
    let c = s.class("STAT TWICE").expect("stats of the lock");
    assert_eq!((c.acquisitions, c.hold.count), (2, 2));
    assert!(
        c.hold.min_ns >= pause.as_nanos() as u64,
        "every hold lasts at least {pause:?}: {:?}",
        c.hold
    );
    take();
    assert_eq!(held_count(), 0);
}

/// `force_unlock_read` after a forgotten read guard releases the read's entry, not the
/// upgradable read the thread also holds (which is on top): a read under the upgradable
/// read and its upgrade stay silent.
#[test]
fn force_unlock_read_releases_the_forgotten_reads_entry() {
    use lockdep::Mode::Upgradable;
    let _h = start();
    let rw = RwLock::named(0, "FORGOT");
    std::mem::forget(rw.read());
    let at = line!() + 1;
    let u = rw.upgradable_read();
    assert_eq!(
        take().len(),
        1,
        "an upgradable read under a read is reported"
    );
    // SAFETY: the read holding is the forgotten guard's, which nothing owns any more.
    unsafe { rw.force_unlock_read() };
    assert_eq!(common::held_entries(), [(Some("FORGOT"), Upgradable, at)]);
    drop(rw.read());
    drop(RwLockUpgradableReadGuard::upgrade(u));
    assert!(take().is_empty());
    assert_eq!(held_count(), 0);
}

/// Locks of one class (one construction line) nested in one order, then moved out of their
/// memory (as a `Vec` that grows moves them: no drop runs there) and dropped; new locks made
/// in the same memory and nested the other way are a correct program. The old order stays
/// with the old locks' tags, not with the addresses.
#[test]
fn new_locks_in_the_memory_of_moved_ones_inherit_no_order() {
    let _h = start();
    fn one_class() -> Mutex<u64> {
        Mutex::new(0)
    }
    let slots: &'static mut [std::mem::MaybeUninit<Mutex<u64>>; 2] =
        Box::leak(Box::new([const { std::mem::MaybeUninit::uninit() }; 2]));
    slots[0].write(one_class());
    slots[1].write(one_class());
    {
        // SAFETY: both slots were just initialized.
        let (a, b) = unsafe { (slots[0].assume_init_ref(), slots[1].assume_init_ref()) };
        let _ga = a.lock();
        let _gb = b.lock();
    }
    // SAFETY: each slot is read once, and not used again as the old lock.
    drop(unsafe { (slots[0].assume_init_read(), slots[1].assume_init_read()) });
    slots[0].write(one_class());
    slots[1].write(one_class());
    // SAFETY: both slots were just initialized again.
    let (a, b) = unsafe { (slots[0].assume_init_ref(), slots[1].assume_init_ref()) };
    {
        let _gb = b.lock();
        let _ga = a.lock();
    }
    assert!(take().is_empty());
    // Their own order is kept: the reverse of it is reported.
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    assert_eq!(cycles(&take()), 1);
}
