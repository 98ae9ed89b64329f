//! The held-at-exit check and lock operations in other thread-local destructors, on either
//! side of it: before it they are tracked as usual; after it they are still validated (a
//! lock order seen only there is reported, locks the check reported can still be released
//! without a bad-unlock report), locks still held when the thread is gone are not reported
//! again, and nothing crashes or hangs.
//!
//! Thread-local destructors run in the reverse order of their registration, and lockdep's
//! exit check is registered by the thread's first lock operation, so a thread-local touched
//! before that operation is destroyed after the check, one touched after it before.

mod common;

use common::*;
use lockdep::{LockMap, Report};

static LATE: LockMap = LockMap::new("late");
static HELD: LockMap = LockMap::new("held");

/// Takes and releases `LATE`, then takes it again and keeps it, when destroyed.
struct LocksOnDrop;

impl Drop for LocksOnDrop {
    fn drop(&mut self) {
        lock(&LATE);
        unlock(&LATE);
        lock(&LATE);
    }
}

thread_local! {
    static LOCKS_ON_DROP: LocksOnDrop = const { LocksOnDrop };
}

#[test]
fn a_destructor_after_the_exit_check_reports_nothing_more_about_held_locks() {
    let _h = start();
    std::thread::spawn(|| {
        // Registered before lockdep's exit check, so destroyed after it.
        LOCKS_ON_DROP.with(|_| {});
        lock(&HELD);
    })
    .join()
    .unwrap();
    // `HELD` is reported by the exit check; `LATE`, taken after it (under `HELD`, still on
    // the stack), is neither reported as held at exit nor as a bad unlock.
    assert_reports!(
        Report::LockHeldAtExit { held, .. } if held.len() == 1 && held[0].name == Some("held")
    );
}

#[test]
fn a_destructor_before_the_exit_check_is_tracked() {
    let _h = start();
    std::thread::spawn(|| {
        lock(&HELD);
        unlock(&HELD);
        // Registered after lockdep's exit check, so destroyed before it: its last `LATE` is
        // still held when the check runs.
        LOCKS_ON_DROP.with(|_| {});
    })
    .join()
    .unwrap();
    assert_reports!(
        Report::LockHeldAtExit { held, .. } if held.len() == 1 && held[0].name == Some("late")
    );
}

static LATE_A: LockMap = LockMap::new("late A");
static LATE_B: LockMap = LockMap::new("late B");
static STASHED: LockMap = LockMap::new("stashed");

/// Takes `LATE_A` then `LATE_B`, then `LATE_B` then `LATE_A`, and releases `STASHED` (which
/// the thread took and left held, as a guard stashed in a thread-local would), when
/// destroyed.
struct InvertsOnDrop;

impl Drop for InvertsOnDrop {
    fn drop(&mut self) {
        lock(&LATE_A);
        lock(&LATE_B);
        unlock(&LATE_B);
        unlock(&LATE_A);
        lock(&LATE_B);
        lock(&LATE_A);
        unlock(&LATE_A);
        unlock(&LATE_B);
        unlock(&STASHED);
    }
}

thread_local! {
    static INVERTS_ON_DROP: InvertsOnDrop = const { InvertsOnDrop };
}

/// A lock-order inversion seen only in a thread-local destructor that runs after the exit
/// check is reported (it used to go unvalidated), and releasing a lock the check already
/// reported as held is not a bad unlock.
#[test]
fn an_inversion_after_the_exit_check_is_reported() {
    let _h = start();
    std::thread::spawn(|| {
        // Registered before lockdep's exit check, so destroyed after it.
        INVERTS_ON_DROP.with(|_| {});
        lock(&STASHED);
    })
    .join()
    .unwrap();
    let r = take();
    assert_eq!(r.len(), 2, "{r:#?}");
    assert!(
        matches!(&r[0], Report::LockHeldAtExit { held, .. } if held.len() == 1 && held[0].name == Some("stashed")),
        "{r:#?}"
    );
    assert!(
        matches!(&r[1], Report::CircularDependency(c) if c.cycle.len() == 2),
        "{r:#?}"
    );
}
