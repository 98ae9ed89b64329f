//! Scenarios taken from public bug reports of lock-order validators (tracing-mutex,
//! ThreadSanitizer, Bitcoin's `DEBUG_LOCKORDER`, parking_lot, the kernel's lockdep), each
//! asserting the verdict a correct validator gives. Lock operations use the raw
//! `acquire`/`release` API that lock wrappers call; "T2: ..." runs on a fresh thread after T1
//! has finished. A comment before each test gives its number in the project's list of
//! validator scenarios (C01..C20) and the public reports it comes from.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe, Location};

use common::*;
use lockdep::{DynamicKey, KeyMisuse, LockClassKey, LockMap, Mode, Nesting, Policy, Report};

// Scenario C01, plain ABBA inversion, also when only one thread ever runs
// (bertptrs/tracing-mutex #35, google/sanitizers #488).

#[test]
fn abba_on_two_threads_is_reported_once_when_t2_takes_a() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || pair(a, b));
    assert_reports!();
    on_thread(move || pair(b, a));
    let r = assert_reports!(Report::CircularDependency(_));
    let Report::CircularDependency(c) = &r[0] else {
        unreachable!()
    };
    assert_eq!(c.acquiring.class_name, "A");
    assert_eq!(c.holding.class_name, "B");
    assert_eq!(r[0].cycle_classes(), ["B", "A", "B"]);
    // Both sites of every edge are in the report, and its text has the kernel's layout.
    assert_eq!(c.cycle.len(), 2);
    assert_eq!(c.cycle[1].from, "A");
    assert_eq!(c.cycle[1].to, "B");
    let text = r[0].to_string();
    for needle in [
        "WARNING: possible circular locking dependency detected",
        "is trying to acquire lock:",
        "but task is already holding lock:",
        "the existing dependency chain (in reverse order) is:",
        "Possible unsafe locking scenario",
        "CPU0",
        "CPU1",
        "*** DEADLOCK ***",
        "lock held by",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    // A clean A-then-B run later is silent; the B->A dependency was not recorded.
    on_thread(move || pair(a, b));
    assert_reports!();
    // The same inversion again is the same cycle: counted, not reported twice.
    let before = lockdep::stats().cycles_found;
    on_thread(move || pair(b, a));
    assert_reports!();
    assert_eq!(lockdep::stats().cycles_found, before + 1);
}

#[test]
fn abba_in_one_thread_is_reported_too() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    lock(b);
    assert_reports!();
    lock(a);
    assert_reports!(Report::CircularDependency(_));
    unlock(a);
    unlock(b);
}

// Scenario C02, a cycle through three or more classes, each dependency from another thread
// (bitcoin/bitcoin #19157, google/sanitizers #1258).

#[test]
fn cycles_through_three_and_four_classes_are_reported() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    on_thread(move || pair(a, b));
    on_thread(move || pair(b, c));
    assert_reports!();
    on_thread(move || pair(c, a));
    let c = assert_one_cycle(&["A", "B", "C"]);
    assert_eq!(c.cycle_classes().len(), 4);

    let _h2 = {
        drop(_h);
        start()
    };
    let (a, b, c, d) = (new_lock("A"), new_lock("B"), new_lock("C"), new_lock("D"));
    on_thread(move || pair(a, b));
    on_thread(move || pair(b, c));
    on_thread(move || pair(c, d));
    assert_reports!();
    on_thread(move || pair(d, a));
    assert_one_cycle(&["A", "B", "C", "D"]);
}

// Scenario C03, dependencies only between locks held at the same time: hand-over-hand, stale held
// sets (google/sanitizers #814, #1419; llvm/llvm-project #57955).

#[test]
fn hand_over_hand_locking_closes_a_transitive_cycle() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    on_thread(move || {
        lock(a);
        lock(b);
        unlock(a);
        lock(c);
        unlock(c);
        unlock(b);
    });
    on_thread(move || pair(c, a));
    assert_one_cycle(&["A", "B", "C"]);
}

#[test]
fn locks_not_held_together_get_no_dependency() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    on_thread(move || {
        lock(a);
        lock(b);
        unlock(b);
        lock(c);
        unlock(c);
        unlock(a);
    });
    on_thread(move || pair(c, b));
    assert_reports!();
}

#[test]
fn out_of_order_unlock_keeps_the_dependencies_exact() {
    let _h = start();
    let (a, d) = (new_lock("A"), new_lock("D"));
    let kb = DynamicKey::new("B");
    let b: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key("B", &kb)));
    on_thread(move || {
        lock(a);
        lock(b);
        unlock(a);
        lock(d);
        unlock(d);
        unlock(b);
    });
    drop(kb); // destroys B's class and its dependencies
    on_thread(move || pair(d, a));
    assert_reports!();
    assert!(lockdep::dependencies()
        .iter()
        .all(|e| !(e.from == "A" && e.to == "D")));
}

// Scenario C04, a trylock gets no dependency into itself (bitcoin/bitcoin #9674; the kernel's
// `validate_chain()`; Abseil `Mutex::TryLock`).

#[test]
fn a_trylock_gets_no_dependency_into_it() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || {
        lock(a);
        try_lock(b);
        unlock(b);
        unlock(a);
    });
    on_thread(move || pair(b, a));
    assert_reports!();
}

#[test]
fn a_held_trylock_gives_dependencies_to_later_locks() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || {
        try_lock(a);
        lock(b);
        unlock(b);
        unlock(a);
    });
    on_thread(move || pair(b, a));
    assert_reports!(Report::CircularDependency(_));
}

// Scenario C06, re-locking the same instance is reported before the real lock blocks
// (bertptrs/tracing-mutex #7, google/sanitizers #1258).

#[test]
fn relocking_a_held_lock_is_reported_before_it_blocks() {
    let _h = start();
    let a = new_lock("A");
    lockdep::set_policy(Policy::Panic);
    let r = catch_unwind(|| {
        let _g1 = guard(a);
        let _g2 = guard(a); // would deadlock a real mutex: must panic first
    });
    let msg = r.expect_err("the second lock must be reported");
    let text = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains("possible recursive locking detected"),
        "{text}"
    );
    assert_eq!(lockdep::held_count(), 0, "unwinding released A");
    drop(_h);
    let _h = start();
    // Variant through a helper; a later T2 lock is silent.
    fn f(a: &LockMap) {
        lock(a);
    }
    lock(a);
    f(a);
    assert_reports!(Report::RecursiveLocking(_));
    lockdep::reset();
    on_thread(move || {
        lock(a);
        unlock(a);
    });
    assert_reports!();
}

// Scenario C07, reader recursion on one RwLock (Amanieu/parking_lot #212; the kernel's recursive read
// locks in `Documentation/locking/lockdep-design.rst`).

#[test]
fn reader_recursion_is_reported_except_a_recursive_read_after_a_read() {
    use Mode::*;
    let cases: [(Mode, Mode, bool); 6] = [
        (Read, Read, true),
        (Read, RecursiveRead, false),
        (RecursiveRead, RecursiveRead, false),
        (Read, Exclusive, true),
        (Exclusive, Read, true),
        (Exclusive, Exclusive, true),
    ];
    let _h = start();
    let r = new_lock("R");
    for (first, second, expect) in cases {
        lockdep::reset();
        take();
        lock_mode(r, first);
        lock_mode(r, second);
        if expect {
            assert_reports!(Report::RecursiveLocking(_));
        } else {
            assert_reports!();
        }
        unlock(r);
        unlock(r);
        assert_reports!();
    }
}

// Scenario C09, a destroyed lock whose address is reused by a new lock (google/sanitizers #1798,
// bitcoin/bitcoin #7846, Abseil `ForgetDeadlockInfo`).

#[test]
fn a_new_lock_at_a_reused_address_inherits_nothing() {
    let _h = start();
    let m1 = new_lock("M1");
    let baseline = lockdep::stats();
    let mut addrs = Vec::new();
    for _ in 0..2 {
        // A lock with its own dynamic key: destroying it destroys its class.
        let key = Box::new(DynamicKey::new("M2"));
        let m2 = LockMap::with_dynamic_key("M2", &key);
        addrs.push(&*key as *const DynamicKey as usize);
        if addrs.len() == 1 {
            lock(m1);
            lock(&m2);
            unlock(&m2);
            unlock(m1);
        } else {
            lock(&m2);
            lock(m1);
            unlock(m1);
            unlock(&m2);
        }
        drop(m2);
        drop(key);
    }
    assert_reports!();
    let after = lockdep::stats();
    // Only M1's class is left beyond the baseline; no dependency survives.
    assert_eq!(after.keys, baseline.keys);
    assert_eq!(after.classes, baseline.classes + 1);
    assert_eq!(after.dependencies, 0);
}

#[test]
fn a_path_through_a_destroyed_lock_dies_with_it() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    let kx = DynamicKey::new("X");
    let x = LockMap::with_dynamic_key("X", &kx);
    lock(a);
    lock(&x);
    unlock(&x);
    unlock(a);
    lock(&x);
    lock(b);
    unlock(b);
    unlock(&x);
    drop(x);
    drop(kx);
    let kx2 = DynamicKey::new("X'");
    let _x2 = LockMap::with_dynamic_key("X'", &kx2);
    on_thread(move || pair(b, a));
    assert_reports!();
}

// Scenario C10, two instances of one class: subclass, nest_lock and set_class annotations (the
// kernel's epoll nesting fix d8805e633e05, `spin_lock_nest_lock`, `double_lock_balance`).

static FUNNEL: LockClassKey = LockClassKey::new();
static FUNNEL_SCHED: LockClassKey = LockClassKey::new();

#[test]
fn nesting_one_class_needs_an_annotation() {
    let _h = start();
    // The kernel's rule for this class (the default, instance order, accepts any fixed order).
    let node = LockClassKey::with_nesting(Nesting::Strict);
    let node: &'static LockClassKey = Box::leak(Box::new(node));
    let n: Vec<&'static LockMap> = (0..4)
        .map(|_| &*Box::leak(Box::new(LockMap::with_key("Node", node))))
        .collect();
    let big = new_lock("Big");

    // (a) unannotated nesting of one class
    lock(n[0]);
    lock(n[1]);
    let r = assert_reports!(Report::MissingNestingAnnotation(_));
    assert!(r[0]
        .to_string()
        .contains("May be due to missing lock nesting notation"));
    unlock(n[1]);
    unlock(n[0]);
    lockdep::reset();

    // (b) subclass annotation
    lock(n[0]);
    lock_nested(n[1], 1);
    unlock(n[1]);
    unlock(n[0]);
    assert_reports!();

    // (c) inverted subclasses
    let (n2, n3) = (n[2], n[3]);
    on_thread(move || {
        lock_nested(n2, 1);
        lock(n3);
        unlock(n3);
        unlock(n2);
    });
    assert_one_cycle(&["Node", "Node/1"]);
    lockdep::reset();

    // (d) nest_lock
    lock(big);
    lock_nest(n[0], big);
    lock_nest(n[1], big);
    unlock(n[1]);
    unlock(n[0]);
    unlock(big);
    assert_reports!();

    // (e) nest lock not held
    lock_nest(n[0], big);
    let r = assert_reports!(Report::NestLockNotHeld { .. });
    assert!(r[0].to_string().contains("Nested lock was not taken"));
    unlock(n[0]);
    lockdep::reset();

    // (f) separate class via set_key
    let f1: &'static LockMap = Box::leak(Box::new(LockMap::with_key("Funnel", &FUNNEL)));
    let mut f2 = LockMap::with_key("Funnel", &FUNNEL);
    f2.set_key(&FUNNEL_SCHED);
    let f2: &'static LockMap = Box::leak(Box::new(f2));
    pair(f1, f2);
    assert_reports!();
    on_thread(move || pair(f2, f1));
    assert_reports!(Report::CircularDependency(_));
}

// Scenario C11, dynamic key misuse: unregistered, registered twice, used after unregister
// (openzfs/zfs #8868; the kernel's "trying to register non-static key").

fn misuse_kinds(r: &[Report]) -> Vec<KeyMisuse> {
    r.iter()
        .filter_map(|r| match r {
            Report::KeyMisuse { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect()
}

#[test]
fn dynamic_key_misuse_is_reported_and_validation_goes_on() {
    let _h = start();
    // 1. never registered
    let k = DynamicKey::new_unregistered("K");
    let l = LockMap::with_dynamic_key("L", &k);
    lock(&l);
    unlock(&l);
    assert_eq!(
        misuse_kinds(&take()),
        [KeyMisuse::NotRegistered, KeyMisuse::NotRegistered]
    );
    // 2. double register
    let k2 = DynamicKey::new("K2");
    k2.register();
    assert_eq!(misuse_kinds(&take()), [KeyMisuse::DoubleRegister]);
    // 3. unknown key
    let k3 = DynamicKey::new_unregistered("K3");
    k3.unregister();
    assert_eq!(misuse_kinds(&take()), [KeyMisuse::UnknownKey]);
    // 4. used after unregister (map created before, and after)
    let k4 = DynamicKey::new("K4");
    let before = LockMap::with_dynamic_key("L4", &k4);
    lock(&before);
    unlock(&before);
    k4.unregister();
    assert_reports!();
    lock(&before);
    unlock(&before);
    assert_eq!(misuse_kinds(&take()), [KeyMisuse::NotRegistered]);
    let after = LockMap::with_dynamic_key("L4'", &k4);
    assert_eq!(misuse_kinds(&take()), [KeyMisuse::NotRegistered]);
    // Reports are deduplicated by what they are about, sites included: the same misuse at a
    // new site is a new report, at the same site a repeat.
    for _ in 0..3 {
        lock(&after);
        unlock(&after);
    }
    assert_eq!(misuse_kinds(&take()), [KeyMisuse::NotRegistered]);
    // Unregistering while a lock of the key is held.
    let k5 = DynamicKey::new("K5");
    let l5 = LockMap::with_dynamic_key("L5", &k5);
    lock(&l5);
    k5.unregister();
    unlock(&l5);
    assert_eq!(misuse_kinds(&take()), [KeyMisuse::UnregisterWhileHeld]);
    assert!(!k5.is_registered());
    // 5. the validator is still on.
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || {
        pair(a, b);
        pair(b, a);
    });
    assert_reports!(Report::CircularDependency(_));
    drop((l, before, after, l5));
}

// Scenario C14, a condvar wait releases and re-acquires its mutex (bertptrs/tracing-mutex #20,
// jemalloc/jemalloc #2718).

/// A condvar wait as a wrapper does it: release M, (block), then re-acquire M, validated.
#[track_caller]
fn condvar_wait(m: &LockMap) {
    lockdep::release(m, Location::caller());
    lockdep::acquire(m, 0, Mode::Exclusive, false, None, Location::caller());
}

#[test]
fn a_condvar_wait_releases_and_retakes_silently() {
    let _h = start();
    let m = new_lock("M");
    lock(m);
    condvar_wait(m);
    assert_eq!(lockdep::held_count(), 1);
    assert!(lockdep::is_held(m));
    unlock(m);
    assert_reports!();
    assert_eq!(lockdep::held_count(), 0);
}

#[test]
fn a_condvar_wait_under_a_later_lock_closes_a_cycle() {
    let _h = start();
    let (m, b) = (new_lock("M"), new_lock("B"));
    pair(m, b);
    lock(m);
    lock(b);
    condvar_wait(m);
    assert_one_cycle(&["B", "M"]);
    unlock(b);
    unlock(m);
}

// Scenario C15, locks held across thread spawn and join (goblint/analyzer #667; the kernel's
// workqueue `lockdep_map`, e6f3faa734a0).

#[test]
fn a_child_thread_starts_with_no_held_locks() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    lock(a);
    std::thread::spawn(move || {
        lock(b);
        unlock(b);
    })
    .join()
    .unwrap();
    unlock(a);
    on_thread(move || pair(b, a));
    assert_reports!();
}

#[test]
fn joining_under_a_lock_the_child_takes_is_a_cycle_through_a_pseudo_lock() {
    let _h = start();
    let (a, x) = (new_lock("A"), new_lock("X"));
    let join: &'static lockdep::PseudoLock = Box::leak(Box::new(lockdep::PseudoLock::new("J")));
    lock(a);
    let child = std::thread::spawn(move || {
        let _work = join.enter();
        pair(x, x_dummy());
        lock(a);
        unlock(a);
    });
    child.join().unwrap();
    join.wait(); // the joiner, holding A
    unlock(a);
    assert_one_cycle(&["A", "J"]);
}

fn x_dummy() -> &'static LockMap {
    static K: LockClassKey = LockClassKey::new();
    Box::leak(Box::new(LockMap::with_key("Xinner", &K)))
}

// Scenario C16, locks taken or released in `Drop`: TLS destructors, field order, a re-entrant drop
// (bertptrs/tracing-mutex PR #61, gfx-rs/wgpu #10030).

#[test]
fn locking_in_a_tls_destructor_does_not_crash() {
    let _h = start();
    let (l, m) = (new_lock("L"), new_lock("M"));
    struct Obj(&'static LockMap);
    impl Drop for Obj {
        fn drop(&mut self) {
            lock(self.0);
            unlock(self.0);
        }
    }
    thread_local! { static OBJ: std::cell::RefCell<Option<Obj>> = const { std::cell::RefCell::new(None) }; }
    on_thread(move || {
        OBJ.with(|o| *o.borrow_mut() = Some(Obj(l)));
        lock(m);
        unlock(m);
    });
    assert_reports!();
}

#[test]
fn a_guard_stashed_in_tls_is_released_at_thread_teardown() {
    let _h = start();
    let l = new_lock("L");
    thread_local! { static STASH: std::cell::RefCell<Option<Guard>> = const { std::cell::RefCell::new(None) }; }
    let t1 = on_thread(move || {
        STASH.with(|s| *s.borrow_mut() = Some(guard(l)));
        lockdep::held_locks().len()
    });
    assert_eq!(t1, 1);
    let t1_reports = take();
    let t2_reports = on_thread(move || {
        lock(l);
        unlock(l);
        take()
    });
    assert!(t2_reports.is_empty(), "{t2_reports:?}");
    // T1 may get a held-at-exit report, depending on which TLS destructor runs first; never
    // anything else.
    assert!(t1_reports
        .iter()
        .all(|r| matches!(r, Report::LockHeldAtExit { .. })));
}

#[test]
fn guards_dropped_in_field_order_release_out_of_order() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    struct Pair {
        _ga: Guard,
        _gb: Guard,
    }
    let p = Pair {
        _ga: guard(a),
        _gb: guard(b),
    };
    drop(p); // releases A, then B
    assert_eq!(lockdep::held_count(), 0);
    lock(c);
    assert_eq!(lockdep::held_count(), 1);
    unlock(c);
    assert_reports!();
    let deps = lockdep::dependencies();
    assert_eq!(deps.len(), 1, "{deps:?}"); // only A->B
    assert_eq!((deps[0].from.as_str(), deps[0].to.as_str()), ("A", "B"));
}

#[test]
fn a_drop_that_relocks_a_held_lock_is_recursive_locking() {
    let _h = start();
    let reg = new_lock("Reg");
    struct Item(&'static LockMap);
    impl Drop for Item {
        fn drop(&mut self) {
            let _g = guard(self.0);
        }
    }
    let item = std::sync::Arc::new(Item(reg));
    let g = guard(reg);
    drop(item);
    drop(g);
    assert_reports!(Report::RecursiveLocking(_));
}

// Scenario C17, a panic while holding locks, and the validator's own report panic
// (Amanieu/parking_lot #44; tracing-mutex's docs).

#[test]
fn panics_keep_the_validator_consistent() {
    let _h = start();
    let (a, b, c, d) = (new_lock("A"), new_lock("B"), new_lock("C"), new_lock("D"));
    on_thread(move || pair(a, b));
    lockdep::set_policy(Policy::Panic);
    on_thread(move || {
        let r = catch_unwind(|| {
            let _gb = guard(b);
            let _ga = guard(a); // cycle: panics before A is marked held
        });
        assert!(r.is_err());
        assert_eq!(lockdep::held_count(), 0);
        let _gc = guard(c);
        assert_eq!(lockdep::held_count(), 1);
    });
    // T3: A then B is still fine (B->A was not recorded).
    on_thread(move || pair(a, b));
    // T4 panics while holding A; unwinding releases it.
    on_thread(move || {
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _ga = guard(a);
            panic!("user panic while holding A");
        }));
        assert!(r.is_err());
        assert_eq!(lockdep::held_count(), 0);
    });
    // T5: the (poisoned) A is still a real holding: A -> D.
    on_thread(move || {
        let _ga = guard(a);
        let _gd = guard(d);
    });
    // T6: D then A closes A -> D -> A.
    let t6 = on_thread(move || {
        catch_unwind(|| {
            let _gd = guard(d);
            let _ga = guard(a);
        })
        .map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
    });
    let text = t6.expect_err("T6 must report");
    assert!(text.contains("circular locking dependency"), "{text}");
}

// Scenario C20, annotation-only (pseudo) locks and "may acquire" checks (golang/go #66004; the
// kernel's `might_lock()` and `lock_map_acquire()`).

#[test]
fn a_pseudo_lock_takes_part_in_cycles() {
    let _h = start();
    let g: &'static lockdep::PseudoLock = Box::leak(Box::new(lockdep::PseudoLock::new("G")));
    let p = new_lock("P");
    on_thread(move || {
        let _e = g.enter();
        lock(p);
        unlock(p);
    });
    on_thread(move || {
        lock(p);
        let _e = g.enter();
        drop(_e);
        unlock(p);
    });
    assert_one_cycle(&["G", "P"]);
}

#[test]
fn held_lock_queries_and_assertions_agree() {
    let _h = start();
    let g = lockdep::PseudoLock::new("G");
    let e = g.enter();
    assert_eq!(lockdep::held_count(), 1);
    assert!(lockdep::is_held(g.map()));
    lockdep::assert_held(g.map());
    let held = lockdep::held_locks();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].class_name, "G");
    drop(e);
    assert_eq!(lockdep::held_count(), 0);
    lockdep::assert_not_held(g.map());
    lockdep::assert_none_held();
    assert_reports!();
    // And the assertions do fire when wrong.
    lockdep::assert_held(g.map());
    assert_reports!(Report::AssertionFailed {
        kind: lockdep::AssertKind::NotHeld,
        ..
    });
}

#[test]
fn might_lock_records_dependencies_without_holding() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || {
        lock(a);
        lockdep::might_lock(b, 0, Mode::Exclusive, Location::caller());
        assert!(!lockdep::is_held(b));
        assert_eq!(lockdep::held_count(), 1);
        unlock(a);
    });
    assert_reports!();
    on_thread(move || pair(b, a));
    assert_one_cycle(&["A", "B"]);
}

// Other reports.

#[test]
fn bad_unlock_and_held_lock_freed_and_exit_reports() {
    let _h = start();
    let a = new_lock("A");
    unlock(a);
    let r = assert_reports!(Report::BadUnlockBalance { .. });
    assert!(r[0].to_string().contains("bad unlock balance detected"));

    // Boxed, so the map is dropped where it was locked (`drop(m)` on a stack value would
    // move it first, and the instance is the map's address).
    let m = Box::new(LockMap::new("Freed"));
    lock(&m);
    drop(m);
    assert_reports!(Report::HeldLockFreed { .. });
    assert_eq!(lockdep::held_count(), 0);

    let b = new_lock("B");
    on_thread(move || lock(b));
    assert_reports!(Report::LockHeldAtExit { held, .. } if held.len() == 1);
}

/// The freed-memory check looks at the held entries before it borrows anything: maps that the
/// thread does not hold are dropped with no report, whether it holds other locks or none, and
/// a held map under another held lock is still found.
#[test]
fn only_a_held_lock_freed_is_reported_wherever_it_sits() {
    let _h = start();
    drop(Box::new(LockMap::new("NeverLocked")));
    let a = new_lock("A");
    lock(a);
    let unheld = Box::new(LockMap::new("Unheld"));
    lock(&unheld);
    unlock(&unheld);
    drop(unheld);
    assert_reports!();
    let m = Box::new(LockMap::new("FreedBelowTop"));
    lock(&m);
    let b = new_lock("B");
    lock(b);
    drop(m);
    assert_reports!(Report::HeldLockFreed { .. });
    assert_eq!(
        lockdep::held_count(),
        2,
        "A and B stay held; the freed entry is gone"
    );
    unlock(b);
    unlock(a);
    assert_eq!(lockdep::held_count(), 0);
}

#[test]
fn depth_limit_is_reported_once_and_tracking_continues() {
    let _h = start();
    lockdep::set_max_depth(4);
    let locks: Vec<&'static LockMap> = (0..6)
        .map(|i| {
            let k: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
            let name: &'static str = Box::leak(format!("L{i}").into_boxed_str());
            &*Box::leak(Box::new(LockMap::with_key(name, k)))
        })
        .collect();
    for l in &locks {
        lock(l);
    }
    assert_eq!(lockdep::held_count(), 6);
    for l in locks.iter().rev() {
        unlock(l);
    }
    assert_reports!(Report::CapacityExhausted {
        what: lockdep::Capacity::HeldLocks,
        limit: 4,
        ..
    });
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
}

#[test]
fn pinned_lock_release_is_reported() {
    let _h = start();
    let a = new_lock("A");
    lock(a);
    lockdep::pin(a);
    unlock(a);
    assert_reports!(Report::AssertionFailed {
        kind: lockdep::AssertKind::ReleasedWhilePinned,
        ..
    });
}

#[test]
fn dot_output_names_classes_and_kinds() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    lock(a);
    read_rec(b);
    unlock(b);
    unlock(a);
    let dot = lockdep::dot();
    assert!(dot.starts_with("digraph lockdep {"), "{dot}");
    assert!(dot.contains("\"A\"") && dot.contains("\"B\""), "{dot}");
    assert!(dot.contains("label=\"ER"), "{dot}");
    let s = lockdep::stats();
    assert_eq!((s.classes, s.edges, s.dependencies), (2, 1, 1));
    assert!(s.chains >= 1);
}
