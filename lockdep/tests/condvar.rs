//! Condvar dependency tracking, an opt-in mode (scenario C27 in the project's list of
//! validator scenarios; public sources: drey7925/perovskite issue #24, Amanieu/parking_lot
//! issue #505). A thread waits on a condvar while it still holds a read lock S; the thread
//! that would notify it must first read S; a writer queued on S between them stalls all three.
//! No thread takes two locks in opposite orders, so only the dependencies `S -> cv` (the
//! waiter holds S while it waits) and `cv -> S` (the notification comes after S is taken)
//! show it. The condvar wrapper's calls: `release(mutex)`, `condvar_wait`, block, re-acquire;
//! `condvar_notify` on notify.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{CondvarMap, DepKind, LockMap, Mode, Report};

/// `wait cv (M)` as a wrapper does it: release M, announce the wait, re-acquire M.
#[track_caller]
fn wait(cv: &CondvarMap, m: &LockMap) {
    let site = Location::caller();
    lockdep::release(m, site);
    lockdep::condvar_wait(cv, site);
    lockdep::acquire(m, 0, Mode::Exclusive, false, None, site);
}

#[track_caller]
fn notify(cv: &CondvarMap) {
    lockdep::condvar_notify(cv, Location::caller());
}

fn fixture() -> (&'static LockMap, &'static LockMap, &'static CondvarMap) {
    let s = new_lock("S");
    let m = new_lock("M");
    let cv: &'static CondvarMap = Box::leak(Box::new(CondvarMap::named("cv")));
    (s, m, cv)
}

/// T1: read S; lock M; wait cv (M); unlock M; unlock S.
fn waiter_holding_s(s: &'static LockMap, m: &'static LockMap, cv: &'static CondvarMap) {
    on_thread(move || {
        read(s);
        lock(m);
        wait(cv, m);
        unlock(m);
        unlock(s);
    });
}

#[test]
fn a_wait_under_a_read_lock_the_notifier_needs_is_a_cycle_with_tracking_on() {
    let _h = start();
    lockdep::set_condvar_tracking(true);
    let (s, m, cv) = fixture();
    waiter_holding_s(s, m, cv);
    assert_reports!();
    // T2: read S; lock M; notify cv  <- step
    let notify_line = line!() + 4;
    on_thread(move || {
        read(s);
        lock(m);
        notify(cv);
        unlock(m);
        unlock(s);
    });
    let r = assert_reports!(Report::CircularDependency(_));
    let Report::CircularDependency(c) = &r[0] else {
        unreachable!()
    };
    // The new dependency cv -(EN)-> S at the notify site, closing S -(SN)-> cv from the wait.
    assert_eq!(c.cycle[0].from, "cv");
    assert_eq!(c.cycle[0].to, "S");
    assert_eq!(c.cycle[0].kind, DepKind::EN);
    assert_eq!(c.cycle[0].from_site.line(), notify_line);
    let back = c.cycle.last().unwrap();
    assert_eq!((back.from.as_str(), back.to.as_str()), ("S", "cv"));
    assert_eq!(back.kind, DepKind::SN);
    // The report shows the notifier's held locks.
    assert_eq!(c.held.len(), 2);
    lockdep::set_condvar_tracking(false);
}

#[test]
fn a_recursive_read_by_the_notifier_is_not_a_deadlock() {
    let _h = start();
    lockdep::set_condvar_tracking(true);
    let (s, m, cv) = fixture();
    waiter_holding_s(s, m, cv);
    // T2: read_rec S; lock M; notify cv: cv -(ER)-> S then S -(SN)-> cv is not strong.
    on_thread(move || {
        read_rec(s);
        lock(m);
        notify(cv);
        notify(cv);
        unlock(m);
        unlock(s);
    });
    assert_reports!();
    assert!(lockdep::dependencies()
        .iter()
        .any(|d| d.from == "cv" && d.to == "S" && d.kinds == [DepKind::ER]));
    lockdep::set_condvar_tracking(false);
}

#[test]
fn a_waiter_that_released_the_read_lock_first_is_silent() {
    let _h = start();
    lockdep::set_condvar_tracking(true);
    let (s, m, cv) = fixture();
    // T1: read S; unlock S; lock M; wait cv (M); unlock M
    on_thread(move || {
        read(s);
        unlock(s);
        lock(m);
        wait(cv, m);
        unlock(m);
    });
    on_thread(move || {
        read(s);
        lock(m);
        notify(cv);
        unlock(m);
        unlock(s);
    });
    assert_reports!();
    lockdep::set_condvar_tracking(false);
}

#[test]
fn without_tracking_waits_and_notifies_record_nothing() {
    let _h = start();
    assert!(!lockdep::set_condvar_tracking(false), "off by default");
    let (s, m, cv) = fixture();
    waiter_holding_s(s, m, cv);
    on_thread(move || {
        read(s);
        lock(m);
        notify(cv);
        unlock(m);
        unlock(s);
    });
    assert_reports!();
    // The wait's re-lock of M was still validated like any acquisition, and nothing about cv
    // was recorded.
    assert!(lockdep::dependencies()
        .iter()
        .all(|d| d.from != "cv" && d.to != "cv"));
    assert_eq!(lockdep::held_count(), 0);
}
