//! Every kind of report is deduplicated by what it is about: printed (or handed to the
//! callback) once, its repeats counted per kind and summed up by `lockdep::summary()`; every
//! occurrence is delivered on request; and `Policy::Panic` still panics at every occurrence,
//! also of a report delivered before.

mod common;

use std::panic::{catch_unwind, Location};

use common::*;
use lockdep::{LockMap, Mode, Policy, Report, ReportKind};

fn suppressed(kind: ReportKind) -> u64 {
    lockdep::stats()
        .suppressed_by_kind
        .iter()
        .find(|k| k.0 == kind)
        .map_or(0, |k| k.1)
}

/// Two accounts made at one site (one class), nested 100,000 times: one report.
#[test]
fn two_per_account_locks_nested_100000_times_give_one_report() {
    let _h = start();
    // The kernel's strict rule, under which every nesting of two accounts is a report.
    lockdep::set_nesting(lockdep::Nesting::Strict);
    let accounts: Vec<&'static LockMap> = (0..2).map(|_| new_lock("account")).collect();
    let (stats, summary) = (lockdep::stats(), lockdep::summary());
    for _ in 0..100_000 {
        lock(accounts[0]);
        lock(accounts[1]);
        unlock(accounts[1]);
        unlock(accounts[0]);
    }
    let r = assert_reports!(Report::MissingNestingAnnotation(_));
    assert_eq!(r.len(), 1);
    let after = lockdep::stats();
    assert_eq!(
        after.reports - stats.reports,
        100_000,
        "every occurrence is made"
    );
    assert_eq!(after.distinct_reports - stats.distinct_reports, 1);
    assert_eq!(after.repeats_suppressed - stats.repeats_suppressed, 99_999);
    assert!(suppressed(ReportKind::MissingNestingAnnotation) >= 99_999);
    let s = lockdep::summary();
    assert_eq!(s.distinct - summary.distinct, 1);
    assert_eq!(s.repeats_suppressed - summary.repeats_suppressed, 99_999);
    let line = s.to_string();
    assert!(line.contains(" repeats suppressed ("), "{line}");
    assert!(
        line.contains(" possible recursive locking (two locks of one class)"),
        "{line}"
    );
}

/// 1,000 transfers between random pairs of 10 accounts (different instances every time, one
/// class, the same two sites): one report.
#[test]
fn transfers_between_many_instances_give_one_report() {
    let _h = start();
    // The kernel's strict rule, under which every nesting of two accounts is a report.
    lockdep::set_nesting(lockdep::Nesting::Strict);
    let accounts: Vec<&'static LockMap> = (0..10).map(|_| new_lock("account")).collect();
    let mut x = 12345u32;
    for _ in 0..1000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let (from, to) = ((x >> 8) as usize % 10, (x >> 16) as usize % 10);
        if from == to {
            continue;
        }
        lock(accounts[from]);
        lock(accounts[to]);
        unlock(accounts[to]);
        unlock(accounts[from]);
    }
    assert_reports!(Report::MissingNestingAnnotation(_));
}

/// Each kind repeated at the same sites is delivered once; `reset` makes it new again.
#[test]
fn every_kind_of_report_is_deduplicated() {
    let _h = start();
    let (a, b, n, x) = (new_lock("A"), new_lock("B"), new_lock("N"), new_lock("X"));
    pair(a, b);
    for _ in 0..5 {
        // A circular dependency.
        lock(b);
        lock(a);
        unlock(a);
        unlock(b);
        // Recursive locking (the same instance).
        lock(x);
        lock(x);
        unlock(x);
        unlock(x);
        // A nest lock that is not held.
        lock_nest(a, n);
        unlock(a);
        // A bad unlock.
        unlock(x);
        // An annotation.
        lockdep::assert_held(x);
        // An invalid subclass.
        lockdep::acquire(x, 9, Mode::Exclusive, false, None, Location::caller());
        unlock(x);
        // A held lock whose memory is freed.
        lock(x);
        lockdep::check_no_locks_freed(
            x as *const LockMap as *const u8,
            std::mem::size_of::<LockMap>(),
        );
    }
    // A lock held at thread exit, by five threads, each from the same site.
    for _ in 0..5 {
        on_thread(move || lock(n));
    }
    let r = take();
    let kinds: Vec<ReportKind> = r.iter().map(Report::kind).collect();
    assert_eq!(
        kinds,
        [
            ReportKind::CircularDependency,
            ReportKind::RecursiveLocking,
            ReportKind::NestLockNotHeld,
            ReportKind::BadUnlockBalance,
            ReportKind::AssertionFailed,
            ReportKind::KeyMisuse,
            ReportKind::HeldLockFreed,
            ReportKind::LockHeldAtExit,
        ],
        "{r:#?}"
    );
    // After a reset every report is new again.
    lockdep::reset();
    for _ in 0..2 {
        unlock(x);
    }
    assert_reports!(Report::BadUnlockBalance { .. });
}

#[test]
fn every_occurrence_is_delivered_on_request() {
    let _h = start();
    // The kernel's strict rule, under which every nesting of two accounts is a report.
    lockdep::set_nesting(lockdep::Nesting::Strict);
    let accounts: Vec<&'static LockMap> = (0..2).map(|_| new_lock("account")).collect();
    let nest = |n: usize| {
        for _ in 0..n {
            lock(accounts[0]);
            lock(accounts[1]);
            unlock(accounts[1]);
            unlock(accounts[0]);
        }
    };
    lockdep::set_report_repeats(true);
    nest(10);
    assert_eq!(take().len(), 10);
    // The older switch means the same, for every kind.
    lockdep::set_report_each_cycle_once(true);
    nest(10);
    assert_eq!(take().len(), 0, "seen before: repeats only");
    lockdep::set_report_each_cycle_once(false);
    nest(3);
    assert_eq!(take().len(), 3);
    lockdep::set_report_repeats(false);
}

/// With `Policy::Panic` every attempt to close a cycle panics, also when the same cycle was
/// delivered before: earlier in this test, or (as happens under `cargo test`, where one
/// process runs every test) by another test that collected it with a callback.
#[test]
fn panic_policy_panics_at_every_occurrence_of_a_delivered_report() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    // "Another test" hit the cycle first, with the collecting callback.
    lock(b);
    lock(a);
    unlock(a);
    unlock(b);
    assert_one_cycle(&["A", "B"]);
    lockdep::set_policy(Policy::Panic);
    for attempt in 0..3 {
        let r = catch_unwind(|| {
            let _gb = guard(b);
            let _ga = guard(a);
        });
        let msg = r.expect_err("every occurrence panics");
        let text = msg.downcast_ref::<String>().expect("a report's text");
        assert!(
            text.contains("possible circular locking dependency"),
            "attempt {attempt}: {text}"
        );
        assert_eq!(lockdep::held_count(), 0);
    }
}

/// Cycles through classes of different dynamic keys are different reports, even when each
/// key's class takes the slot its zapped predecessor had (the old identity was the set of
/// slots, so the second and third cycles were counted as repeats of the first); the same
/// cycle through a key churned again and again, under the same name, is one report.
#[test]
fn a_cycle_is_told_apart_by_its_classes_not_by_their_slots() {
    let _h = start();
    let outer = new_lock("outer");
    let cycle_with = |name: &'static str| {
        let key = lockdep::DynamicKey::new(name);
        let m: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key(name, &key)));
        pair(outer, m);
        pair(m, outer);
        drop(key);
    };
    for name in ["alpha", "beta", "gamma"] {
        cycle_with(name);
    }
    let r = assert_reports!(
        Report::CircularDependency(_),
        Report::CircularDependency(_),
        Report::CircularDependency(_)
    );
    let mut named: Vec<String> = r
        .iter()
        .map(|r| {
            let mut c = r.cycle_classes();
            c.sort();
            c.dedup();
            c.join(",")
        })
        .collect();
    named.sort();
    assert_eq!(named, ["alpha,outer", "beta,outer", "gamma,outer"]);
    // One name, churned: the same bug each time.
    for _ in 0..20 {
        cycle_with("delta");
    }
    assert_reports!(Report::CircularDependency(_));
}
