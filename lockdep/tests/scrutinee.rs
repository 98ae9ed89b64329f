//! Guard temporaries in `match` and `if let` scrutinees live through the arms (edition 2021;
//! the edition-2024 `if let` rescoping is checked by `tests/edition2024`). Scenario C25 in the
//! project's list of validator scenarios; public sources: rust-lang/rust issues #37612 and
//! #131154, the clippy lint `significant_drop_in_scrutinee`, cyberlife-coder/VelesDB issue
//! #2109. The validator sees real guard lifetimes, and names the scrutinee line as the holder
//! site, since the user has no guard variable to look for.

#[path = "support/guarded.rs"]
mod guarded;

use std::collections::HashMap;

use guarded::{recursive_lines, reported, silent, start, Lock};
use lockdep::Report;

#[test]
fn a_match_arm_that_relocks_the_scrutinee_lock_is_recursive_locking() {
    let _s = start();
    let m = Lock::new(HashMap::from([(1, "one")]));
    let scrutinee = line!() + 1;
    let r = reported(|| match m.write().get(&2) {
        None => {
            m.write().insert(2, "two");
        }
        Some(v) => assert!(!v.is_empty()),
    });
    assert_eq!(recursive_lines(&r), (scrutinee, scrutinee + 2));
}

#[test]
fn edition_2021_if_let_keeps_the_guard_through_else() {
    let _s = start();
    let m = Lock::new(HashMap::from([(1, "one")]));
    let scrutinee = line!() + 2;
    let r = reported(|| {
        if let Some(v) = m.write().get(&2) {
            assert!(!v.is_empty());
        } else {
            m.write().insert(2, "two");
        }
    });
    assert_eq!(recursive_lines(&r), (scrutinee, scrutinee + 3));
}

#[test]
fn a_read_guard_in_an_if_let_scrutinee_orders_its_lock_before_the_body() {
    let _s = start();
    let (o, s) = (Lock::new(Some(7u32)), Lock::new(0u32));
    // T1 (check): O is read-held through the body: O -(SN)-> S.
    silent(|| {
        if let Some(t) = *o.read() {
            *s.write() += t;
        }
    });
    // T2 (failure): S -(EN)-> O closes the cycle.
    let r = reported(|| {
        let mut g = s.write();
        *g += 1;
        *o.write() = None;
    });
    match &r[..] {
        [Report::CircularDependency(c)] => {
            let mut classes = r[0].cycle_classes();
            classes.pop();
            assert_eq!(classes.len(), 2, "{classes:?}");
            assert_eq!(c.cycle[1].kind, lockdep::DepKind::SN);
        }
        other => panic!("expected a cycle, got {other:#?}"),
    }
}

#[test]
fn copying_the_value_out_first_drops_the_guard_and_is_silent() {
    let _s = start();
    let (o, s) = (Lock::new(Some(7u32)), Lock::new(0u32));
    silent(|| {
        let t = *o.read(); // the guard is dropped at the `;`
        if let Some(t) = t {
            *s.write() += t;
        }
    });
    silent(|| {
        let mut g = s.write();
        *g += 1;
        *o.write() = None;
    });
}
