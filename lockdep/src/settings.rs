//! The validator's run-time settings. Each is an independent atomic, read where it applies.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::limits::DEFAULT_MAX_DEPTH;

static MAX_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_DEPTH);
static REPORT_CYCLES_ONCE: AtomicBool = AtomicBool::new(true);
static CAPTURE_BACKTRACES: AtomicBool = AtomicBool::new(false);

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
/// every attempt. Thread-safe.
pub fn set_report_each_cycle_once(once: bool) {
    // Relaxed: an independent setting.
    REPORT_CYCLES_ONCE.store(once, Ordering::Relaxed);
}

pub(crate) fn report_cycles_once() -> bool {
    // Relaxed: an independent setting.
    REPORT_CYCLES_ONCE.load(Ordering::Relaxed)
}

/// Whether a full stack trace (`std::backtrace::Backtrace::force_capture`) is captured when
/// an acquisition records a *new* dependency, stored with it, and shown in cycle reports
/// (default `false`: only the two `Location`s of each dependency are kept, which costs
/// nothing). A capture walks the whole stack, far more work than an acquisition (symbols are
/// resolved only when a report prints it), but it is paid only when a dependency is new (once
/// per acquisition), never on a chain-cache hit. Thread-safe.
pub fn set_capture_backtraces(on: bool) {
    // Relaxed: an independent setting.
    CAPTURE_BACKTRACES.store(on, Ordering::Relaxed);
}

pub(crate) fn capture_backtraces() -> bool {
    // Relaxed: an independent setting.
    CAPTURE_BACKTRACES.load(Ordering::Relaxed)
}
