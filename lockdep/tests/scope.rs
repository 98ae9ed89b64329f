//! `lockdep::test_scope()`: one line that makes every report fail the test whose thread made
//! it, even if the same report was delivered earlier in the process, also on threads the
//! test spawns.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe, Location};

use common::*;
use lockdep::{LockMap, Report};

fn message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// A report in the scope panics the thread at the report, before the lock is marked held,
/// although the same report was delivered (here, collected) earlier in the process.
#[test]
fn a_report_fails_the_scope_even_if_it_was_delivered_before() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    let close_cycle = || {
        let _gb = guard(b);
        let _ga = guard(a);
    };
    close_cycle(); // delivered once, outside any scope
    assert_one_cycle(&["A", "B"]);
    let r = catch_unwind(|| {
        let _scope = lockdep::test_scope();
        close_cycle();
        unreachable!("the report panics the thread");
    });
    let msg = message(&*r.expect_err("the scope fails the test"));
    // The first line names the kind and this file's line that took the lock (the panic's own
    // location is inside lockdep).
    let head = format!(
        "lockdep: possible circular locking dependency at {}:",
        file!()
    );
    assert!(msg.lines().next().unwrap().starts_with(&head), "{msg}");
    assert_eq!(lockdep::held_count(), 0);
    assert_reports!(); // a repeat: not delivered to the callback again
}

/// A std mutex locked twice would hang; in a scope the report panics first.
#[test]
fn a_real_self_deadlock_fails_instead_of_hanging() {
    let _h = start();
    let m = std::sync::Mutex::new(0);
    let map = LockMap::new("M");
    let lock_it = || {
        lockdep::acquire(
            &map,
            0,
            lockdep::Mode::Exclusive,
            false,
            None,
            Location::caller(),
        );
        m.lock().unwrap()
    };
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _scope = lockdep::test_scope();
        let _g1 = lock_it();
        let _g2 = lock_it(); // panics before the std mutex blocks
    }));
    assert!(message(&*r.unwrap_err()).contains("possible recursive locking"));
    assert_eq!(lockdep::held_count(), 1, "the first acquisition");
    lockdep::release(&map, Location::caller());
    let _ = take();
}

/// A spawned thread that entered the scope's handle panics at its report; if the test does
/// not propagate that panic, the scope's drop fails the test with the report.
#[test]
fn reports_of_spawned_threads_fail_the_scope() {
    let _h = start();
    let x = new_lock("X");
    let r = catch_unwind(|| {
        let scope = lockdep::test_scope();
        let handle = scope.handle();
        let joined = std::thread::spawn(move || {
            let _in_scope = handle.enter();
            lock(x);
            lock(x);
        })
        .join();
        assert!(joined.is_err(), "the spawned thread panicked at its report");
        // The test ignores the failed join; the scope does not.
    });
    let msg = message(&*r.expect_err("the scope's drop fails the test"));
    assert!(
        msg.contains("1 lockdep report made in this test scope"),
        "{msg}"
    );
    assert!(msg.contains("possible recursive locking"), "{msg}");
    let _ = take();
}

/// A report that cannot panic its thread (made while it unwinds) fails the scope at drop.
#[test]
fn a_report_made_during_unwinding_fails_the_scope_at_drop() {
    let _h = start();
    let a = new_lock("A");
    struct ReleaseOnDrop(&'static LockMap);
    impl Drop for ReleaseOnDrop {
        fn drop(&mut self) {
            unlock(self.0); // not held: a bad unlock, while unwinding
        }
    }
    let r = catch_unwind(|| {
        let _scope = lockdep::test_scope();
        let user = catch_unwind(|| {
            let _r = ReleaseOnDrop(a);
            panic!("user panic");
        });
        assert!(user.is_err());
    });
    let msg = message(&*r.expect_err("the scope's drop fails the test"));
    assert!(msg.contains("bad unlock balance"), "{msg}");
    assert_reports!(Report::BadUnlockBalance { .. });
}

/// No report, no failure; reports taken by the test do not fail it; other threads' scopes
/// (tests running in parallel) see only their own threads' reports.
#[test]
fn scopes_are_per_thread_and_take_reports_clears() {
    let _h = start();
    let (x, y) = (new_lock("X"), new_lock("Y"));
    {
        let _scope = lockdep::test_scope();
        lock(x);
        unlock(x);
    }
    let quiet = std::thread::spawn(move || {
        let _scope = lockdep::test_scope();
        for _ in 0..100 {
            lock(y);
            unlock(y);
        }
    });
    let scope = lockdep::test_scope();
    let r = catch_unwind(|| {
        lock(x);
        lock(x);
    });
    assert!(r.is_err());
    quiet.join().expect("the other thread's scope saw nothing");
    let mine = scope.take_reports();
    assert!(matches!(mine.as_slice(), [Report::RecursiveLocking(_)]));
    drop(scope); // nothing left: no panic
    unlock(x);
    let _ = take();
}
