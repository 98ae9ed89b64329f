//! `LOCKDEP_REPORT_FILE` appends what lockdep writes to standard error to a file as well: the
//! test binary runs one of its own tests as a child process with the variable set (twice, for
//! two processes sharing one file), and the parent reads the file and the child's standard
//! error. A path that cannot be opened gets one line on standard error, and the report is
//! still printed there. A process that validated anything appends one exit line to the file
//! (not to standard error); one that validated nothing, none.

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

/// In the child: two locks in one order, no report.
#[test]
fn child_takes_two_locks_in_one_order() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let (a, b) = (new_lock("clean.a"), new_lock("clean.b"));
    pair(a, b);
    pair(a, b);
    assert_eq!(lockdep::stats().reports, 0);
}

/// In the child: no lock at all.
#[test]
fn child_validates_nothing() {}

/// Runs the child test `test` with `LOCKDEP_REPORT_FILE=path`; its standard error.
fn run_child_test(test: &str, path: &str) -> String {
    let out = run_test_in_child(test, &[(CHILD, "1"), (REPORT_FILE_ENV, path)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stderr
}

/// The lines of `text` that are exit lines.
fn exit_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("lockdep: exit of pid "))
        .collect()
}

#[test]
fn each_process_that_validated_appends_one_exit_line_to_the_file_alone() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let path = temp_path("lockdep-exit-line");
    let p = path.to_str().expect("a UTF-8 temporary path");
    // Nothing validated: no line, and so no file either.
    let quiet = run_child_test("child_validates_nothing", p);
    assert!(exit_lines(&quiet).is_empty(), "{quiet}");
    assert!(
        !path.exists(),
        "a process that validated nothing made the file"
    );
    // A clean process and one with a report: a line each, in the file and not on stderr.
    let clean = run_child_test("child_takes_two_locks_in_one_order", p);
    let inverted = run_child("child_inverts_two_locks", p);
    assert!(exit_lines(&clean).is_empty(), "{clean}");
    assert!(exit_lines(&inverted).is_empty(), "{inverted}");
    let text = std::fs::read_to_string(&path).expect("the report file was made");
    let lines = exit_lines(&text);
    assert_eq!(lines.len(), 2, "{text}");
    // `lockdep: exit of pid N (report_file-...): 2 lock classes, 1 dependency, 0 reports`.
    let program = std::env::current_exe().expect("the test binary");
    let program = program.file_name().expect("a file name").to_string_lossy();
    for line in &lines {
        assert!(line.contains(&format!(" ({program}): ")), "{line}");
    }
    assert!(
        lines[0].ends_with(": 2 lock classes, 1 dependency, 0 reports"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with(": 2 lock classes, 1 dependency, 1 report"),
        "{}",
        lines[1]
    );
    // The inverted order is reported, not recorded: one dependency each.
    let _ = std::fs::remove_file(&path);
}

/// Runs the child with `LOCKDEP_REPORT_FILE=path`; its standard error.
fn run_child(test: &str, path: &str) -> String {
    let stderr = run_child_test(test, path);
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
    let first = run_child("child_inverts_two_locks", p);
    let second = run_child("child_inverts_two_locks", p);
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
    let stderr = run_child(
        "child_inverts_two_locks",
        missing.to_str().expect("a UTF-8 temporary path"),
    );
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
