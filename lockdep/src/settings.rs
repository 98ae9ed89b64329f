//! The validator's run-time settings. Each is an independent atomic, read where it applies.
//! (The reporting policy is [`report::policy`](crate::report)'s.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::limits::DEFAULT_MAX_DEPTH;

static MAX_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_DEPTH);
static REPORT_REPEATS: AtomicBool = AtomicBool::new(false);
static CHAIN_CACHE: AtomicBool = AtomicBool::new(true);

/// Stores the depth limit (see the crate's `set_max_depth`, which also tells every thread).
pub(crate) fn store_max_depth(depth: usize) {
    // Relaxed: an independent setting; `set_max_depth` then makes every thread's next
    // operation read it on its slow path (under each record's mailbox mutex).
    MAX_DEPTH.store(depth, Ordering::Relaxed);
}

#[inline]
pub(crate) fn max_depth() -> usize {
    // Relaxed: an independent setting.
    MAX_DEPTH.load(Ordering::Relaxed)
}

/// Whether every occurrence of a report is printed or handed to the callback (`true`), or
/// only the first of each distinct report (`false`, the default).
///
/// Two reports are the same report when they are about the same thing: their kind and the
/// classes (or, for a lock without a class, the lock's name) and sites they name; for a
/// circular dependency, its set of classes. A repeat is counted
/// ([`Stats::repeats_suppressed`](crate::Stats), [`summary`](crate::summary)), not printed.
/// Deduplication is about output only: with [`Policy::Panic`](crate::Policy::Panic), or in
/// a [`test_scope`](crate::test_scope), every occurrence still panics the thread that made
/// it. [`reset`](crate::reset) forgets which reports were seen. Thread-safe.
pub fn set_report_repeats(every: bool) {
    // Relaxed: an independent setting.
    REPORT_REPEATS.store(every, Ordering::Relaxed);
}

pub(crate) fn report_repeats() -> bool {
    // Relaxed: an independent setting.
    REPORT_REPEATS.load(Ordering::Relaxed)
}

/// The older name of [`set_report_repeats`]`(!once)`: `true` (the default) delivers each
/// distinct report once, `false` every occurrence. It now applies to every kind of report, not
/// only to cycles. Either way the offending dependency of a cycle is never recorded and
/// [`Stats::cycles_found`](crate::Stats) counts every attempt. Thread-safe.
pub fn set_report_each_cycle_once(once: bool) {
    set_report_repeats(!once);
}

/// Stores the chain cache's switch (see the crate's `set_chain_cache`, which also sends every
/// thread's fast paths to the slow ones while it is off).
pub(crate) fn store_chain_cache(enabled: bool) {
    // Relaxed: an independent setting, read on the slow paths only (the fast paths are kept
    // off them by each record's bit, set under the same mutex as this store).
    CHAIN_CACHE.store(enabled, Ordering::Relaxed);
}

/// Whether the chain cache (and the instance pair cache beside it) may answer for an
/// acquisition; `true` unless `set_chain_cache(false)`.
#[inline]
pub(crate) fn chain_cache() -> bool {
    // Relaxed: see `store_chain_cache`.
    CHAIN_CACHE.load(Ordering::Relaxed)
}
