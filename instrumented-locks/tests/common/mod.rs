//! The shared test harness: serializes tests on the process-wide validator, resets it,
//! collects reports through a callback policy, and checks them with [`assert_reports!`];
//! [`raw`] observes the parking lot for the raw-lock tests.

#![allow(dead_code, unused_macros, unused_imports)]

pub mod raw;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lockdep::{Policy, Report};

static SERIAL: Mutex<()> = Mutex::new(());
static REPORTS: Mutex<Vec<Report>> = Mutex::new(Vec::new());
static PANIC: AtomicBool = AtomicBool::new(false);

/// A hang guard for waits that must finish: far longer than any correct run.
pub const HANG: Duration = Duration::from_secs(20);

/// Holds the test serialization lock; the validator was reset when it was created.
pub struct Harness {
    _serial: MutexGuard<'static, ()>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        set_panicking(false);
        instrumented_locks::set_enabled(true);
    }
}

/// Starts a test: serialize, reset the validator, collect reports (no panic).
pub fn start() -> Harness {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockdep::reset();
    instrumented_locks::set_enabled(true);
    set_panicking(false);
    lockdep::set_policy(Policy::Callback(Arc::new(|r: &Report| {
        REPORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
        // Relaxed: read and written by the test thread and threads it joins.
        if PANIC.load(Ordering::Relaxed) {
            panic!("lockdep report");
        }
    })));
    take();
    Harness { _serial: serial }
}

/// Makes every report also panic (after being collected): for acquisitions that would
/// really block, so the test gets the report instead of a hang.
pub fn set_panicking(on: bool) {
    // Relaxed: see `start`.
    PANIC.store(on, Ordering::Relaxed);
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
/// let r = assert_reports!(Report::HeldLockFreed { .. }, Report::LockHeldAtExit { .. });
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

/// Runs `f` on a fresh thread and waits for it (the case conventions' "T2: ...").
pub fn on_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(f).join().expect("test thread panicked")
}

/// Runs `f`, expecting it to panic (a report under `set_panicking(true)`); quiet.
pub fn expect_panic(f: impl FnOnce()) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    assert!(
        r.is_err(),
        "expected a report (panic) but the code ran through"
    );
}

pub fn cycles(r: &[Report]) -> usize {
    r.iter()
        .filter(|r| matches!(r, Report::CircularDependency(_)))
        .count()
}

pub fn recursive(r: &[Report]) -> usize {
    r.iter()
        .filter(|r| matches!(r, Report::RecursiveLocking(_)))
        .count()
}

pub fn same_class(r: &[Report]) -> usize {
    r.iter()
        .filter(|r| matches!(r, Report::MissingNestingAnnotation(_)))
        .count()
}

/// The one report in `r`, which must be a circular dependency; returns its class names
/// around the cycle.
#[track_caller]
pub fn one_cycle(r: &[Report]) -> Vec<String> {
    assert_eq!(r.len(), 1, "expected exactly one report, got {r:#?}");
    assert_eq!(cycles(r), 1, "expected a cycle, got {r:#?}");
    r[0].cycle_classes()
}

/// The next watchdog report that concerns a thread whose name starts with `prefix`, within
/// [`HANG`] (a hang guard: panics if none comes).
pub fn next_about(
    rx: &std::sync::mpsc::Receiver<lockdep::WatchdogReport>,
    prefix: &str,
) -> lockdep::WatchdogReport {
    use lockdep::WatchdogReport;
    let deadline = std::time::Instant::now() + HANG;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let r = rx
            .recv_timeout(left)
            .expect("hang guard: no watchdog report");
        let threads: Vec<&str> = match &r {
            WatchdogReport::Deadlock(d) => {
                d.threads.iter().map(|t| t.thread.name.as_str()).collect()
            }
            WatchdogReport::Hung(h) => h.chain.iter().map(|t| t.thread.name.as_str()).collect(),
            _ => Vec::new(),
        };
        if threads.iter().any(|n| n.starts_with(prefix)) {
            return r;
        }
    }
}

/// Polls the all-threads dump until `ready` holds for it (a thread blocked or asleep where
/// the test wants it), within [`HANG`] (a hang guard: panics with the last dump).
pub fn dump_when(ready: impl Fn(&lockdep::AllLocks) -> bool) -> lockdep::AllLocks {
    let start = std::time::Instant::now();
    loop {
        let d = lockdep::all_held_locks();
        if ready(&d) {
            return d;
        }
        assert!(
            start.elapsed() < HANG,
            "hang guard: never saw the state; last dump:{d}"
        );
        std::thread::yield_now();
    }
}

/// A small deterministic generator (xorshift64) for random test programs: the same seed gives
/// the same program on every run and machine.
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

/// This thread's held entries as (name, mode, acquiring line), bottom first.
pub fn held_entries() -> Vec<(Option<&'static str>, lockdep::Mode, u32)> {
    lockdep::held_locks()
        .iter()
        .map(|l| (l.name, l.mode, l.site.line()))
        .collect()
}
