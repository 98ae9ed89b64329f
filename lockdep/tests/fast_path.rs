//! The fast path's shortcuts: a push that finds its slot already holding the entry stores
//! only the depth (a chain head compares the slot's shown words, a nested entry also the memo
//! of its chain key below). None of them may hide a new dependency, a changed acquisition
//! site or mode, or another instance: each test re-takes locks in a loop (so the shortcut is
//! in use) and then changes one fact.

mod common;

use std::panic::Location;

use common::*;
use lockdep::{LockMap, Mode, Report};

/// The same nested lock over a different lock below is a new chain: validated, its
/// dependency recorded (a later inversion of it is reported).
#[test]
fn memo_does_not_hide_a_new_lock_below() {
    let _h = start();
    let a = new_lock("a");
    let b = new_lock("b");
    let c = new_lock("c");
    // One call site for every pair, so that only the lock below differs.
    let nest = |below: &LockMap| pair(below, c);
    for _ in 0..3 {
        nest(a);
    }
    nest(b);
    assert_reports!();
    pair(c, b);
    assert_one_cycle(&["b", "c"]);
}

/// A chain of three re-taken in a loop, then its middle lock changed: the top lock's memo
/// (over the old middle) does not vouch for the new chain.
#[test]
fn memo_does_not_survive_a_change_in_the_middle() {
    let _h = start();
    let a = new_lock("a");
    let b = new_lock("b");
    let x = new_lock("x");
    let c = new_lock("c");
    let chain = |mid: &LockMap| {
        lock(a);
        lock(mid);
        lock(c);
        unlock(c);
        unlock(mid);
        unlock(a);
    };
    for _ in 0..3 {
        chain(b);
    }
    chain(x);
    assert_reports!();
    pair(c, x);
    assert_one_cycle(&["c", "x"]);
}

/// A re-taken lock shows the site of its latest acquisition, on the stack's bottom (a chain
/// head) and above it (the memo path).
#[test]
fn a_re_taken_lock_shows_its_latest_site() {
    let _h = start();
    let a = new_lock("a");
    let b = new_lock("b");
    // Two pairs of sites, taken in turn: the slots are re-pushed with the same entries but
    // other sites.
    let site_pairs = [
        (Location::caller(), Location::caller()),
        (Location::caller(), Location::caller()),
    ];
    let mut sites = Vec::new();
    for round in 0..4 {
        let (sa, sb) = site_pairs[round % 2];
        lockdep::acquire(a, 0, Mode::Exclusive, false, None, sa);
        lockdep::acquire(b, 0, Mode::Exclusive, false, None, sb);
        let held = lockdep::held_locks();
        sites.push((held[0].site, held[1].site));
        assert_eq!(
            (held[0].site, held[1].site),
            (sa, sb),
            "round {round}: the sites of this round's acquisitions"
        );
        unlock(b);
        unlock(a);
    }
    assert_ne!(sites[0], sites[1], "two different pairs of sites were used");
    assert_reports!();
}

/// A lock re-taken in another mode over the same lock below is another chain: a write then
/// a recursive read of the same rwlock class under `a` are told apart (the read one, nested
/// under a write of its own class elsewhere, is validated on its own).
#[test]
fn a_re_taken_lock_in_another_mode_is_another_entry() {
    let _h = start();
    let a = new_lock("a");
    let r = new_lock("r");
    for _ in 0..3 {
        lock(a);
        read_rec(r);
        let held = lockdep::held_locks();
        assert_eq!(held[1].mode, Mode::RecursiveRead);
        unlock(r);
        unlock(a);
    }
    lock(a);
    lock(r);
    let held = lockdep::held_locks();
    assert_eq!(held[1].mode, Mode::Exclusive, "the slot shows the new mode");
    unlock(r);
    unlock(a);
    // The exclusive acquisition under `a` made the dependency a -> r (write): its inversion
    // is a cycle.
    pair(r, a);
    assert_reports!(Report::CircularDependency(_));
}

/// The same map at the same depth but another instance below (two maps of one class): the
/// slot's memo is over the chain key, which is the same, and the chain is the same: no
/// report, and the held stack names the instances of this round.
#[test]
fn a_memo_over_the_same_classes_names_this_rounds_instances() {
    let _h = start();
    fn make() -> &'static LockMap {
        new_lock("one site")
    }
    let below: Vec<&'static LockMap> = (0..2).map(|_| make()).collect();
    let top = new_lock("top");
    for round in 0..6 {
        let b = below[round % 2];
        lock(b);
        lock(top);
        let held = lockdep::held_locks();
        assert_eq!(held[0].instance, b as *const LockMap as usize);
        assert_eq!(held[1].instance, top as *const LockMap as usize);
        unlock(top);
        unlock(b);
    }
    assert_reports!();
}

/// A lock taken under a nest lock, then at the same site without one: its slot at the
/// bottom still names the nest lock, so the shortcut must not take it for a plain head (an
/// out-of-order release would then drop a nest count it never added, and a later lock be
/// counted past the depth limit).
#[test]
fn a_bottom_slot_left_by_a_nest_locked_entry_is_not_a_plain_head() {
    let _h = start();
    lockdep::set_max_depth(2);
    let (n, x, q, m, w) = (
        new_lock("n"),
        new_lock("x"),
        new_lock("q"),
        new_lock("m"),
        new_lock("w"),
    );
    let site = Location::caller();
    lock(n);
    lockdep::acquire(x, 0, Mode::Exclusive, false, Some(n), site);
    unlock(n);
    unlock(x);
    // The same lock at the same site, a plain chain head now.
    lockdep::acquire(x, 0, Mode::Exclusive, false, None, site);
    lock(q);
    lock_nest(m, q);
    unlock(x);
    // Held: q (depth 1) and m (covered by its nest lock q): `w` makes depth 2, the limit.
    lock(w);
    unlock(w);
    unlock(m);
    unlock(q);
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
    assert_reports!();
}

/// An out-of-order release moves the entries above it down a slot and leaves the old top
/// slot behind, with whatever pin it had: a later push into that slot must not inherit it.
#[test]
fn a_slot_left_by_an_entry_that_moved_down_carries_no_pin() {
    let _h = start();
    let (a, b, e) = (new_lock("a"), new_lock("b"), new_lock("e"));
    let sites = (Location::caller(), Location::caller(), Location::caller());
    let nest = || {
        lockdep::acquire(a, 0, Mode::Exclusive, false, None, sites.0);
        lockdep::acquire(b, 0, Mode::Exclusive, false, None, sites.1);
        lockdep::acquire(e, 0, Mode::Exclusive, false, None, sites.2);
    };
    for _ in 0..2 {
        nest();
        unlock(e);
        unlock(b);
        unlock(a);
    }
    // `e` pinned while `b`, below it, is released: `e` moves down, its old slot stays.
    nest();
    lockdep::pin(e);
    unlock(b);
    lockdep::unpin(e);
    unlock(e);
    unlock(a);
    assert_reports!();
    // The same nest again: `e` is back in that slot, not pinned. Releasing it while `a` is
    // pinned is fine; unpinning it is a bad unpin.
    nest();
    lockdep::pin(a);
    unlock(e);
    lockdep::unpin(a);
    assert_reports!();
    lockdep::acquire(e, 0, Mode::Exclusive, false, None, sites.2);
    lockdep::unpin(e);
    assert_reports!(Report::AssertionFailed {
        kind: lockdep::AssertKind::BadUnpin,
        ..
    });
    unlock(e);
    unlock(b);
    unlock(a);
    assert_eq!(lockdep::held_count(), 0);
}
