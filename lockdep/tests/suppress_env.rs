//! The suppression file named by `LOCKDEP_SUPPRESSIONS` is read once, before the first
//! report: the test binary runs one of its own tests as a child process with the variable
//! set. In the child, the first report of the process is already suppressed by the file; a
//! line added to the file afterwards is not read. The parent checks the child's standard
//! error: the bad line once, with its number; the report the file does not suppress; and, at
//! exit, the summary and the stale suppression.

use std::panic::Location;
use std::process::Command;

use lockdep::{LockMap, Mode, SuppressionOrigin, SUPPRESSIONS_ENV};

/// Set in the child's environment: the child test runs only there.
const CHILD: &str = "LOCKDEP_SUPPRESS_ENV_TEST_CHILD";

const FILE: &str = "\
# env.a and env.b: b -> a runs only before the workers start.
circular: env.a -> env.b
nesting env.a
circular: env.never -> env.seen   # stale: never matches in this run
";

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

fn leak(name: &'static str) -> &'static LockMap {
    Box::leak(Box::new(LockMap::per_instance(name)))
}

fn pair(a: &LockMap, b: &LockMap) {
    let site = Location::caller();
    lockdep::acquire(a, 0, Mode::Exclusive, false, None, site);
    lockdep::acquire(b, 0, Mode::Exclusive, false, None, site);
    lockdep::release(b, site);
    lockdep::release(a, site);
}

/// In the child: the default policy prints to standard error.
#[test]
fn child_with_a_suppression_file() {
    if !is_child() {
        return;
    }
    let path = std::env::var_os(SUPPRESSIONS_ENV).expect("the parent sets the variable");
    let (a, b) = (leak("env.a"), leak("env.b"));
    // The first report of the process, before any suppression function was called.
    pair(a, b);
    pair(b, a);
    assert_eq!(lockdep::stats().reports, 1);
    assert_eq!(
        lockdep::stats().suppression_hits,
        1,
        "the file was read first"
    );

    // Read once: a line added now is not seen.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("circular: env.c -> env.d\n");
    std::fs::write(&path, text).unwrap();
    let (c, d) = (leak("env.c"), leak("env.d"));
    pair(c, d);
    pair(d, c);
    let from_file: Vec<(usize, u64)> = lockdep::suppressions()
        .into_iter()
        .filter_map(|s| match s.origin {
            SuppressionOrigin::File { line, .. } => Some((line, s.hits)),
            _ => None,
        })
        .collect();
    assert_eq!(from_file, [(2, 1), (4, 0)]);
    assert_eq!(lockdep::stats().distinct_reports, 1, "the c/d cycle");
}

#[test]
fn the_file_is_read_once_before_the_first_report() {
    if is_child() {
        return;
    }
    let path =
        std::env::temp_dir().join(format!("lockdep-suppress-env-{}.supp", std::process::id()));
    std::fs::write(&path, FILE).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_with_a_suppression_file",
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env(SUPPRESSIONS_ENV, &path)
        .env_remove("RUST_TEST_NOCAPTURE")
        .output()
        .expect("run the test binary");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("test child_with_a_suppression_file ... ok"),
        "{stdout}"
    );
    let p = path.display();

    let bad: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("bad suppression"))
        .collect();
    assert_eq!(bad.len(), 1, "printed once: {stderr}");
    assert_eq!(
        bad[0],
        format!(
            "lockdep: bad suppression (line skipped): {p}:3: expected `<kind>: <class> -> \
             <class>`, e.g. `circular: accounts -> ledger`: `nesting env.a`"
        )
    );

    let cycles = stderr
        .matches("WARNING: possible circular locking dependency detected")
        .count();
    assert_eq!(cycles, 1, "only the c/d cycle is printed: {stderr}");
    assert!(stderr.contains("(env.c)"), "{stderr}");
    assert!(!stderr.contains("(env.a)"), "{stderr}");

    assert!(
        stderr.contains(
            "lockdep: 1 distinct report, 0 repeats suppressed, 1 report matched a suppression\n"
        ),
        "the summary at exit: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "lockdep: 1 suppression never matched: line 4 of {p}: circular: env.never -> \
             env.seen\n"
        )),
        "the stale suppression at exit: {stderr}"
    );
}
