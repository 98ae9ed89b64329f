//! The synchronizer's side: heavy barriers, the generation flip, and scans of the slots.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

use crate::bloom::Bloom;
use crate::fence::{self, FenceMode};
use crate::primitive::fence as atomic_fence;
use crate::slot::Slot;
use crate::wait::Backoff;
use crate::Domain;

/// What a scan waits for.
#[derive(Clone, Copy)]
pub(crate) enum Target<'a> {
    /// One address (a direct scan, or a combiner's own request).
    Addr(usize),
    /// Every address of a shared-scan batch.
    Filter(&'a Bloom),
}

/// Which slot values block a scan: addresses of the target, and wildcards older than the
/// scan's generation. With `generation: None` (a self-scan that did not flip) every
/// wildcard blocks.
#[derive(Clone, Copy)]
pub(crate) struct Blocker<'a> {
    pub(crate) target: Target<'a>,
    pub(crate) generation: Option<usize>,
}

impl Blocker<'_> {
    #[inline]
    pub(crate) fn blocks(&self, value: usize) -> bool {
        if value == 0 {
            return false;
        }
        if value & 1 == 1 {
            // A wildcard of generation g blocks unless g >= ours: such a reader loaded the
            // generation after our flip and so sees our caller's unpublish.
            return self.generation.is_none_or(|mine| (value >> 1) < mine);
        }
        match self.target {
            Target::Addr(addr) => value == addr,
            Target::Filter(filter) => filter.may_contain(value),
        }
    }
}

/// Result of draining every slot.
pub(crate) struct Drained {
    /// Every slot that blocked `blocker` was seen released (false: the combiner handed
    /// off, and only its own request is known to be complete).
    pub(crate) complete: bool,
    /// Some slot blocked.
    pub(crate) waited: bool,
}

struct DrainState<'a> {
    blocker: Blocker<'a>,
    own: Option<Blocker<'a>>,
    drained: Drained,
}

impl Domain {
    /// The synchronizer's half of the store-buffering pair: a full fence in
    /// `Symmetric` mode; in `Asymmetric` mode a `membarrier` that started after this call
    /// began, shared with concurrent callers (see `shared_membarrier`).
    pub(crate) fn heavy_barrier(&self) {
        #[cfg(loom)]
        if self.faults.no_scan_fence {
            return;
        }
        match self.mode {
            // SeqCst fence: pairs with the readers' SeqCst fence (store buffering).
            FenceMode::Symmetric => atomic_fence(SeqCst),
            FenceMode::Asymmetric => self.shared_membarrier(),
        }
    }

    /// The combiner's barrier before scanning for a closed batch.
    ///
    /// Waiters that self-scanned issued a heavy barrier after their unpublish, and the
    /// batch lock orders it before this point; for them the combiner needs only its own
    /// SeqCst fence (the Rust model wants the loading thread's fence for the
    /// store-buffering rule; in Asymmetric mode their `membarrier` already made every
    /// reader's earlier slot store visible). `unbarriered`: some waiter joined without a
    /// barrier (Asymmetric mode, a combiner was at work), so this issues the batch's one
    /// heavy barrier, started after the close and so after every waiter's unpublish.
    pub(crate) fn batch_barrier(&self, unbarriered: bool) {
        #[cfg(loom)]
        if self.faults.no_scan_fence {
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
                fence::membarrier();
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
        #[cfg(loom)]
        let generation = generation - usize::from(self.faults.exempt_previous_generation);
        generation
    }

    /// One pass over every slot without waiting: does any slot block?
    pub(crate) fn any_blocks(&self, blocker: Blocker<'_>) -> bool {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        self.registry
            .records()
            .flat_map(|r| r.slots.iter())
            .any(|s| blocker.blocks(s.load_value()))
            // The overflow list is loaded only after every primary slot (promotion order).
            || self.registry.backups().any(|b| blocker.blocks(b.slot.load_value()))
    }

    /// Scan every primary slot, then the overflow list, waiting on each slot that blocks
    /// until it is seen released (its value stops blocking or its release sequence moves).
    ///
    /// `own`: for a combiner, its own request. If a slot keeps blocking others for
    /// about 1 ms without blocking `own`, the drain stops serving the batch
    /// and finishes for `own` only (`complete == false`).
    pub(crate) fn drain(&self, blocker: Blocker<'_>, own: Option<Blocker<'_>>) -> Drained {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let mut state = DrainState {
            blocker,
            own,
            drained: Drained {
                complete: true,
                waited: false,
            },
        };
        if self.scan_overflow_first() {
            self.drain_backups(&mut state);
            self.drain_primaries(&mut state);
        } else {
            self.drain_primaries(&mut state);
            // Loaded only now: a guard promoted to a backup slot while we waited on its
            // primary slot is linked and published before that slot's release.
            self.drain_backups(&mut state);
        }
        state.drained
    }

    fn drain_primaries(&self, state: &mut DrainState<'_>) {
        for record in self.registry.records() {
            record.slots.iter().for_each(|s| self.drain_slot(s, state));
        }
    }

    fn drain_backups(&self, state: &mut DrainState<'_>) {
        for backup in self.registry.backups() {
            self.drain_slot(&backup.slot, state);
        }
    }

    fn drain_slot(&self, slot: &Slot, state: &mut DrainState<'_>) {
        let first = slot.observe();
        if !state.blocker.blocks(first.value) {
            return;
        }
        state.drained.waited = true;
        let mut backoff = Backoff::new();
        loop {
            backoff.wait();
            self.counters.slot_polls.fetch_add(1, Relaxed);
            let now = slot.observe();
            if (now.seq != first.seq && !self.ignore_release_seq())
                || !state.blocker.blocks(now.value)
            {
                return;
            }
            if let Some(own) = state.own {
                // A slot that keeps blocking others but not us may be a guard this very
                // thread holds (a detached guard it received): hand the batch on.
                if backoff.waited_long() && !own.blocks(now.value) {
                    state.blocker = own;
                    state.own = None;
                    state.drained.complete = false;
                    return;
                }
            }
        }
    }

    /// Every non-zero value in any slot, reading primary slots and then the overflow
    /// list; a wildcard older than `generation` is waited for until it narrows to an
    /// address (recorded) or its protection ends.
    pub(crate) fn protected_values(&self, generation: usize) -> Vec<usize> {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let mut values = Vec::new();
        let mut read = |slot: &Slot| {
            let first = slot.observe();
            let mut now = first;
            let mut backoff = Backoff::new();
            while now.value & 1 == 1 && (now.value >> 1) < generation && now.seq == first.seq {
                backoff.wait();
                self.counters.slot_polls.fetch_add(1, Relaxed);
                now = slot.observe();
            }
            if now.value != 0 && now.value & 1 == 0 {
                values.push(now.value);
            }
        };
        for record in self.registry.records() {
            record.slots.iter().for_each(&mut read);
        }
        for backup in self.registry.backups() {
            read(&backup.slot);
        }
        values
    }

    fn scan_overflow_first(&self) -> bool {
        #[cfg(loom)]
        return self.faults.overflow_first;
        #[cfg(not(loom))]
        false
    }

    fn ignore_release_seq(&self) -> bool {
        #[cfg(loom)]
        return self.faults.ignore_release_seq;
        #[cfg(not(loom))]
        false
    }
}
