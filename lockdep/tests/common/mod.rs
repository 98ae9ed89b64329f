//! Shared test harness: serializes tests on the process-wide validator, resets it, and
//! collects reports through a callback policy.

#![allow(dead_code)]

use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard};

use lockdep::{LockMap, Mode, Policy, Report};

static SERIAL: Mutex<()> = Mutex::new(());
static REPORTS: Mutex<Vec<Report>> = Mutex::new(Vec::new());

/// Holds the test serialization lock; the validator was reset when it was created.
pub struct Harness {
    _serial: MutexGuard<'static, ()>,
}

/// Starts a test: serialize, reset the validator, collect reports.
pub fn start() -> Harness {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockdep::reset();
    lockdep::set_report_each_cycle_once(true);
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
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
    lockdep::acquire(m, 0, Mode::Read, false, None, Location::caller());
}

#[track_caller]
pub fn read_rec(m: &LockMap) {
    lockdep::acquire(m, 0, Mode::RecursiveRead, false, None, Location::caller());
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

/// Runs `f` on a fresh thread and waits for it (the case conventions' "T2: ...").
pub fn on_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(f).join().expect("test thread panicked")
}

pub fn count_cycles(r: &[Report]) -> usize {
    r.iter()
        .filter(|r| matches!(r, Report::CircularDependency(_)))
        .count()
}
