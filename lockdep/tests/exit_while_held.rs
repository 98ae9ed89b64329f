//! A thread that ends the process with `std::process::exit` while it holds locks is not a
//! thread exiting with locks held: the program is over, and nothing can wait for them (sled's
//! crash tests do exactly this, from whatever thread, under their own locks). The test binary
//! runs one of its own tests as a child process: there, a thread ends normally holding one
//! lock (reported), then another thread calls `exit(3)` holding another (not reported). The
//! parent reads the child's exit status and standard error.

mod common;

use common::{lock, new_lock, run_test_in_child};

/// Set in the child's environment: the child test runs only there.
const CHILD: &str = "LOCKDEP_EXIT_WHILE_HELD_TEST_CHILD";

#[test]
fn child_exits_the_process_under_a_lock() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let (ended, exiting) = (new_lock("ended.with"), new_lock("exit.under"));
    std::thread::spawn(move || lock(ended)).join().unwrap();
    std::thread::spawn(move || {
        lock(exiting);
        std::process::exit(3);
    })
    .join()
    .unwrap();
    unreachable!("the process exited");
}

#[test]
fn process_exit_while_holding_is_not_a_thread_exit() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let out = run_test_in_child("child_exits_the_process_under_a_lock", &[(CHILD, "1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr
            .matches("WARNING: lock held when thread exits!")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("(ended.with)"), "{stderr}");
    assert!(!stderr.contains("exit.under"), "{stderr}");
}
