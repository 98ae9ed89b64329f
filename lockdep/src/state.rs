//! The process-wide validator state behind the graph lock, plus the run-time settings.
//!
//! The graph lock is a `std::sync::Mutex` that the validator takes only on slow paths
//! (a new chain, class creation, key register/unregister, reports' name lookups). It never
//! calls out (no handler, no user code) while holding it, so it cannot deadlock with the
//! application's locks. A poisoned lock is used as is: a panic under it can only be a
//! validator bug, and the validator must never turn itself off.

use hashbrown::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::graph::Graph;
use crate::report::KeyMisuse;

/// Everything guarded by the graph lock.
#[derive(Default)]
pub(crate) struct Global {
    pub graph: Graph,
    /// Signatures of cycles already reported (each distinct cycle is reported once).
    pub reported_cycles: HashSet<u64>,
    /// (key serial, misuse) pairs already reported.
    pub reported_misuse: HashSet<(u64, KeyMisuse)>,
    /// Whether running out of classes was already reported.
    pub classes_exhausted_reported: bool,
    /// Number of registered dynamic keys.
    pub keys: usize,
}

static GLOBAL: LazyLock<Mutex<Global>> = LazyLock::new(Default::default);

/// Takes the graph lock. Poisoning is ignored (see the module docs).
pub(crate) fn graph_lock() -> MutexGuard<'static, Global> {
    GLOBAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The default held-lock depth limit (the kernel's `MAX_LOCK_DEPTH`).
pub const DEFAULT_MAX_DEPTH: usize = 48;

static MAX_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_DEPTH);
static REPORT_CYCLES_ONCE: AtomicBool = AtomicBool::new(true);
static CYCLES_FOUND: AtomicU64 = AtomicU64::new(0);

/// Sets the per-thread held-lock depth above which a
/// [`Report::CapacityExhausted`](crate::Report::CapacityExhausted) is delivered (once per
/// thread). Locks above the limit are still tracked and validated. Default
/// [`DEFAULT_MAX_DEPTH`] (48, as the kernel). Thread-safe; takes effect on the next acquire.
pub fn set_max_depth(depth: usize) {
    // Relaxed: an independent setting.
    MAX_DEPTH.store(depth, Ordering::Relaxed);
}

#[inline]
pub(crate) fn max_depth() -> usize {
    // Relaxed: an independent setting.
    MAX_DEPTH.load(Ordering::Relaxed)
}

/// Whether each distinct cycle (by its set of classes) is reported only once (default
/// `true`). With `false`, every attempt to close a cycle is reported. Either way the
/// offending dependency is never recorded and [`Stats::cycles_found`](crate::Stats) counts
/// every attempt.
pub fn set_report_each_cycle_once(once: bool) {
    // Relaxed: an independent setting.
    REPORT_CYCLES_ONCE.store(once, Ordering::Relaxed);
}

pub(crate) fn report_cycles_once() -> bool {
    // Relaxed: an independent setting.
    REPORT_CYCLES_ONCE.load(Ordering::Relaxed)
}

static CAPTURE_BACKTRACES: AtomicBool = AtomicBool::new(false);

/// Whether a full stack trace (`std::backtrace::Backtrace::force_capture`) is captured when
/// an acquisition records a *new* dependency, stored with it, and shown in cycle reports
/// (default `false`: only the two `Location`s of each dependency are kept, which costs
/// nothing). Capturing costs tens of microseconds, paid only when a dependency is new (once
/// per acquisition), never on a chain-cache hit. Thread-safe.
pub fn set_capture_backtraces(on: bool) {
    // Relaxed: an independent setting.
    CAPTURE_BACKTRACES.store(on, Ordering::Relaxed);
}

pub(crate) fn capture_backtraces() -> bool {
    // Relaxed: an independent setting.
    CAPTURE_BACKTRACES.load(Ordering::Relaxed)
}

pub(crate) fn count_cycle() {
    // Relaxed: a statistic.
    CYCLES_FOUND.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn cycles_found() -> u64 {
    // Relaxed: a statistic.
    CYCLES_FOUND.load(Ordering::Relaxed)
}
