//! Reports reach the terminal under plain `cargo test`: the test binary runs one of its own
//! tests as a child process, without `--nocapture`, and the child's standard error must hold
//! each report, whole, while the child's test passed; the summary of suppressed repeats is
//! printed when the child exits.

use std::panic::Location;
use std::process::Command;

use lockdep::{LockMap, Mode};

/// Set in the child's environment: the child test runs only there.
const CHILD: &str = "LOCKDEP_STDERR_TEST_CHILD";
const THREADS: usize = 8;

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// In the child: eight threads at once each take their own lock twice (a recursive-locking
/// report, the default policy prints it) and then repeat it 100 times (repeats, suppressed).
#[test]
fn child_reports_to_stderr() {
    if !is_child() {
        return;
    }
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            std::thread::spawn(move || {
                let name: &'static str = Box::leak(format!("lock-{i}").into_boxed_str());
                let map: &'static LockMap = Box::leak(Box::new(LockMap::per_instance(name)));
                for _ in 0..101 {
                    lockdep::acquire(map, 0, Mode::Exclusive, false, None, Location::caller());
                    lockdep::acquire(map, 0, Mode::Exclusive, false, None, Location::caller());
                    lockdep::release(map, Location::caller());
                    lockdep::release(map, Location::caller());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn reports_reach_stderr_under_plain_cargo_test() {
    if is_child() {
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_reports_to_stderr", "--exact", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("RUST_TEST_NOCAPTURE")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("test child_reports_to_stderr ... ok"),
        "the child's test passed: {stdout}"
    );
    // One report per thread, each whole: the text between two banners names one lock.
    let title = "WARNING: possible recursive locking detected";
    let chunks: Vec<&str> = stderr.split(title).skip(1).collect();
    assert_eq!(chunks.len(), THREADS, "one report per thread:\n{stderr}");
    let mut names: Vec<usize> = chunks
        .iter()
        .map(|c| {
            let named: Vec<usize> = (0..THREADS)
                .filter(|i| c.contains(&format!("(lock-{i})")))
                .collect();
            assert_eq!(named.len(), 1, "a report interleaved with another:\n{c}");
            assert!(c.contains("*** DEADLOCK ***"), "a report cut short:\n{c}");
            named[0]
        })
        .collect();
    names.sort_unstable();
    assert_eq!(names, (0..THREADS).collect::<Vec<_>>());
    // At exit: the summary of the 800 suppressed repeats.
    assert!(
        stderr.contains(
            "lockdep: 8 distinct reports, 800 repeats suppressed (800 possible recursive locking)"
        ),
        "{stderr}"
    );
}
