//! The held-at-exit check and lock operations in other thread-local destructors, on either
//! side of it: before it they are tracked as usual; after it nothing is tracked and nothing
//! is reported (the thread's validator state is gone), and nothing crashes or hangs.
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
fn a_destructor_after_the_exit_check_is_not_tracked() {
    let _h = start();
    std::thread::spawn(|| {
        // Registered before lockdep's exit check, so destroyed after it.
        LOCKS_ON_DROP.with(|_| {});
        lock(&HELD);
    })
    .join()
    .unwrap();
    // `HELD` is reported by the exit check; `LATE`, taken after it, is neither reported as
    // held at exit nor as a bad unlock.
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
