//! Counters a domain keeps, and their snapshot.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use crate::registry::Registry;

/// Live counters. Updated with Relaxed `fetch_add` off the reader fast path only; they
/// order nothing.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) slow_path_acquires: AtomicU64,
    pub(crate) synchronize_calls: AtomicU64,
    pub(crate) synchronize_waits: AtomicU64,
    pub(crate) scan_passes: AtomicU64,
    pub(crate) slot_polls: AtomicU64,
    pub(crate) heavy_barriers: AtomicU64,
    pub(crate) shared_barriers: AtomicU64,
    pub(crate) self_scan_returns: AtomicU64,
    pub(crate) shared_batches: AtomicU64,
    pub(crate) combiner_handoffs: AtomicU64,
    pub(crate) retired: AtomicU64,
    pub(crate) reclaimed: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self, registry: &Registry) -> Stats {
        Stats {
            slow_path_acquires: self.slow_path_acquires.load(Relaxed),
            synchronize_calls: self.synchronize_calls.load(Relaxed),
            synchronize_waits: self.synchronize_waits.load(Relaxed),
            scan_passes: self.scan_passes.load(Relaxed),
            slot_polls: self.slot_polls.load(Relaxed),
            heavy_barriers: self.heavy_barriers.load(Relaxed),
            shared_barriers: self.shared_barriers.load(Relaxed),
            self_scan_returns: self.self_scan_returns.load(Relaxed),
            shared_batches: self.shared_batches.load(Relaxed),
            combiner_handoffs: self.combiner_handoffs.load(Relaxed),
            retired: self.retired.load(Relaxed),
            reclaimed: self.reclaimed.load(Relaxed),
            records: registry.record_count.load(Relaxed) as u64,
            backup_slots: registry.backup_count.load(Relaxed) as u64,
        }
    }
}

/// A snapshot of a domain's counters (see [`crate::Domain::stats`]). All counts are since
/// the domain was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Acquires that took a backup slot (all four primary slots busy, forced slow path,
    /// or thread-local storage already torn down).
    pub slow_path_acquires: u64,
    /// Calls to `synchronize`, including ones that returned at once.
    pub synchronize_calls: u64,
    /// `synchronize` calls that joined a shared-scan batch (because their self-scan found
    /// a blocking slot or, in Asymmetric mode, a combiner was at work), plus
    /// `synchronize_direct` calls that waited.
    pub synchronize_waits: u64,
    /// Scan passes over all slots (self-scans, direct drains, combiner drains).
    pub scan_passes: u64,
    /// Re-reads of blocking slots while waiting.
    pub slot_polls: u64,
    /// `membarrier` calls issued (Asymmetric mode only).
    pub heavy_barriers: u64,
    /// Barriers a caller did not issue because a concurrent caller's `membarrier`, started
    /// after it arrived, served it too (Asymmetric mode only).
    pub shared_barriers: u64,
    /// `synchronize` calls whose self-scan found nothing blocking and returned at once.
    pub self_scan_returns: u64,
    /// Shared-scan batches a combiner completed.
    pub shared_batches: u64,
    /// Times a combiner handed an unfinished batch to the next combiner (see
    /// [`crate::Domain::synchronize`]).
    pub combiner_handoffs: u64,
    /// Objects retired (see [`crate::Domain::retire`]).
    pub retired: u64,
    /// Retired objects freed. `retired - reclaimed` are still waiting (unreclaimed).
    pub reclaimed: u64,
    /// Thread records ever allocated (peak concurrent threads).
    pub records: u64,
    /// Backup slots ever allocated (peak concurrent overflowing guards).
    pub backup_slots: u64,
}
