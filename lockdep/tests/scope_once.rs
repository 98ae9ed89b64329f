//! A report made in a test scope under the default policy (standard error) reaches the
//! terminal once: as the panic the scope makes, not printed beforehand as well. The test
//! binary runs one of its own tests as a child process and counts the report's banners in
//! the child's standard error.

use std::panic::Location;
use std::process::Command;

use lockdep::{LockMap, Mode, Policy};

/// Set in the child's environment: the child test runs only there.
const CHILD: &str = "LOCKDEP_SCOPE_ONCE_CHILD";
const TITLE: &str = "WARNING: possible recursive locking detected";

/// In the child: a recursive acquisition in a test scope panics; the panic is caught and the
/// report taken, so the test passes.
#[test]
fn child_reports_once_in_a_scope() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    lockdep::set_policy(Policy::Stderr);
    let scope = lockdep::test_scope();
    let map: &'static LockMap = Box::leak(Box::new(LockMap::per_instance("twice")));
    lockdep::acquire(map, 0, Mode::Exclusive, false, None, Location::caller());
    let r = std::panic::catch_unwind(|| {
        lockdep::acquire(map, 0, Mode::Exclusive, false, None, Location::caller());
    });
    assert!(r.is_err(), "the report panics in a scope");
    assert_eq!(scope.take_reports().len(), 1);
    lockdep::release(map, Location::caller());
}

#[test]
fn a_scoped_report_is_printed_once() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_reports_once_in_a_scope",
            "--exact",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("test child_reports_once_in_a_scope ... ok"),
        "{stdout}"
    );
    assert_eq!(stderr.matches(TITLE).count(), 1, "{stderr}");
}
