//! Counters a domain keeps, and their snapshot.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use crate::registry::Registry;

/// Upper bounds (inclusive) of the batch-size histogram's buckets; the last bucket holds
/// every larger batch.
pub const BATCH_SIZE_BUCKETS: [u64; 6] = [1, 2, 4, 8, 16, u64::MAX];

/// The histogram bucket of a batch of `waiters` waiters.
pub(crate) fn size_bucket(waiters: u64) -> usize {
    BATCH_SIZE_BUCKETS
        .iter()
        .position(|&max| waiters <= max)
        .unwrap_or(BATCH_SIZE_BUCKETS.len() - 1)
}

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
    pub(crate) gather_waits: AtomicU64,
    pub(crate) batch_waiters: AtomicU64,
    pub(crate) batch_size_histogram: [AtomicU64; BATCH_SIZE_BUCKETS.len()],
    pub(crate) handoffs: AtomicU64,
    pub(crate) released_early: AtomicU64,
    pub(crate) bloom_false_positives: AtomicU64,
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
            gather_waits: self.gather_waits.load(Relaxed),
            batch_waiters: self.batch_waiters.load(Relaxed),
            batch_size_histogram: std::array::from_fn(|i| {
                self.batch_size_histogram[i].load(Relaxed)
            }),
            handoffs: self.handoffs.load(Relaxed),
            released_early: self.released_early.load(Relaxed),
            bloom_false_positives: self.bloom_false_positives.load(Relaxed),
            retired: self.retired.load(Relaxed),
            reclaimed: self.reclaimed.load(Relaxed),
            records: registry.record_count.load(Relaxed) as u64,
            backup_slots: registry.backup_count.load(Relaxed) as u64,
        }
    }
}

/// A snapshot of a domain's counters (see [`crate::Domain::stats`]). All counts are since
/// the domain was created. More counters may be added (hence `non_exhaustive`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Acquires that took a backup slot (all four primary slots busy, forced slow path,
    /// or thread-local storage already torn down).
    pub slow_path_acquires: u64,
    /// Calls to `synchronize`, including ones that returned at once.
    pub synchronize_calls: u64,
    /// `synchronize` calls that joined a shared-scan batch (in Symmetric mode those whose
    /// self-scan found a blocking slot; in Asymmetric mode every call), plus
    /// `synchronize_direct` calls that waited.
    pub synchronize_waits: u64,
    /// Scan passes over all slots (self-scans, the look an Asymmetric combiner takes to
    /// decide whether to gather, sweeps, direct and per-waiter drains).
    pub scan_passes: u64,
    /// Re-reads of blocking slots while waiting.
    pub slot_polls: u64,
    /// `membarrier` calls issued (Asymmetric mode only).
    pub heavy_barriers: u64,
    /// Barriers a caller did not issue because a concurrent caller's `membarrier`, started
    /// after it arrived, served it too (Asymmetric mode only).
    pub shared_barriers: u64,
    /// `synchronize` calls whose self-scan found nothing blocking and returned at once
    /// (Symmetric mode only).
    pub self_scan_returns: u64,
    /// Shared-scan batches a combiner served (one barrier, one flip and one sweep each).
    pub shared_batches: u64,
    /// Timed waits an Asymmetric combiner made for more callers to join its batch before
    /// its one `membarrier` (see [`crate::Domain::synchronize`]). A combiner waits only
    /// when other callers are inside `synchronize` and a scan without a barrier saw a slot
    /// that could block its batch; a caller alone, or a batch that nothing seems to
    /// protect, never waits.
    pub gather_waits: u64,
    /// Waiters in those batches, summed: `batch_waiters / shared_batches` is the mean
    /// batch size.
    pub batch_waiters: u64,
    /// Served batches by size: entry `i` counts batches of at most
    /// [`BATCH_SIZE_BUCKETS`]`[i]` waiters (and more than the previous bound).
    pub batch_size_histogram: [u64; BATCH_SIZE_BUCKETS.len()],
    /// Waiters a combiner's sweep found still blocked and handed back to finish their own
    /// wait, from the slot that blocked them, on their own thread.
    pub handoffs: u64,
    /// Waiters a sweep released while another waiter of the same batch was still blocked:
    /// each would have waited for that other waiter's readers under batch-level completion.
    pub released_early: u64,
    /// Slot values that hit a batch's Bloom filter without being any of its waiters'
    /// addresses (each cost one exact comparison with the batch, never a wait).
    pub bloom_false_positives: u64,
    /// Objects retired (see [`crate::Domain::retire`]).
    pub retired: u64,
    /// Retired objects freed. `retired - reclaimed` are still waiting (unreclaimed).
    pub reclaimed: u64,
    /// Thread records ever allocated (peak concurrent threads).
    pub records: u64,
    /// Backup slots ever allocated (peak concurrent overflowing guards).
    pub backup_slots: u64,
}

#[cfg(test)]
mod tests {
    use super::{size_bucket, BATCH_SIZE_BUCKETS};

    #[test]
    fn batch_sizes_land_in_the_bucket_of_their_upper_bound() {
        assert_eq!(size_bucket(1), 0);
        assert_eq!(size_bucket(2), 1);
        assert_eq!(size_bucket(3), 2);
        assert_eq!(size_bucket(4), 2);
        assert_eq!(size_bucket(5), 3);
        assert_eq!(size_bucket(16), 4);
        assert_eq!(size_bucket(17), BATCH_SIZE_BUCKETS.len() - 1);
        assert_eq!(size_bucket(u64::MAX), BATCH_SIZE_BUCKETS.len() - 1);
    }
}
