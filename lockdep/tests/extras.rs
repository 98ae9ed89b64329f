//! Features beyond the scenarios of `cases.rs`: backtrace capture, running out of classes, mode
//! changes of held locks, recursive-read rules in the held-stack check, and the report text
//! of longer cycles.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{Capacity, LockClassKey, LockMap, Mode, Report};

#[test]
fn backtraces_are_captured_for_new_dependencies_when_enabled() {
    let _h = start();
    lockdep::set_capture_backtraces(true);
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    pair(b, a);
    lockdep::set_capture_backtraces(false);
    let r = assert_reports!(Report::CircularDependency(_));
    let Report::CircularDependency(c) = &r[0] else {
        unreachable!()
    };
    assert!(c.cycle.iter().all(|d| d.trace.is_some()));
    let text = r[0].to_string();
    assert!(
        text.contains("backtraces_are_captured_for_new_dependencies_when_enabled"),
        "{text}"
    );
}

#[test]
fn without_capture_no_trace_is_kept() {
    let _h = start();
    // Whatever LOCKDEP_BACKTRACE says: a call decides.
    lockdep::set_capture_backtraces(false);
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    pair(b, a);
    let r = assert_reports!(Report::CircularDependency(_));
    let Report::CircularDependency(c) = &r[0] else {
        unreachable!()
    };
    assert!(c.cycle.iter().all(|d| d.trace.is_none()));
}

#[test]
fn running_out_of_classes_is_reported_once_and_recovers_after_reset() {
    let _h = start();
    let mut m = LockMap::new("many");
    for _ in 0..lockdep::MAX_CLASSES + 10 {
        let key: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
        m.set_key(key);
        lock(&m);
        unlock(&m);
    }
    let r = take();
    assert!(
        matches!(
            r.as_slice(),
            [Report::CapacityExhausted {
                what: Capacity::Classes,
                ..
            }]
        ),
        "{:?}",
        r.len()
    );
    assert_eq!(lockdep::stats().classes, lockdep::MAX_CLASSES);
    assert_eq!(lockdep::held_count(), 0);
    lockdep::reset();
    assert_eq!(lockdep::stats().classes, 0);
    // Validation works again.
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    lock(b);
    lock(a);
    assert_reports!(Report::CircularDependency(_));
    unlock(a);
    unlock(b);
    drop(m);
}

#[test]
fn downgraded_lock_is_a_reader_afterwards() {
    let _h = start();
    let (x, y) = (new_lock("X"), new_lock("Y"));
    // Y -> X taken as a recursive reader: Y-ER->X.
    lock(y);
    read_rec(x);
    unlock(x);
    unlock(y);
    // X written, downgraded to a reader, then Y: X-SN->Y. Not strong with Y-ER->X.
    lock(x);
    lockdep::set_held_mode(x, Mode::Read);
    lockdep::assert_held_mode(x, Mode::Read);
    lock(y);
    unlock(y);
    unlock(x);
    assert_reports!();
    // Without the downgrade it is X-EN->Y: strong with Y-ER->X.
    lock(x);
    lock(y);
    assert_reports!(Report::CircularDependency(_));
    unlock(y);
    unlock(x);
    lockdep::set_held_mode(x, Mode::Read);
    assert_reports!(Report::AssertionFailed {
        kind: lockdep::AssertKind::NotHeld,
        ..
    });
}

#[test]
fn read_then_recursive_read_is_silent_but_not_the_reverse() {
    let _h = start();
    let x = new_lock("X");
    read(x);
    read_rec(x);
    assert_reports!();
    unlock(x);
    unlock(x);
    read_rec(x);
    read(x);
    assert_reports!(Report::RecursiveLocking(_));
    unlock(x);
    unlock(x);
}

#[test]
fn three_class_report_text_has_chain_and_scenario() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    pair(a, b);
    pair(b, c);
    pair(c, a);
    let r = assert_reports!(Report::CircularDependency(_));
    let text = r[0].to_string();
    // Chain: acquiring A while holding C; recorded A -> B -> C.
    assert!(text.contains("Chain exists of:\n  A --> B --> C"), "{text}");
    assert!(text.contains("-> #2 (C):"), "{text}");
    assert!(text.contains("-> #1 (B):"), "{text}");
    assert!(text.contains("-> #0 (A):"), "{text}");
    assert!(text.contains("lock(B);"), "{text}");
    let Report::CircularDependency(cd) = &r[0] else {
        unreachable!()
    };
    // Every dependency carries both sites; they are in this file.
    for d in &cd.cycle {
        assert!(d.from_site.file().ends_with("extras.rs"));
        assert!(d.to_site.file().ends_with("extras.rs"));
    }
    assert_eq!(cd.held.len(), 1);
}

#[test]
fn invalid_subclass_is_reported_and_tracked_unvalidated() {
    let _h = start();
    let a = new_lock("A");
    lockdep::acquire(a, 8, Mode::Exclusive, false, None, Location::caller());
    assert_eq!(lockdep::held_count(), 1);
    lockdep::release(a, Location::caller());
    assert_reports!(Report::KeyMisuse {
        kind: lockdep::KeyMisuse::InvalidSubclass,
        ..
    });
}

#[test]
fn panic_policy_message_and_stderr_policy_do_not_disable_validation() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    let prev = lockdep::set_policy(lockdep::Policy::Stderr);
    pair(a, b);
    lock(b);
    lock(a); // printed to stderr
    unlock(a);
    unlock(b);
    lockdep::set_policy(prev);
    let before = lockdep::stats().cycles_found;
    let c = new_lock("C");
    pair(c, a);
    lock(b);
    lock(c); // C -> A -> B, B -> C: a new cycle, still detected
    unlock(c);
    unlock(b);
    assert_eq!(lockdep::stats().cycles_found, before + 1);
    assert_reports!(Report::CircularDependency(_));
}

#[test]
fn report_during_unwinding_is_printed_not_a_double_panic() {
    let _h = start();
    let a = new_lock("A");
    struct Release(&'static LockMap);
    impl Drop for Release {
        fn drop(&mut self) {
            // A bad unlock while the thread is unwinding.
            lockdep::release(self.0, Location::caller());
        }
    }
    lockdep::set_policy(lockdep::Policy::Panic);
    let r = std::panic::catch_unwind(|| {
        let _r = Release(a);
        panic!("user panic");
    });
    // The process did not abort, and the user's panic is the one that came out.
    let msg = r.expect_err("the user panic propagates");
    assert_eq!(msg.downcast_ref::<&str>(), Some(&"user panic"));
}

#[test]
fn lock_map_size() {
    // Key 24, name or kind 16 (its meta word carries the paired flag), class cache 16 (see
    // `LockMap`).
    #[cfg(target_pointer_width = "64")]
    assert_eq!(std::mem::size_of::<LockMap>(), 56);
}

#[test]
fn novalidate_locks_are_tracked_but_transparent() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    let n: &'static LockMap = Box::leak(Box::new(LockMap::novalidate("N")));
    let n2: &'static LockMap = Box::leak(Box::new(LockMap::novalidate("N")));
    // A, then N, then B: the dependency is A -> B, as if N were not there.
    lock(a);
    lock(n);
    lock(n2); // same "class", no recursion report
    lock(b);
    assert_eq!(lockdep::held_count(), 4);
    assert!(lockdep::is_held(n));
    unlock(b);
    unlock(n2);
    unlock(n);
    unlock(a);
    assert_reports!();
    let deps = lockdep::dependencies();
    assert_eq!(deps.len(), 1, "{deps:?}");
    assert_eq!((deps[0].from.as_str(), deps[0].to.as_str()), ("A", "B"));
    // N never takes part in a cycle; B -> A still closes one.
    lock(b);
    lock(n);
    unlock(n);
    lock(a);
    assert_reports!(Report::CircularDependency(_));
    unlock(a);
    unlock(b);
    // Releasing it when not held is still reported.
    unlock(n);
    assert_reports!(Report::BadUnlockBalance { .. });
}

/// A chain-cache hit takes no global lock: with the graph lock held by another thread, a
/// known chain is acquired and released, both by the thread that validated it (per-thread
/// cache) and by a fresh thread (global lock-free table). Every wait is bounded, so a hit that
/// needed the lock fails the test instead of hanging it.
#[test]
fn chain_cache_hit_takes_no_global_lock() {
    use std::sync::mpsc;
    use std::time::Duration;
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    let pair = move || {
        pair(a, b);
    };
    // The validating thread: validates the chains, then repeats them on request.
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (ok_tx, ok_rx) = mpsc::channel();
    let (warm_tx, warm_rx) = mpsc::channel();
    let ok_tx2 = ok_tx.clone();
    let validating = std::thread::spawn(move || {
        pair();
        warm_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        pair();
        ok_tx.send("validating thread").unwrap();
    });
    warm_rx.recv().unwrap();
    let (held_tx, held_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        lockdep::with_graph_lock_held(|| {
            held_tx.send(()).unwrap();
            done_rx.recv().unwrap();
        })
    });
    held_rx.recv().unwrap();
    // The graph lock is held now.
    go_tx.send(()).unwrap();
    let fresh = std::thread::spawn(move || {
        pair();
        ok_tx2.send("fresh thread").unwrap();
    });
    let mut got: Vec<&str> = (0..2)
        .map(|_| {
            ok_rx
                .recv_timeout(Duration::from_secs(30))
                .expect("a chain-cache hit waited for the graph lock")
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, ["fresh thread", "validating thread"]);
    done_tx.send(()).unwrap();
    holder.join().unwrap();
    validating.join().unwrap();
    fresh.join().unwrap();
    assert_reports!();
}

#[test]
fn nest_lock_covered_locks_do_not_count_against_the_depth_limit() {
    let _h = start();
    lockdep::set_max_depth(4);
    let big = new_lock("Big");
    let key: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
    let nodes: Vec<&'static LockMap> = (0..10)
        .map(|_| &*Box::leak(Box::new(LockMap::with_key("Node", key))))
        .collect();
    lock(big);
    for n in &nodes {
        lock_nest(n, big);
    }
    assert_eq!(lockdep::held_count(), 11);
    // Out of order, to exercise the bookkeeping of non-LIFO release.
    for n in nodes
        .iter()
        .step_by(2)
        .chain(nodes.iter().skip(1).step_by(2))
    {
        unlock(n);
    }
    unlock(big);
    assert_reports!();
    // Plain nesting still hits the limit.
    let plain: Vec<&'static LockMap> = (0..5)
        .map(|i| {
            let k: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
            let name: &'static str = Box::leak(format!("P{i}").into_boxed_str());
            &*Box::leak(Box::new(LockMap::with_key(name, k)))
        })
        .collect();
    for p in &plain {
        lock(p);
    }
    for p in plain.iter().rev() {
        unlock(p);
    }
    assert_reports!(Report::CapacityExhausted {
        what: Capacity::HeldLocks,
        ..
    });
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
}

#[test]
fn set_held_subclass_changes_later_dependencies() {
    let _h = start();
    let key: &'static LockClassKey = Box::leak(Box::new(LockClassKey::new()));
    let rq1: &'static LockMap = Box::leak(Box::new(LockMap::with_key("rq", key)));
    let rq2: &'static LockMap = Box::leak(Box::new(LockMap::with_key("rq", key)));
    // rq1 held at subclass 1, then moved to subclass 0; rq2 taken at subclass 1 after it.
    lock_nested(rq1, 1);
    lockdep::set_held_subclass(rq1, 0);
    lock_nested(rq2, 1);
    unlock(rq2);
    unlock(rq1);
    assert_reports!();
    let deps = lockdep::dependencies();
    assert_eq!(deps.len(), 1, "{deps:?}");
    assert_eq!((deps[0].from.as_str(), deps[0].to.as_str()), ("rq", "rq/1"));
    // Not held: reported.
    lockdep::set_held_subclass(rq1, 1);
    assert_reports!(Report::AssertionFailed {
        kind: lockdep::AssertKind::NotHeld,
        ..
    });
}

#[test]
fn per_instance_maps_leave_nothing_behind() {
    let _h = start();
    let m1 = new_lock("M1");
    let baseline = lockdep::stats();
    for i in 0..2 {
        let m2 = Box::new(LockMap::per_instance("M2"));
        if i == 0 {
            lock(m1);
            lock(&m2);
        } else {
            // Would close M1 -> M2 -> M1 if the new instance inherited the old one's class.
            lock(&m2);
            lock(m1);
        }
        lockdep::release(m1, Location::caller());
        lockdep::release(&m2, Location::caller());
        drop(m2);
    }
    assert_reports!();
    let after = lockdep::stats();
    assert_eq!(after.classes, baseline.classes + 1); // M1 only
    assert_eq!(after.dependencies, 0);
    // Two live instances are two classes: nesting them needs no annotation, and their order
    // is checked.
    let (p, q) = (LockMap::per_instance("P"), LockMap::per_instance("Q"));
    lock(&p);
    lock(&q);
    unlock(&q);
    unlock(&p);
    assert_reports!();
    lock(&q);
    lock(&p);
    assert_reports!(Report::CircularDependency(_));
    unlock(&p);
    unlock(&q);
}

#[test]
fn a_lock_handed_to_another_thread_is_released_there_without_reports() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    lock(a);
    let moved = lockdep::detach(a).expect("A is held");
    assert_eq!(lockdep::held_count(), 0);
    let t = std::thread::spawn(move || {
        moved.attach();
        assert!(lockdep::is_held(a));
        // Later acquisitions here depend on it.
        lock(b);
        unlock(b);
        unlock(a);
        lockdep::held_count()
    });
    assert_eq!(t.join().unwrap(), 0);
    // Back on the first thread, A is free: taking it again is no recursion.
    lock(a);
    unlock(a);
    assert_reports!();
    let deps = lockdep::dependencies();
    assert_eq!(deps.len(), 1, "{deps:?}");
    assert_eq!((deps[0].from.as_str(), deps[0].to.as_str()), ("A", "B"));
    // Detaching a lock that is not held is reported.
    assert!(lockdep::detach(a).is_none());
    assert_reports!(Report::AssertionFailed {
        kind: lockdep::AssertKind::NotHeld,
        ..
    });
}

#[test]
fn a_relock_is_validated_with_the_subclass_and_nest_lock_of_the_release() {
    let _h = start();
    // The kernel's rule for this class: nesting two of its instances needs an annotation.
    let key: &'static LockClassKey = Box::leak(Box::new(LockClassKey::with_nesting(
        lockdep::Nesting::Strict,
    )));
    let node = |_| &*Box::leak(Box::new(LockMap::with_key("node", key)));
    let [n0, n1, n2]: [&'static LockMap; 3] = std::array::from_fn(node);
    let here = Location::caller();
    // Subclass: n1 is held at subclass 1 under n0; released and taken again as it was.
    lock(n0);
    lock_nested(n1, 1);
    let how = lockdep::relock_of(n1, Mode::Exclusive);
    assert_eq!((how.subclass(), how.has_nest_lock()), (1, false));
    unlock(n1);
    lockdep::relock(n1, Mode::Exclusive, how, here);
    unlock(n1);
    // The twin: taken again as subclass 0, it is the same class nested without annotation.
    lock_nested(n1, 1);
    unlock(n1);
    lockdep::relock(n1, Mode::Exclusive, lockdep::Relock::NONE, here);
    unlock(n1);
    unlock(n0);
    assert_reports!(Report::MissingNestingAnnotation { .. });

    // Nest lock: n1 and n2 under `table`, any order; n2 released and taken again.
    let table = new_lock("table");
    lock(table);
    lock_nest(n1, table);
    lock_nest(n2, table);
    let how = lockdep::relock_of(n2, Mode::Exclusive);
    assert_eq!((how.subclass(), how.has_nest_lock()), (0, true));
    assert_eq!(how, lockdep::Relock::new(0, Some(table)));
    unlock(n2);
    lockdep::relock(n2, Mode::Exclusive, how, here);
    unlock(n2);
    unlock(n1);
    assert_reports!();
    // The nest lock released in between: reported, and named by its address.
    lock_nest(n2, table);
    unlock(n2);
    unlock(table);
    lockdep::relock(n2, Mode::Exclusive, how, here);
    unlock(n2);
    let r = assert_reports!(Report::NestLockNotHeld { .. });
    let Report::NestLockNotHeld { nest_lock, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!(*nest_lock, format!("at {:p}", table));

    // No entry of the lock on this thread: the default.
    assert_eq!(
        lockdep::relock_of(n0, Mode::Exclusive),
        lockdep::Relock::NONE
    );
}
