//! The held-at-exit check and lock operations in other thread-local destructors, on either
//! side of it: before it they are tracked as usual; after it they are still validated (a
//! lock order seen only there is reported, locks held at the check can still be released
//! without a bad-unlock report). What is reported is what the thread holds when it is gone,
//! after every thread-local destructor: a lock released by a later destructor is not, one
//! taken there and kept is. A thread that ends the process with `exit()` while holding locks
//! gets no report (see `process_exit_while_holding_is_not_a_thread_exit` below). Nothing
//! crashes or hangs.
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
fn a_lock_kept_by_a_destructor_after_the_exit_check_is_reported_with_the_others() {
    let _h = start();
    std::thread::spawn(|| {
        // Registered before lockdep's exit check, so destroyed after it.
        LOCKS_ON_DROP.with(|_| {});
        lock(&HELD);
    })
    .join()
    .unwrap();
    // `HELD`, and `LATE`, taken after the check (under `HELD`, still on the stack) and kept:
    // both are held when the thread is gone. Releasing and re-taking `LATE` there is no bad
    // unlock.
    assert_reports!(
        Report::LockHeldAtExit { held, .. }
            if held.iter().map(|l| l.name).collect::<Vec<_>>() == [Some("held"), Some("late")]
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
/// check is reported (it used to go unvalidated), and a lock that such a destructor releases
/// (a guard stashed in a thread-local) is neither held at the thread's end nor a bad unlock.
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
    assert_reports!(Report::CircularDependency(c) if c.cycle.len() == 2);
}
