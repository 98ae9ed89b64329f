//! A minimal validated reader-writer lock with RAII guards, as a lock wrapper writes it
//! (`#[track_caller]` lock methods, lockdep told before the real lock may block, and on guard
//! drop), plus a policy that records a report and then panics, so that a re-lock that would
//! block is reported and unwound instead of hanging. Shared by the guard-lifetime tests of
//! the edition-2021 and edition-2024 test crates.

#![allow(dead_code)]

use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::{Arc, Mutex};

use lockdep::{LockMap, Mode, Policy, Report};

/// A validated `parking_lot::RwLock`.
pub struct Lock<T> {
    map: LockMap,
    data: parking_lot::RwLock<T>,
}

impl<T> Lock<T> {
    /// A new lock; its class is the caller's site and `T`.
    #[track_caller]
    pub fn new(value: T) -> Lock<T> {
        Lock {
            map: LockMap::of_type::<T>("RwLock"),
            data: parking_lot::RwLock::new(value),
        }
    }

    /// The write lock (also what a mutex's `lock` is).
    #[track_caller]
    pub fn write(&self) -> WriteGuard<'_, T> {
        lockdep::acquire(
            &self.map,
            0,
            Mode::Exclusive,
            false,
            None,
            Location::caller(),
        );
        WriteGuard {
            map: &self.map,
            guard: self.data.write(),
        }
    }

    /// A plain read lock.
    #[track_caller]
    pub fn read(&self) -> ReadGuard<'_, T> {
        lockdep::acquire(&self.map, 0, Mode::Read, false, None, Location::caller());
        ReadGuard {
            map: &self.map,
            guard: self.data.read(),
        }
    }
}

pub struct WriteGuard<'a, T> {
    map: &'a LockMap,
    guard: parking_lot::RwLockWriteGuard<'a, T>,
}

pub struct ReadGuard<'a, T> {
    map: &'a LockMap,
    guard: parking_lot::RwLockReadGuard<'a, T>,
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

// The validator is told first; the real guard (a field) unlocks right after.
impl<T> Drop for WriteGuard<'_, T> {
    fn drop(&mut self) {
        lockdep::release(self.map, Location::caller());
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    fn drop(&mut self) {
        lockdep::release(self.map, Location::caller());
    }
}

static REPORTS: Mutex<Vec<Report>> = Mutex::new(Vec::new());
static SERIAL: Mutex<()> = Mutex::new(());

/// Serializes a test, resets the validator, and makes every report be recorded and then
/// panic (before the real lock can block).
pub fn start() -> std::sync::MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockdep::reset();
    lockdep::set_policy(Policy::Callback(Arc::new(|r: &Report| {
        REPORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
        panic!("lockdep report");
    })));
    take();
    serial
}

/// The reports recorded so far.
pub fn take() -> Vec<Report> {
    std::mem::take(&mut *REPORTS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `f`, which must be stopped by a report; returns the reports.
pub fn reported(f: impl FnOnce()) -> Vec<Report> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    assert!(r.is_err(), "expected a report, the code ran through");
    take()
}

/// Runs `f`, which must report nothing.
pub fn silent(f: impl FnOnce()) {
    f();
    let r = take();
    assert!(r.is_empty(), "expected no report, got {r:#?}");
}

/// The (holding, acquiring) lines of a single recursive-locking report.
pub fn recursive_lines(r: &[Report]) -> (u32, u32) {
    match r {
        [Report::RecursiveLocking(s)] => (s.holding.site.line(), s.acquiring.site.line()),
        other => panic!("expected one recursive locking report, got {other:#?}"),
    }
}
