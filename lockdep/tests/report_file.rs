//! `LOCKDEP_REPORT_FILE` appends what lockdep writes to standard error to a file as well: the
//! test binary runs one of its own tests as a child process with the variable set (twice, for
//! two processes sharing one file), and the parent reads the file and the child's standard
//! error. A path that cannot be opened gets one line on standard error, and the report is
//! still printed there.

mod common;

use std::path::PathBuf;

use common::{new_lock, pair, run_test_in_child};
use lockdep::REPORT_FILE_ENV;

/// Set in the child's environment: the child test runs only there.
const CHILD: &str = "LOCKDEP_REPORT_FILE_TEST_CHILD";
const BANNER: &str = "WARNING: possible circular locking dependency detected";

/// In the child: one inversion, printed by the default policy.
#[test]
fn child_inverts_two_locks() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let (a, b) = (new_lock("file.a"), new_lock("file.b"));
    pair(a, b);
    pair(b, a);
    assert_eq!(lockdep::stats().reports, 1);
}

/// Runs the child with `LOCKDEP_REPORT_FILE=path`; its standard error.
fn run_child(path: &str) -> String {
    let out = run_test_in_child(
        "child_inverts_two_locks",
        &[(CHILD, "1"), (REPORT_FILE_ENV, path)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches(BANNER).count(), 1, "{stderr}");
    stderr
}

/// A fresh path in the target's temporary directory (removed first if a run left it).
fn temp_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("{name}-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

#[test]
fn two_processes_append_their_reports_to_one_file() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let path = temp_path("lockdep-report-file");
    let p = path.to_str().expect("a UTF-8 temporary path");
    let first = run_child(p);
    let second = run_child(p);
    let text = std::fs::read_to_string(&path).expect("the report file was made");
    assert_eq!(text.matches(BANNER).count(), 2, "{text}");
    // Each process's report is in the file whole, as it went to standard error.
    let report = |stderr: &str| {
        let start = stderr.find(BANNER).expect("a report");
        stderr[start..].to_owned()
    };
    assert!(text.contains(&report(&first)), "{text}");
    assert!(text.contains(&report(&second)), "{text}");
    assert!(text.contains("file.a") && text.contains("file.b"), "{text}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_path_that_cannot_be_opened_is_said_once_and_stderr_still_gets_the_report() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let missing = temp_path("no-such-dir").join("reports.txt");
    let stderr = run_child(missing.to_str().expect("a UTF-8 temporary path"));
    assert_eq!(
        stderr
            .matches(&format!("lockdep: {REPORT_FILE_ENV}="))
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("reports go to standard error only"),
        "{stderr}"
    );
    assert!(!missing.exists());
}
