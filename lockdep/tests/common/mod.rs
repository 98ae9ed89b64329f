//! The shared harness of lockdep's integration tests: serializes tests on the process-wide
//! validator, resets it, collects reports through a callback policy, and gives the lock
//! operations a lock wrapper makes (`acquire` before blocking, `release` on unlock) short
//! names. [`assert_reports!`] checks the collected reports against patterns.

#![allow(dead_code, unused_macros, unused_imports)]

use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard};

use lockdep::{LockMap, Mode, Policy, Report};

static SERIAL: Mutex<()> = Mutex::new(());
static REPORTS: Mutex<Vec<Report>> = Mutex::new(Vec::new());

/// Holds the test serialization lock; the validator was reset when it was created.
pub struct Harness {
    _serial: MutexGuard<'static, ()>,
}

/// Starts a test: serialize, reset the validator and its settings, collect reports.
pub fn start() -> Harness {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockdep::reset();
    lockdep::set_report_each_cycle_once(true);
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
    lockdep::set_nesting(lockdep::Nesting::InstanceOrder);
    lockdep::set_policy(Policy::Callback(Arc::new(|r: &Report| {
        REPORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
    })));
    take();
    Harness { _serial: serial }
}

/// Takes the reports collected so far.
pub fn take() -> Vec<Report> {
    std::mem::take(&mut *REPORTS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Takes the reports collected so far and asserts that they match the patterns, one report
/// per pattern, in order (an optional `if` guard may follow); returns them. With no pattern
/// it asserts that nothing was reported.
///
/// ```ignore
/// assert_reports!();
/// assert_reports!(Report::RecursiveLocking(_));
/// let r = assert_reports!(Report::LockHeldAtExit { held, .. } if held.len() == 1);
/// ```
macro_rules! assert_reports {
    ($($pat:pat),* $(,)? $(if $guard:expr)?) => {{
        let reports = $crate::common::take();
        assert!(
            matches!(reports.as_slice(), [$($pat),*] $(if $guard)?),
            "expected reports [{}], got {:#?}",
            stringify!($($pat),*),
            reports
        );
        reports
    }};
}
pub(crate) use assert_reports;

/// Takes the reports collected so far and asserts that they are one circular dependency
/// around exactly the classes `classes` (in any order); returns it.
#[track_caller]
pub fn assert_one_cycle(classes: &[&str]) -> Report {
    let mut r = assert_reports!(Report::CircularDependency(_));
    let mut got = r[0].cycle_classes();
    got.pop(); // the cycle closes on its first class
    got.sort();
    let mut want: Vec<String> = classes.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want, "the classes of the cycle");
    r.remove(0)
}

/// The number of circular-dependency reports in `r`.
pub fn count_cycles(r: &[Report]) -> usize {
    r.iter()
        .filter(|r| matches!(r, Report::CircularDependency(_)))
        .count()
}

/// A leaked lock map whose class is the caller's site (so every call site is its own class).
#[track_caller]
pub fn new_lock(name: &'static str) -> &'static LockMap {
    Box::leak(Box::new(LockMap::new(name)))
}

#[track_caller]
pub fn lock(m: &LockMap) {
    lockdep::acquire(m, 0, Mode::Exclusive, false, None, Location::caller());
}

#[track_caller]
pub fn lock_mode(m: &LockMap, mode: Mode) {
    lockdep::acquire(m, 0, mode, false, None, Location::caller());
}

#[track_caller]
pub fn read(m: &LockMap) {
    lock_mode(m, Mode::Read);
}

#[track_caller]
pub fn read_rec(m: &LockMap) {
    lock_mode(m, Mode::RecursiveRead);
}

#[track_caller]
pub fn try_lock(m: &LockMap) {
    lockdep::acquire(m, 0, Mode::Exclusive, true, None, Location::caller());
}

#[track_caller]
pub fn lock_nested(m: &LockMap, subclass: u8) {
    lockdep::acquire(
        m,
        subclass,
        Mode::Exclusive,
        false,
        None,
        Location::caller(),
    );
}

#[track_caller]
pub fn lock_nest(m: &LockMap, nest: &LockMap) {
    lockdep::acquire(m, 0, Mode::Exclusive, false, Some(nest), Location::caller());
}

#[track_caller]
pub fn unlock(m: &LockMap) {
    lockdep::release(m, Location::caller());
}

/// `{p -> q}` exclusively: take p, take q while holding p, release q, release p.
#[track_caller]
pub fn pair(p: &LockMap, q: &LockMap) {
    pair_modes(p, Mode::Exclusive, q, Mode::Exclusive);
}

/// `{p -> q}` in the given modes.
#[track_caller]
pub fn pair_modes(p: &LockMap, pm: Mode, q: &LockMap, qm: Mode) {
    lock_mode(p, pm);
    lock_mode(q, qm);
    unlock(q);
    unlock(p);
}

/// An RAII guard, like a lock wrapper's, so unwinding releases the lock.
pub struct Guard(pub &'static LockMap);

impl Drop for Guard {
    fn drop(&mut self) {
        lockdep::release(self.0, Location::caller());
    }
}

/// Takes `m` exclusively and returns the guard that releases it.
#[track_caller]
pub fn guard(m: &'static LockMap) -> Guard {
    lock(m);
    Guard(m)
}

/// Runs `f` on a fresh thread and waits for it ("T2: ..." in a scenario: T2 runs after T1
/// has finished).
pub fn on_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(f).join().expect("test thread panicked")
}

/// A small deterministic generator (xorshift64), so that a failing sequence reproduces.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Runs this test binary's own test `test` alone in a child process, with `env` set (a
/// marker that makes the child test run, and what it is about); its whole output. The
/// parent's `RUST_TEST_NOCAPTURE` is not passed on, so the child's standard error holds only
/// what lockdep writes to it directly.
pub fn run_test_in_child(test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--test-threads=1"])
        .env_remove("RUST_TEST_NOCAPTURE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the test binary")
}

/// Every lock mode, for random programs.
pub const MODES: [Mode; 4] = [
    Mode::Exclusive,
    Mode::Read,
    Mode::RecursiveRead,
    Mode::Upgradable,
];
