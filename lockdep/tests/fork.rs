//! `fork()` from a multi-threaded program: while other threads register and unregister
//! dynamic keys, look keys up (hazard pointers on key buckets), take locks and make reports,
//! the main thread forks 50 times. Each child must find its own held stack (the forking
//! thread's), create classes, take new locks, register and unregister keys (a grace period
//! that must not wait for the parent's readers, which the child does not have: one of the keys
//! is the one a parent thread keeps looking up), make a report, and exit 0. A child that hangs fails the test: the parent waits with a deadline, then kills
//! it.

#![cfg(unix)]

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use lockdep::{DynamicKey, LockMap, Policy};

const CHILDREN: usize = 50;
/// Far longer than a child needs; only a hung child reaches it.
const DEADLINE: Duration = Duration::from_secs(60);

static CALLBACKS: AtomicU64 = AtomicU64::new(0);

/// What each child does; exits the child with 0 if every step worked, 1 otherwise.
fn child(held: &'static LockMap, looked_up: &DynamicKey) -> ! {
    let ok = catch_unwind(AssertUnwindSafe(|| {
        // The child's held stack is the forking thread's.
        assert_eq!(lockdep::held_count(), 1);
        assert!(lockdep::is_held(held));
        // New classes and a new dependency: the graph lock.
        let (a, b) = (new_lock("child A"), new_lock("child B"));
        lock(a);
        lock(b);
        unlock(b);
        unlock(a);
        // A key registered and unregistered: the key table and a grace period of its bucket.
        let key = DynamicKey::new("child key");
        let m = LockMap::with_dynamic_key("child lock", &key);
        lock(&m);
        unlock(&m);
        drop(m);
        drop(key);
        // The key a parent thread was looking up when the child was made: the grace period
        // of its bucket must not wait for that thread's hazard pointer.
        looked_up.unregister();
        assert!(!looked_up.is_registered());
        // A report printed by the default policy (policy, deduplication, output), to
        // /dev/null.
        // SAFETY: a valid NUL-terminated path; the descriptor is only duplicated onto 2.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            assert!(null >= 0);
            assert_eq!(libc::dup2(null, 2), 2);
        }
        lockdep::set_policy(Policy::Stderr);
        unlock(a); // not held: a bad unlock, a new report
        lockdep::print_summary();
        unlock(held);
        assert_eq!(lockdep::held_count(), 0);
    }))
    .is_ok();
    // SAFETY: `_exit` ends the child at once, without running the parent's atexit handlers
    // or the test harness.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

/// Waits for child `i` (`pid`) to exit 0, at most [`DEADLINE`]; a hung child is killed and
/// fails the test.
fn wait_for(pid: libc::pid_t, i: usize) {
    let start = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0, "waitpid failed");
        if start.elapsed() > DEADLINE {
            // SAFETY: as above; the child is killed and reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("child {i} of {CHILDREN} hung (killed after {DEADLINE:?})");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child {i} failed: wait status {status:#x}"
    );
}

#[test]
fn fork_children_never_hang_in_validator_state() {
    let _h = start();
    // A callback that takes no lock of the test's own (a child must not hang in it either).
    lockdep::set_policy(Policy::Callback(Arc::new(|_| {
        CALLBACKS.fetch_add(1, Ordering::Relaxed);
    })));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    // Key churn: register, lock under another lock (a new dependency each time), unregister.
    let s = stop.clone();
    threads.push(std::thread::spawn(move || {
        let outer = new_lock("churn outer");
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            let key = DynamicKey::new("churn key");
            let m = LockMap::with_dynamic_key("churn lock", &key);
            lock(outer);
            lock(&m);
            unlock(&m);
            unlock(outer);
            drop(m);
            drop(key);
            n += 1;
        }
        n
    }));
    // Lookups: a hazard pointer on one key's bucket most of the time.
    let s = stop.clone();
    let looked_up = Arc::new(DynamicKey::new("looked up"));
    let key = looked_up.clone();
    threads.push(std::thread::spawn(move || {
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            assert!(key.is_registered());
            n += 1;
        }
        n
    }));
    // Reports (repeats: the deduplication table) and statistics (the graph lock).
    let s = stop.clone();
    threads.push(std::thread::spawn(move || {
        let x = new_lock("reported");
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            unlock(x);
            let _ = lockdep::stats();
            n += 1;
        }
        n
    }));
    let held = new_lock("held across the fork");
    lock(held);
    for i in 0..CHILDREN {
        // SAFETY: the child only runs `child`, which ends with `_exit`.
        match unsafe { libc::fork() } {
            -1 => panic!("fork failed: {}", std::io::Error::last_os_error()),
            0 => child(held, &looked_up),
            pid => wait_for(pid, i),
        }
    }
    unlock(held);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        assert!(t.join().expect("a churn thread failed") > 0);
    }
    assert_eq!(CALLBACKS.load(Ordering::Relaxed), 1, "the first bad unlock");
}
