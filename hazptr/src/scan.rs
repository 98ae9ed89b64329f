//! The synchronizer's side: heavy barriers, the generation flip, the scan order over the
//! slots, and waiting for one address's blockers.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

use crate::fence::{self, FenceMode};
use crate::primitive::{fence as atomic_fence, yield_now};
use crate::registry::{BackupSlot, Record, Registry, PRIMARY_SLOTS};
use crate::slot::{Observation, Slot};
use crate::wait::Backoff;
use crate::Domain;

/// Whether a wildcard slot value blocks a scan of `generation`: one of an older generation
/// does (its reader may not see the caller's unpublish); `None` (a self-scan that did not
/// flip) is blocked by every wildcard.
#[inline]
pub(crate) fn wildcard_blocks(value: usize, generation: Option<usize>) -> bool {
    // A wildcard of generation g blocks unless g >= ours: such a reader loaded the
    // generation after our flip and so sees our caller's unpublish.
    generation.is_none_or(|mine| (value >> 1) < mine)
}

/// Which slot values block one waiter: its address, and wildcards older than its scan's
/// generation (see [`wildcard_blocks`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocker {
    pub(crate) addr: usize,
    pub(crate) generation: Option<usize>,
}

impl Blocker {
    #[inline]
    pub(crate) fn blocks(&self, value: usize) -> bool {
        if value == 0 {
            false
        } else if value & 1 == 1 {
            wildcard_blocks(value, self.generation)
        } else {
            value == self.addr
        }
    }
}

/// A position in the scan order: every primary slot, record by record, then every backup
/// slot. The overflow list's head is loaded only when the cursor leaves the last primary
/// slot, so a scan that saw a primary slot released also sees the backup slot its guard
/// was promoted to (point 4 of the crate docs). A cursor can be handed to another thread
/// and resumed there: the shared scan's combiner sweeps for a whole batch and hands each
/// blocked waiter the position it stopped at.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    registry: &'a Registry,
    at: At<'a>,
    /// The `overflow_first` fault: backup slots before primary slots.
    overflow_first: bool,
}

#[derive(Clone, Copy)]
enum At<'a> {
    Primary(&'a Record, usize),
    Backup(&'a BackupSlot),
    End,
}

impl<'a> Cursor<'a> {
    /// The first slot of `domain`'s scan order.
    pub(crate) fn start(domain: &'a Domain) -> Self {
        let registry = domain.registry();
        let overflow_first = domain.faults().overflow_first;
        let at = if overflow_first {
            Self::backups(registry, true)
        } else {
            Self::primaries(registry, false)
        };
        Cursor {
            registry,
            at,
            overflow_first,
        }
    }

    fn primaries(registry: &'a Registry, overflow_first: bool) -> At<'a> {
        match registry.first_record() {
            Some(record) => At::Primary(record, 0),
            None if overflow_first => At::End,
            None => Self::backups(registry, false),
        }
    }

    fn backups(registry: &'a Registry, overflow_first: bool) -> At<'a> {
        match registry.first_backup() {
            Some(backup) => At::Backup(backup),
            None if overflow_first => Self::primaries(registry, true),
            None => At::End,
        }
    }

    /// The slot at this position; `None` past the end.
    #[inline]
    pub(crate) fn slot(&self) -> Option<&'a Slot> {
        match self.at {
            At::Primary(record, i) => Some(&record.slots[i]),
            At::Backup(backup) => Some(&backup.slot),
            At::End => None,
        }
    }

    /// Move to the next slot in scan order.
    #[inline]
    pub(crate) fn advance(&mut self) {
        let of = self.overflow_first;
        self.at = match self.at {
            At::Primary(record, i) if i + 1 < PRIMARY_SLOTS => At::Primary(record, i + 1),
            At::Primary(record, _) => match record.next() {
                Some(next) => At::Primary(next, 0),
                None if of => At::End,
                // Loaded only now, after every primary slot (promotion order).
                None => Self::backups(self.registry, false),
            },
            At::Backup(backup) => match backup.next() {
                Some(next) => At::Backup(next),
                None if of => Self::primaries(self.registry, true),
                None => At::End,
            },
            At::End => At::End,
        };
    }
}

impl Domain {
    /// The synchronizer's half of the store-buffering pair: a full fence in
    /// `Symmetric` mode; in `Asymmetric` mode a `membarrier` that started after this call
    /// began, shared with concurrent callers (see `shared_membarrier`).
    pub(crate) fn heavy_barrier(&self) {
        if self.faults().no_scan_fence {
            return;
        }
        match self.mode {
            // SeqCst fence: pairs with the readers' SeqCst fence (store buffering).
            FenceMode::Symmetric => atomic_fence(SeqCst),
            FenceMode::Asymmetric => self.shared_membarrier(),
        }
    }

    /// The combiner's barrier before it sweeps for a closed batch.
    ///
    /// Symmetric mode: every waiter self-scanned after a SeqCst fence that followed its
    /// unpublish, and the batch lock orders that fence before this point, so the combiner
    /// needs only its own SeqCst fence (the Rust model wants the loading thread's fence
    /// for the store-buffering rule). `unbarriered` (Asymmetric mode, where waiters join
    /// without a barrier of their own): this issues the batch's one heavy barrier,
    /// started after the close and so after every waiter's unpublish.
    pub(crate) fn batch_barrier(&self, unbarriered: bool) {
        if self.faults().no_scan_fence {
            return;
        }
        if unbarriered {
            self.heavy_barrier();
        } else {
            // SeqCst fence: orders our slot loads after the waiters' barriers (through
            // the batch lock) and pairs with the readers' fences.
            atomic_fence(SeqCst);
        }
    }

    /// Whether a `membarrier` seems to be in flight (a hint: a stale answer only picks
    /// the slower of two correct paths).
    fn barrier_in_flight(&self) -> bool {
        // Relaxed: a hint, see above.
        self.barrier_seq.load(Relaxed) & 1 == 1
    }

    /// Yield the CPU (`sched_yield`) while a `membarrier` is in flight: a combiner about
    /// to close a batch cannot use it (it started before the batch's waiters joined), and
    /// callers that run meanwhile can still join the batch.
    pub(crate) fn let_barrier_in_flight_end(&self) {
        while self.barrier_in_flight() {
            yield_now();
        }
    }

    /// One `membarrier` serves every caller that arrives before it starts (the sequence
    /// protocol of the kernel's `rcu_seq`/liburcu's batching): `barrier_seq` is odd while a
    /// barrier is in flight. A caller that read `s` needs a barrier that *started* after
    /// its read: the one ending at `s + 2` if `s` is even, else at `s + 3`. A running
    /// caller is itself interrupted by that barrier after its read (the leader's increment
    /// precedes its IPIs), so the barrier orders the caller's unpublish before the slot
    /// loads that follow.
    fn shared_membarrier(&self) {
        // Acquire: pairs with the leader's Release below (the barrier completed before).
        let seen = self.barrier_seq.load(Acquire);
        let need = (seen + 3) & !1;
        let mut backoff = Backoff::new();
        loop {
            // Acquire: as above.
            let cur = self.barrier_seq.load(Acquire);
            if cur >= need {
                self.counters.shared_barriers.fetch_add(1, Relaxed);
                break;
            }
            // Acquire on success: this thread's barrier is ordered after the claim.
            if cur & 1 == 0
                && self
                    .barrier_seq
                    .compare_exchange(cur, cur + 1, Acquire, Relaxed)
                    .is_ok()
            {
                fence::membarrier_expedited();
                self.counters.heavy_barriers.fetch_add(1, Relaxed);
                // Release: callers that read cur + 2 see the barrier as complete.
                self.barrier_seq.store(cur + 2, Release);
                break;
            }
            backoff.wait();
        }
        // Keeps the compiler (and the Rust model) from hoisting our slot loads.
        atomic_fence(SeqCst);
    }

    /// Flip the wildcard generation; returns the new one.
    pub(crate) fn flip(&self) -> usize {
        // AcqRel: Release so that a reader whose Acquire load of the generation returns
        // the new value (or a later one: later flips continue the RMW release sequence)
        // also sees the caller's unpublish, which precedes this flip; such a reader's
        // wildcard is exempt from this scan (message passing). Acquire orders the scan
        // after the flip.
        let generation = self.generation.fetch_add(1, AcqRel) + 1;
        generation - usize::from(self.faults().exempt_previous_generation)
    }

    /// One pass over every slot without waiting: does any slot block?
    pub(crate) fn any_blocks(&self, blocker: Blocker) -> bool {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let mut cursor = Cursor::start(self);
        while let Some(slot) = cursor.slot() {
            if blocker.blocks(slot.load_value()) {
                return true;
            }
            cursor.advance();
        }
        false
    }

    /// Scan from `cursor` to the end of the scan order, waiting on each slot that blocks
    /// until it is seen released (its value stops blocking or its release sequence
    /// moves). `first`: an observation of the cursor's slot already made after the flip
    /// (by the combiner's sweep). Returns whether any slot blocked.
    pub(crate) fn drain_from(
        &self,
        blocker: Blocker,
        mut cursor: Cursor<'_>,
        mut first: Option<Observation>,
    ) -> bool {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let mut waited = false;
        while let Some(slot) = cursor.slot() {
            let seen = first.take().unwrap_or_else(|| slot.observe());
            if blocker.blocks(seen.value) {
                waited = true;
                self.wait_released(slot, seen, blocker);
            }
            cursor.advance();
        }
        waited
    }

    /// Poll `slot`, first seen as `first` and blocking, until it is seen released.
    fn wait_released(&self, slot: &Slot, first: Observation, blocker: Blocker) {
        let ignore_seq = self.faults().ignore_release_seq;
        let mut backoff = Backoff::new();
        loop {
            backoff.wait();
            self.counters.slot_polls.fetch_add(1, Relaxed);
            let now = slot.observe();
            if (now.seq != first.seq && !ignore_seq) || !blocker.blocks(now.value) {
                return;
            }
        }
    }

    /// Every non-zero value in any slot, in scan order; a wildcard older than
    /// `generation` is waited for until it narrows to an address (recorded) or its
    /// protection ends.
    pub(crate) fn protected_values(&self, generation: usize) -> Vec<usize> {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let mut values = Vec::new();
        let mut cursor = Cursor::start(self);
        while let Some(slot) = cursor.slot() {
            let first = slot.observe();
            let mut now = first;
            let mut backoff = Backoff::new();
            while now.value & 1 == 1
                && wildcard_blocks(now.value, Some(generation))
                && now.seq == first.seq
            {
                backoff.wait();
                self.counters.slot_polls.fetch_add(1, Relaxed);
                now = slot.observe();
            }
            if now.value != 0 && now.value & 1 == 0 {
                values.push(now.value);
            }
            cursor.advance();
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::{wildcard_blocks, Blocker};
    use crate::slot::wildcard;

    #[test]
    fn a_blocker_is_blocked_by_its_address_and_older_wildcards_only() {
        let b = Blocker {
            addr: 0x1000,
            generation: Some(5),
        };
        assert!(b.blocks(0x1000));
        assert!(!b.blocks(0x2000));
        assert!(!b.blocks(0), "a free slot blocks nothing");
        assert!(b.blocks(wildcard(4)), "an older wildcard blocks");
        assert!(
            !b.blocks(wildcard(5)),
            "a wildcard of the scan's generation is exempt"
        );
        assert!(!b.blocks(wildcard(6)));
    }

    #[test]
    fn a_scan_that_did_not_flip_is_blocked_by_every_wildcard() {
        assert!(wildcard_blocks(wildcard(1), None));
        assert!(wildcard_blocks(wildcard(usize::MAX >> 1), None));
        let b = Blocker {
            addr: 0x1000,
            generation: None,
        };
        assert!(b.blocks(wildcard(1_000_000)));
    }
}
