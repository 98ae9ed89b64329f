//! `LOCKDEP_BACKTRACE` switches backtrace capture on without a code change: the test binary
//! runs one of its own tests as a child process with the variable set, and the parent reads
//! the child's standard error. With `1`, the cycle report shows each dependency's stack (the
//! child test's own frame among them); with a value that is not a switch, one line says so
//! and the report has no stack.

mod common;

use common::{new_lock, pair, run_test_in_child};
use lockdep::BACKTRACE_ENV;

/// Set in the child's environment: the child test runs only there.
const CHILD: &str = "LOCKDEP_BACKTRACE_ENV_TEST_CHILD";

/// In the child: one inversion, printed by the default policy to standard error.
#[test]
fn child_inverts_two_locks() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    invert_two_locks();
    assert_eq!(lockdep::stats().reports, 1);
}

/// The inversion, in a frame of its own in every build: a release build inlines the test
/// function into the harness's caller, whose frame then names no function of this file.
#[inline(never)]
fn invert_two_locks() {
    let (a, b) = (new_lock("bt.a"), new_lock("bt.b"));
    pair(a, b);
    pair(b, a);
}

/// Runs the child with `LOCKDEP_BACKTRACE=value`; its standard error.
fn run_child(value: &str) -> String {
    let out = run_test_in_child(
        "child_inverts_two_locks",
        &[(CHILD, "1"), (BACKTRACE_ENV, value)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("test child_inverts_two_locks ... ok"),
        "{stdout}"
    );
    assert_eq!(
        stderr
            .matches("WARNING: possible circular locking dependency detected")
            .count(),
        1,
        "{stderr}"
    );
    stderr
}

#[test]
fn one_turns_capture_on() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let stderr = run_child("1");
    // A frame of the child test (the thread's name is the test's, without the path): only a
    // captured stack names the function with its module.
    assert!(
        stderr.contains("backtrace_env::invert_two_locks"),
        "{stderr}"
    );
    assert!(!stderr.contains("is not 1 or 0"), "{stderr}");
    // The stack starts at the caller: the validator's own frames are counted, not shown.
    assert!(
        stderr.contains("of the validator and the lock left out)"),
        "{stderr}"
    );
    assert!(!stderr.contains("LazyTrace"), "{stderr}");
}

#[test]
fn a_value_that_is_not_a_switch_is_named_and_leaves_capture_off() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let stderr = run_child("maybe");
    assert!(
        stderr
            .contains("lockdep: LOCKDEP_BACKTRACE=\"maybe\" is not 1 or 0; backtraces stay off\n"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("backtrace_env::child_inverts_two_locks"),
        "{stderr}"
    );
}
