//! Upgradable reads: parking_lot's third reader-writer mode, with the verdicts derived from
//! its `RawRwLock` (an upgradable read is shared with readers, exclusive with writers and
//! other upgradable reads; a writer cannot queue while one is held; `upgrade` waits for every
//! other reader). Scenario C33 in the project's list of validator scenarios; public sources:
//! parking_lot `src/raw_rwlock.rs` (`lock_upgradable_slow`, `upgrade_slow`), parking_lot
//! issues #101, #200, #489 and PR #532, whose published matrix calls `read -> upgradable`
//! safe (it is not: a writer queued after the read blocks the upgradable read, and waits
//! for the read).

mod common;

use std::panic::Location;

use common::*;
use lockdep::{AssertKind, LockMap, Mode, Report};

#[track_caller]
fn upgradable(m: &LockMap) {
    lock_mode(m, Mode::Upgradable);
}

#[track_caller]
fn write(m: &LockMap) {
    lock_mode(m, Mode::Exclusive);
}

/// Releases everything `m` has on this thread's stack.
fn unlock_all(m: &LockMap) {
    while lockdep::is_held(m) {
        unlock(m);
    }
}

/// Runs one line of the same-lock matrix on a fresh lock; returns what was reported.
fn line(body: impl Fn(&'static LockMap)) -> Vec<Report> {
    let r = new_lock("R");
    body(r);
    unlock_all(r);
    lockdep::reset();
    take()
}

fn recursive_at(r: &[Report], line: u32) -> bool {
    matches!(r, [Report::RecursiveLocking(s)] if s.acquiring.site.line() == line)
}

#[test]
fn a_read_then_an_upgradable_read_of_one_lock_is_recursive_locking() {
    let _h = start();
    // 1. read R; upgradable R
    let at = line!() + 1;
    let r = line(|m| {
        read(m);
        upgradable(m);
    });
    assert!(recursive_at(&r, at + 2), "line 1: {r:#?}");
    // 2. read_rec R; upgradable R
    let r = line(|m| {
        read_rec(m);
        upgradable(m);
    });
    assert!(
        matches!(r[..], [Report::RecursiveLocking(_)]),
        "line 2: {r:#?}"
    );
}

#[test]
fn reads_under_an_upgradable_read_and_its_upgrade_are_silent() {
    let _h = start();
    // 3. upgradable R; read R
    let r = line(|m| {
        upgradable(m);
        read(m);
    });
    assert!(r.is_empty(), "line 3: {r:#?}");
    // 4. upgradable R; read_rec R
    let r = line(|m| {
        upgradable(m);
        read_rec(m);
    });
    assert!(r.is_empty(), "line 4: {r:#?}");
    // 5. upgradable R; upgrade R: then it is held exclusively.
    let r = line(|m| {
        upgradable(m);
        lockdep::upgrade(m, Location::caller());
        assert_eq!(lockdep::held_locks()[0].mode, Mode::Exclusive);
        lockdep::assert_held_mode(m, Mode::Exclusive);
    });
    assert!(r.is_empty(), "line 5: {r:#?}");
}

#[test]
fn an_upgrade_while_the_thread_also_reads_the_lock_waits_for_itself() {
    let _h = start();
    // 6. upgradable R; read R; upgrade R   <- the upgrade
    let at = line!() + 4;
    let r = line(|m| {
        upgradable(m);
        read(m);
        lockdep::upgrade(m, Location::caller());
    });
    assert!(
        matches!(&r[..], [Report::RecursiveLocking(s)] if s.acquiring.site.line() == at
            && s.acquiring.mode == Mode::Exclusive && s.holding.mode == Mode::Read),
        "line 6: {r:#?}"
    );
}

#[test]
fn upgradable_reads_exclude_each_other_and_writers() {
    let _h = start();
    // 7. upgradable R; upgradable R
    let r = line(|m| {
        upgradable(m);
        upgradable(m);
    });
    assert!(
        matches!(r[..], [Report::RecursiveLocking(_)]),
        "line 7: {r:#?}"
    );
    // 8. upgradable R; write R
    let r = line(|m| {
        upgradable(m);
        write(m);
    });
    assert!(
        matches!(r[..], [Report::RecursiveLocking(_)]),
        "line 8: {r:#?}"
    );
    // 9. write R; upgradable R
    let r = line(|m| {
        write(m);
        upgradable(m);
    });
    assert!(
        matches!(r[..], [Report::RecursiveLocking(_)]),
        "line 9: {r:#?}"
    );
}

#[test]
fn an_upgrade_under_a_lock_is_a_write_acquisition_under_it() {
    let _h = start();
    // (a) T1: lock B; upgradable A; upgrade A; unlock A; unlock B   (B -> A, a write of A)
    //     T2: read A; lock B   <- step                                 (A -(SN)-> B)
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || {
        lock(b);
        upgradable(a);
        lockdep::upgrade(a, Location::caller());
        unlock(a);
        unlock(b);
    });
    assert_reports!();
    on_thread(move || pair_modes(a, Mode::Read, b, Mode::Exclusive));
    assert_one_cycle(&["A", "B"]);
}

#[test]
fn a_plain_read_cannot_wait_for_an_upgradable_holder() {
    let _h = start();
    // (b) T1: upgradable A; lock B; unlock B; unlock A                 (A(upgradable) -> B)
    //     T2: lock B; read A; unlock A; unlock B                        (B -> A(read))
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || pair_modes(a, Mode::Upgradable, b, Mode::Exclusive));
    on_thread(move || pair_modes(b, Mode::Exclusive, a, Mode::Read));
    assert_reports!();
    // A write of A in T2's place would wait for the upgradable holder: a cycle.
    on_thread(move || pair_modes(b, Mode::Exclusive, a, Mode::Exclusive));
    let r = assert_one_cycle(&["A", "B"]);
    let Report::CircularDependency(c) = &r else {
        unreachable!()
    };
    assert_eq!(c.cycle[1].kind, lockdep::DepKind::UN);
}

#[test]
fn two_upgradable_reads_of_one_lock_exclude_each_other_across_locks() {
    let _h = start();
    // (c) T1: upgradable A; lock B; unlock B; unlock A                 (A(upgradable) -> B)
    //     T2: lock B; upgradable A   <- step                           (B -> A(upgradable))
    let (a, b) = (new_lock("A"), new_lock("B"));
    on_thread(move || pair_modes(a, Mode::Upgradable, b, Mode::Exclusive));
    on_thread(move || pair_modes(b, Mode::Exclusive, a, Mode::Upgradable));
    let r = assert_one_cycle(&["A", "B"]);
    let Report::CircularDependency(c) = &r else {
        unreachable!()
    };
    assert_eq!(c.cycle[0].kind, lockdep::DepKind::EU);
    assert!(r.to_string().contains("(upgradable read)"));
}

#[test]
fn upgrade_misuse_is_reported() {
    let _h = start();
    let a = new_lock("A");
    lockdep::upgrade(a, Location::caller());
    assert_reports!(Report::AssertionFailed {
        kind: AssertKind::NotHeld,
        ..
    });
    assert!(!lockdep::is_held(a));
    read(a);
    lockdep::upgrade(a, Location::caller());
    // The report lists the lock it is about: it is still held when the report is made.
    let r = assert_reports!(Report::AssertionFailed {
        kind: AssertKind::WrongMode,
        ..
    });
    let Report::AssertionFailed { held, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!(held.len(), 1, "{r:#?}");
    assert_eq!(lockdep::held_locks()[0].mode, Mode::Exclusive);
    // A downgrade to upgradable and a non-blocking upgrade change the mode in place.
    lockdep::set_held_mode(a, Mode::Upgradable);
    assert_eq!(lockdep::held_locks()[0].mode, Mode::Upgradable);
    lockdep::set_held_mode(a, Mode::Exclusive);
    unlock(a);
    assert_reports!();
    assert_eq!(lockdep::held_count(), 0);
}

/// This thread's entries of its held locks: (mode, acquiring line), bottom first.
fn modes_and_lines() -> Vec<(Mode, u32)> {
    lockdep::held_locks()
        .iter()
        .map(|l| (l.mode, l.site.line()))
        .collect()
}

#[test]
fn a_release_in_a_mode_takes_that_entry_of_a_lock_held_twice() {
    let _h = start();
    let here = Location::caller();
    let m = new_lock("R2");
    // read R; upgradable R (reported: a read under which an upgradable read is taken), then
    // the read goes first: the upgradable read stays, with its own line.
    read(m);
    let at = line!() + 1;
    upgradable(m);
    assert_eq!(take().len(), 1);
    lockdep::release_mode(m, Mode::Read, here);
    assert_eq!(modes_and_lines(), [(Mode::Upgradable, at)]);
    // A read under the upgradable read is silent, and so is the upgrade (no read is left).
    read(m);
    lockdep::release_mode(m, Mode::Read, here);
    lockdep::upgrade(m, here);
    assert_reports!();
    lockdep::release_mode(m, Mode::Exclusive, here);
    assert_eq!(lockdep::held_count(), 0);

    // upgradable R; read R (silent), then the upgradable read goes first: the read stays, so
    // another read of R is a recursive read under a read, reported.
    upgradable(m);
    let at = line!() + 1;
    read(m);
    lockdep::release_mode(m, Mode::Upgradable, here);
    assert_eq!(modes_and_lines(), [(Mode::Read, at)]);
    assert_reports!();
    read(m);
    assert_reports!(Report::RecursiveLocking(_));
    unlock_all(m);

    // A mode the thread does not hold the lock in takes the topmost entry, as `release`.
    read(m);
    lockdep::release_mode(m, Mode::Exclusive, here);
    assert_reports!();
    assert_eq!(lockdep::held_count(), 0);
    // And a lock not held at all is a bad unlock balance, as with `release`.
    lockdep::release_mode(m, Mode::Read, here);
    assert_reports!(Report::BadUnlockBalance { .. });
}

#[test]
fn a_mode_change_from_a_mode_changes_that_entry_of_a_lock_held_twice() {
    let _h = start();
    let m = new_lock("R3");
    upgradable(m);
    let at_read = line!() + 1;
    read(m);
    // The upgradable read, lower on the stack, is downgraded: two reads now.
    lockdep::change_held_mode(m, Mode::Upgradable, Mode::Read);
    assert_eq!(
        modes_and_lines().iter().map(|e| e.0).collect::<Vec<_>>(),
        [Mode::Read, Mode::Read]
    );
    assert_eq!(modes_and_lines()[1], (Mode::Read, at_read));
    // `set_held_mode` keeps changing the topmost entry.
    lockdep::set_held_mode(m, Mode::RecursiveRead);
    assert_eq!(
        modes_and_lines().iter().map(|e| e.0).collect::<Vec<_>>(),
        [Mode::Read, Mode::RecursiveRead]
    );
    unlock_all(m);
    assert_reports!();
    lockdep::change_held_mode(m, Mode::Read, Mode::Exclusive);
    assert_reports!(Report::AssertionFailed {
        kind: AssertKind::NotHeld,
        ..
    });
}

#[test]
fn an_upgrade_under_a_lock_taken_after_the_upgradable_read_is_no_cycle() {
    let _h = start();
    // upgradable R; lock A; upgrade R (A -> R, an upgrade)    with R(upgradable) -> A
    // Another thread holding R upgradable (or exclusively) cannot exist meanwhile, so the
    // path R -> A -> R is no deadlock; only a reader of R can block the upgrade.
    let (r, a) = (new_lock("R"), new_lock("A"));
    let upgrade_under_a = move || {
        upgradable(r);
        lock(a);
        lockdep::upgrade(r, Location::caller());
        unlock(r);
        unlock(a);
    };
    on_thread(upgrade_under_a);
    assert_reports!();
    // Again, with the chain cached: still silent.
    on_thread(upgrade_under_a);
    assert_reports!();
    // A plain write of R under A on the same stack is another acquisition (its chain is not
    // the upgrade's): it waits for an upgradable holder of R that waits for A. A cycle.
    on_thread(move || pair(a, r));
    let c = assert_one_cycle(&["R", "A"]);
    assert!(c.to_string().contains("[UN]"), "{c}");
}

#[test]
fn an_upgrade_still_waits_for_a_reader_that_waits_for_a_lock_it_holds() {
    let _h = start();
    // T1: upgradable R; lock A; upgrade R            (A -> R, an upgrade)
    // T2: read R; lock A   <- step                   (R(read) -> A): T2's read blocks T1's
    //     upgrade while T1 holds A: a deadlock.
    let (r, a) = (new_lock("R"), new_lock("A"));
    on_thread(move || {
        upgradable(r);
        lock(a);
        lockdep::upgrade(r, Location::caller());
        unlock(r);
        unlock(a);
    });
    assert_reports!();
    on_thread(move || pair_modes(r, Mode::Read, a, Mode::Exclusive));
    assert_one_cycle(&["R", "A"]);
}
