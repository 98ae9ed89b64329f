//! A reported order taken again and again: each occurrence after the first repeat is counted
//! without the validation (the thread keeps what its delivery came to), exactly as the
//! validation would have counted it, and validated again whenever something it depends on
//! changed: the graph lost a dependency, a suppression was declared, the policy panics,
//! repeats are asked for, the thread entered a test scope, or the validator was reset.
//!
//! Suppressions are process-wide and outlive `reset`, so every test names classes of its own.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe, Location};

use common::*;
use lockdep::{
    ClassRef, DynamicKey, LockMap, Mode, Policy, Report, ReportKind, Suppression, TaskContext,
};

type Site = &'static Location<'static>;

#[track_caller]
fn here() -> Site {
    Location::caller()
}

fn lock_at(m: &LockMap, subclass: u8, site: Site) {
    lockdep::acquire(m, subclass, Mode::Exclusive, false, None, site);
}

/// `b` then `a` with guards (released last first, on an unwind too), `n` times, at one pair
/// of sites.
fn inverted(a: &'static LockMap, b: &'static LockMap, n: usize) {
    for _ in 0..n {
        let _gb = guard(b);
        let _ga = guard(a);
    }
}

/// Two locks A and B, `A -> B` recorded, then `B -> A` taken `n` times (reported once, then
/// repeats, kept by the thread from the second on).
fn reported_inversion(n: usize) -> (&'static LockMap, &'static LockMap) {
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    inverted(a, b, n);
    assert_one_cycle(&["A", "B"]);
    (a, b)
}

/// Every counter an occurrence of a cycle report moves.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Counts {
    reports: u64,
    distinct: u64,
    repeats: u64,
    cycle_repeats: u64,
    cycles_found: u64,
    suppression_hits: u64,
}

fn counts() -> Counts {
    let s = lockdep::stats();
    Counts {
        reports: s.reports,
        distinct: s.distinct_reports,
        repeats: s.repeats_suppressed,
        cycle_repeats: s
            .suppressed_by_kind
            .iter()
            .find(|k| k.0 == ReportKind::CircularDependency)
            .map_or(0, |k| k.1),
        cycles_found: s.cycles_found,
        suppression_hits: s.suppression_hits,
    }
}

/// `now - then`, counter by counter.
fn since(then: Counts) -> Counts {
    let now = counts();
    Counts {
        reports: now.reports - then.reports,
        distinct: now.distinct - then.distinct,
        repeats: now.repeats - then.repeats,
        cycle_repeats: now.cycle_repeats - then.cycle_repeats,
        cycles_found: now.cycles_found - then.cycles_found,
        suppression_hits: now.suppression_hits - then.suppression_hits,
    }
}

/// `n` occurrences of a cycle that was delivered before, counted as repeats.
fn repeats(n: u64) -> Counts {
    Counts {
        reports: n,
        distinct: 0,
        repeats: n,
        cycle_repeats: n,
        cycles_found: n,
        suppression_hits: 0,
    }
}

/// Whether the dependency `from -> to` is recorded.
fn recorded(from: &str, to: &str) -> bool {
    lockdep::dependencies()
        .iter()
        .any(|d| d.from == from && d.to == to)
}

#[test]
fn a_reported_order_taken_10000_times_is_counted_10000_times() {
    let _h = start();
    let (a, b) = (new_lock("A"), new_lock("B"));
    pair(a, b);
    let before = counts();
    inverted(a, b, 10_000);
    assert_one_cycle(&["A", "B"]);
    assert_eq!(
        since(before),
        Counts {
            reports: 10_000,
            distinct: 1,
            repeats: 9_999,
            cycle_repeats: 9_999,
            cycles_found: 10_000,
            suppression_hits: 0,
        }
    );
    assert!(
        !recorded("B", "A"),
        "the inverted dependency is never recorded"
    );
    assert_eq!(lockdep::held_count(), 0);
    // A lock taken under the inverted pair is still validated against both.
    let c_lock = new_lock("C");
    lock(b);
    lock(a);
    lock(c_lock);
    unlock(c_lock);
    unlock(a);
    unlock(b);
    assert_reports!();
    assert!(
        recorded("B", "C"),
        "B reaches C: A's acquisition was not recorded"
    );
    assert!(recorded("A", "C"));
}

/// The cycle goes through a class of a dynamic key; once the key is unregistered (its class
/// and dependencies zapped), the order that closed the cycle is valid and is recorded at its
/// next occurrence, not counted as a repeat of a cycle that no longer exists.
#[test]
fn a_repeat_is_validated_again_once_a_dependency_of_its_cycle_is_gone() {
    let _h = start();
    let key = DynamicKey::new("middle");
    let (a, b) = (new_lock("A"), new_lock("B"));
    let m: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key("M", &key)));
    pair(a, m);
    pair(m, b);
    inverted(a, b, 5);
    assert_one_cycle(&["A", "M", "B"]);
    key.unregister();
    let before = counts();
    inverted(a, b, 3);
    assert_reports!();
    assert_eq!(since(before), repeats(0));
    assert!(recorded("B", "A"), "valid now, and recorded");
}

/// A dependency recorded after the repeats began may close a shorter cycle through the same
/// order: the next occurrence is searched again and reports it, a new report (`A -> B` is
/// recorded here: the order `B -> A` that would close a cycle with it never was).
#[test]
fn a_shorter_cycle_through_a_repeated_order_is_reported() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    pair(a, c);
    pair(c, b);
    inverted(a, b, 3);
    assert_one_cycle(&["A", "B", "C"]);
    pair(a, b);
    assert_reports!();
    inverted(a, b, 3);
    assert_one_cycle(&["A", "B"]);
}

#[test]
fn a_suppression_declared_after_the_repeats_began_counts_the_next_ones() {
    let _h = start();
    let (a, b) = (new_lock("late.a"), new_lock("late.b"));
    pair(a, b);
    inverted(a, b, 3);
    assert_one_cycle(&["late.a", "late.b"]);
    let id = lockdep::suppress(
        Suppression::pair("late.a", "late.b").kind(ReportKind::CircularDependency),
    )
    .unwrap();
    let before = counts();
    inverted(a, b, 5);
    assert_reports!();
    assert_eq!(
        since(before),
        Counts {
            reports: 5,
            cycles_found: 5,
            suppression_hits: 5,
            ..repeats(0)
        }
    );
    let hits = |id| {
        lockdep::suppressions()
            .into_iter()
            .find(|s| s.id == id)
            .unwrap()
            .hits
    };
    assert_eq!(hits(id), 5);
    // The same order at another site is a report the suppression also matches (it names no
    // site), counted for it too.
    let before = counts();
    for _ in 0..4 {
        lock(b);
        lock(a);
        unlock(a);
        unlock(b);
    }
    assert_reports!();
    assert_eq!(since(before).suppression_hits, 4);
    assert_eq!(hits(id), 9);
}

/// A suppression that names a site matches the order at that site only: the same chain at
/// another site is kept apart, and each keeps its own count.
#[test]
fn the_same_order_at_two_sites_is_counted_for_each_site() {
    let _h = start();
    let (a, b) = (new_lock("site.a"), new_lock("site.b"));
    pair(a, b);
    let quiet: &'static Location<'static> = Location::caller();
    let loud: &'static Location<'static> = Location::caller();
    let at = |site| {
        lockdep::acquire(b, 0, lockdep::Mode::Exclusive, false, None, site);
        lockdep::acquire(a, 0, lockdep::Mode::Exclusive, false, None, site);
        unlock(a);
        unlock(b);
    };
    lockdep::suppress(
        Suppression::pair(
            ClassRef::name("site.a").acquired_at(quiet.file(), quiet.line()),
            "site.b",
        )
        .kind(ReportKind::CircularDependency),
    )
    .unwrap();
    let before = counts();
    for _ in 0..5 {
        at(quiet);
        at(loud);
    }
    assert_one_cycle(&["site.a", "site.b"]);
    assert_eq!(
        since(before),
        Counts {
            reports: 10,
            distinct: 1,
            repeats: 4,
            cycle_repeats: 4,
            cycles_found: 10,
            suppression_hits: 5,
        }
    );
}

#[test]
fn the_panic_policy_still_panics_at_a_repeat_counted_before() {
    let _h = start();
    let (a, b) = reported_inversion(5);
    lockdep::set_policy(Policy::Panic);
    for attempt in 0..3 {
        let r = catch_unwind(|| inverted(a, b, 1));
        assert!(r.is_err(), "attempt {attempt} panics");
        assert_eq!(lockdep::held_count(), 0);
    }
}

#[test]
fn every_occurrence_is_delivered_once_repeats_are_asked_for() {
    let _h = start();
    let (a, b) = reported_inversion(5);
    lockdep::set_report_repeats(true);
    inverted(a, b, 4);
    lockdep::set_report_repeats(false);
    assert_eq!(count_cycles(&take()), 4);
    inverted(a, b, 4);
    assert_reports!();
}

#[test]
fn a_test_scope_sees_a_repeat_counted_before() {
    let _h = start();
    let (a, b) = reported_inversion(5);
    let r = catch_unwind(|| {
        let _scope = lockdep::test_scope();
        inverted(a, b, 1);
    });
    assert!(r.is_err(), "the scope panics at the repeat");
    assert_eq!(lockdep::held_count(), 0);
}

#[test]
fn after_a_reset_the_order_is_reported_again() {
    let _h = start();
    let (a, b) = reported_inversion(5);
    drop(_h);
    let _h = start();
    pair(a, b);
    inverted(a, b, 5);
    assert_one_cycle(&["A", "B"]);
}

/// Many threads taking the reported order at once: every occurrence counted, none lost.
#[test]
fn repeats_on_many_threads_are_each_counted() {
    let _h = start();
    let (a, b) = reported_inversion(1);
    let before = counts();
    let threads: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || inverted(a, b, 2_500)))
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_reports!();
    assert_eq!(since(before), repeats(10_000));
}

/// More reported orders than a thread keeps, taken round-robin: the ones it let go are
/// validated again, and every occurrence is still counted once.
#[test]
fn more_reported_orders_than_a_thread_keeps_are_each_counted() {
    let _h = start();
    // A class of its own name each: a dynamic key each.
    let lock_of = |name: String| -> &'static LockMap {
        let name: &'static str = Box::leak(name.into_boxed_str());
        let key: &'static DynamicKey = Box::leak(Box::new(DynamicKey::new(name)));
        Box::leak(Box::new(LockMap::with_dynamic_key(name, key)))
    };
    let pairs: Vec<(&'static LockMap, &'static LockMap)> = (0..40)
        .map(|i| (lock_of(format!("P{i}")), lock_of(format!("Q{i}"))))
        .collect();
    for &(a, b) in &pairs {
        pair(a, b);
        inverted(a, b, 2);
    }
    assert_eq!(count_cycles(&take()), 40);
    let before = counts();
    for _ in 0..3 {
        for &(a, b) in &pairs {
            inverted(a, b, 2);
        }
    }
    assert_reports!();
    assert_eq!(since(before), repeats(240));
}

/// A chain kept for two instances of one key (K/0 held, K/1 taken) and the same chain on one
/// instance, taken again under subclass 1 at the same sites: the chain keys and the sites are
/// equal, but the second is recursive locking of one lock, a report of its own.
#[test]
fn the_same_instance_under_another_subclass_is_reported_after_repeats_of_two() {
    let _h = start();
    let (m1, m2) = {
        let ms: Vec<&'static LockMap> = (0..2).map(|_| new_lock("K")).collect();
        (ms[0], ms[1])
    };
    let (s1, s2, s3) = (here(), here(), here());
    lock_at(m2, 1, s3);
    lock_at(m1, 0, s3);
    unlock(m1);
    unlock(m2);
    for _ in 0..4 {
        lock_at(m1, 0, s1);
        lock_at(m2, 1, s2);
        unlock(m2);
        unlock(m1);
    }
    assert_one_cycle(&["K", "K/1"]);
    lock_at(m1, 0, s1);
    lock_at(m1, 1, s2);
    assert_reports!(Report::RecursiveLocking(_));
    unlock(m1);
    unlock(m1);
    assert_eq!(lockdep::held_count(), 0);
}

/// The async lock X, held by a task since a poll on a thread that held nothing: its entry
/// goes on top of W when the task is polled on a thread holding W, with no `W -> X` recorded.
/// Outside a poll the same chain (X taken as a blocking lock at the same site, after W) stops
/// the walk of the held locks at X, which reaches B for W; in a poll the walk goes on to W and
/// records `W -> B` itself. So a chain kept outside a poll (B taken over L, a reported order)
/// is validated again in one.
#[test]
fn a_poll_walks_further_than_a_repeat_kept_outside_it() {
    let _h = start();
    let [w, x, l, b] = [new_lock("W"), new_lock("X"), new_lock("L"), new_lock("B")];
    pair(b, l);
    let [sw, sx, sl, sb] = [here(), here(), here(), here()];
    let ctx = TaskContext::new();
    let poll = ctx.enter();
    let _x = lockdep::task_acquire(x, 0, Mode::Exclusive, false, sx);
    poll.exit(true);
    for _ in 0..4 {
        lock_at(w, 0, sw);
        lock_at(x, 0, sx);
        lock_at(l, 0, sl);
        lock_at(b, 0, sb);
        unlock(b);
        unlock(l);
        unlock(x);
        unlock(w);
    }
    assert_one_cycle(&["B", "L"]);
    assert!(recorded("W", "X") && recorded("X", "B"));
    assert!(!recorded("W", "B"), "reached through X");
    for _ in 0..3 {
        lock_at(w, 0, sw);
        let poll = ctx.enter();
        lock_at(l, 0, sl);
        lock_at(b, 0, sb);
        unlock(b);
        unlock(l);
        poll.exit(true);
        unlock(w);
    }
    assert_reports!();
    assert!(recorded("W", "B"), "the poll's walk past X");
    assert_eq!(lockdep::held_count(), 0);
}

/// Accounts of one class (`n` of them, made at one site).
fn accounts(n: usize) -> Vec<&'static LockMap> {
    (0..n).map(|_| new_lock("acct")).collect()
}

/// Two instances of one class taken against the order of their pair (instance order):
/// counted as exactly as a cycle of classes, and another pair's inversion is its own report.
#[test]
fn an_instance_order_inversion_taken_again_is_counted_and_another_pair_reported() {
    let _h = start();
    let acct = accounts(3);
    let (a, b, c) = (acct[0], acct[1], acct[2]);
    pair(a, b);
    pair(a, c);
    assert_reports!();
    let before = counts();
    inverted(a, b, 1_000);
    assert_one_cycle(&["acct", "acct"]);
    assert_eq!(
        since(before),
        Counts {
            reports: 1_000,
            distinct: 1,
            repeats: 999,
            cycle_repeats: 999,
            cycles_found: 1_000,
            suppression_hits: 0,
        }
    );
    // The same classes and sites, other instances: the chain key and the sites are the same,
    // the instances are not.
    inverted(a, c, 3);
    assert_one_cycle(&["acct", "acct"]);
    assert_eq!(lockdep::held_count(), 0);
}

/// The nesting rule is part of the verdict: under the kernel's strict rule the same nesting
/// is a missing annotation, reported as soon as the rule changes.
#[test]
fn a_repeat_kept_under_instance_order_is_validated_again_under_the_strict_rule() {
    let _h = start();
    let acct = accounts(2);
    let (a, b) = (acct[0], acct[1]);
    pair(a, b);
    inverted(a, b, 4);
    assert_one_cycle(&["acct", "acct"]);
    lockdep::set_nesting(lockdep::Nesting::Strict);
    inverted(a, b, 2);
    lockdep::set_nesting(lockdep::Nesting::InstanceOrder);
    assert_reports!(Report::MissingNestingAnnotation(_));
}

/// One poll of `ctx` that ends pending with `m` taken (blocking) at `site` and still held; `m`
/// is released after the poll.
fn await_holding(ctx: &TaskContext, m: &LockMap, site: Site) {
    let poll = ctx.enter();
    lock_at(m, 0, site);
    poll.exit(true);
    unlock(m);
}

/// A blocking lock held across an `.await` poll after poll: each poll counted as the report's
/// delivery would, the same lock at another site a report of its own, a suppression declared
/// meanwhile counted, and the panic policy still panicking.
#[test]
fn a_lock_held_across_an_await_poll_after_poll_is_counted_each_time() {
    let _h = start();
    let m = new_lock("await.m");
    let ctx = TaskContext::new();
    let (s1, s2) = (here(), here());
    let before = counts();
    for _ in 0..1_000 {
        await_holding(&ctx, m, s1);
    }
    assert_reports!(Report::HeldAcrossAwait { .. });
    let c = since(before);
    assert_eq!((c.reports, c.distinct, c.repeats), (1_000, 1, 999), "{c:?}");
    for _ in 0..3 {
        await_holding(&ctx, m, s2);
    }
    assert_reports!(Report::HeldAcrossAwait { .. });
    lockdep::suppress(Suppression::class("await.m").kind(ReportKind::HeldAcrossAwait)).unwrap();
    let before = counts();
    for _ in 0..5 {
        await_holding(&ctx, m, s1);
    }
    assert_reports!();
    let c = since(before);
    assert_eq!(
        (c.reports, c.suppression_hits, c.repeats),
        (5, 5, 0),
        "{c:?}"
    );
}

#[test]
fn the_panic_policy_panics_at_every_poll_that_holds_a_lock_across_an_await() {
    let _h = start();
    let m = new_lock("M");
    let ctx = TaskContext::new();
    let site = here();
    for _ in 0..4 {
        await_holding(&ctx, m, site);
    }
    assert_reports!(Report::HeldAcrossAwait { .. });
    lockdep::set_policy(Policy::Panic);
    for attempt in 0..3 {
        let r = catch_unwind(AssertUnwindSafe(|| await_holding(&ctx, m, site)));
        assert!(r.is_err(), "poll {attempt} panics");
        unlock(m);
    }
    assert_eq!(lockdep::held_count(), 0);
}
