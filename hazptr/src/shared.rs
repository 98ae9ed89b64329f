//! The shared scan: concurrent `synchronize` callers that found a blocking slot wait in
//! one batch, and one scan serves the whole batch.
//!
//! After its self-scan found a blocker, a caller adds its address to the *open* batch's
//! Bloom filter (no allocation) and sleeps until its batch completes. The first waiter that
//! finds no combiner at work becomes the **combiner** (no dedicated scan thread, so the
//! common blocked case pays one wake-up, not two): it closes the open batch *before* it
//! flips the wildcard generation (a waiter that joins later belongs to the next batch and
//! its next flip), orders its scan after the batch's barriers (see `Domain::batch_barrier`), flips, then drains every slot
//! whose address hits the filter or whose wildcard is older than the flip, primary slots
//! first. Then it marks the batch complete and wakes every waiter.
//!
//! A combiner never waits on behalf of others for long: a slot that has blocked others,
//! but not the combiner's own address, for about 1 ms may be a guard its own thread holds
//! (a detached guard it received), so it puts the batch's filter back into the open batch,
//! finishes its own request alone, and lets the next waiter combine.

use std::mem;
use std::sync::atomic::Ordering::Relaxed;

use crate::bloom::Bloom;
use crate::primitive::{Condvar, Mutex, MutexGuard};
use crate::scan::{Blocker, Target};
use crate::Domain;

#[derive(Default)]
struct Batches {
    /// Addresses of the waiters of the open batch.
    open: Bloom,
    /// Number of the open batch.
    open_cycle: u64,
    /// Highest batch number whose waiters are all released.
    completed: u64,
    /// A combiner is scanning (it has closed batch `open_cycle - 1`).
    combining: bool,
    /// Some waiter of the open batch joined without a heavy barrier of its own after its
    /// unpublish (Asymmetric mode, see `Domain::synchronize`).
    open_unbarriered: bool,
}

/// The batch state of one domain.
pub(crate) struct SharedScan {
    batches: Mutex<Batches>,
    done: Condvar,
    /// Mirrors `Batches::combining` for a lock-free peek (a hint with no ordering role:
    /// a stale value only picks the slower of two correct paths).
    combining: std::sync::atomic::AtomicBool,
}

impl SharedScan {
    pub(crate) fn new() -> Self {
        SharedScan {
            batches: Mutex::new(Batches {
                open_cycle: 1,
                ..Batches::default()
            }),
            done: Condvar::new(),
            combining: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether a combiner seems to be at work (see `combining`).
    pub(crate) fn combining_hint(&self) -> bool {
        // Relaxed: a hint; both answers lead to a correct path.
        self.combining.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Batches> {
        // A panic while holding this lock can only come from our own code between lock and
        // unlock, none of which panics; recover the state rather than propagate poison.
        self.batches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait, in a batch, until no slot that protected `addr` when the caller unpublished it
    /// still does. `barriered`: the caller issued a heavy barrier after its unpublish.
    pub(crate) fn wait(&self, domain: &Domain, addr: usize, barriered: bool) {
        let mut batches = self.lock();
        batches.open.insert(addr);
        batches.open_unbarriered |= !barriered;
        let my_cycle = batches.open_cycle;
        loop {
            if batches.completed >= my_cycle {
                return;
            }
            if !batches.combining {
                batches.combining = true;
                // Relaxed: a hint, see `combining_hint`.
                self.combining.store(true, Relaxed);
                self.combine(domain, batches, addr);
                return;
            }
            batches = self.done.wait(batches).unwrap_or_else(|e| e.into_inner());
            #[cfg(loom)]
            if domain.faults.wake_without_recheck {
                return;
            }
        }
    }

    /// Serve the open batch (which contains `own_addr`); returns once `own_addr` is clear.
    fn combine<'s>(
        &'s self,
        domain: &Domain,
        mut batches: MutexGuard<'s, Batches>,
        own_addr: usize,
    ) {
        #[cfg(loom)]
        let early_gen = if domain.faults.flip_before_close {
            // Fault: flip before closing, so a waiter that joins in between is served by a
            // flip that does not follow its unpublish.
            drop(batches);
            domain.batch_barrier(true);
            let generation = domain.flip();
            batches = self.lock();
            Some(generation)
        } else {
            None
        };
        // Close the batch before the flip: every waiter in it unpublished (and issued its
        // own barrier) before joining, which the lock orders before our barrier and flip.
        #[allow(unused_mut)] // mutated under loom only
        let mut filter = mem::take(&mut batches.open);
        #[cfg(loom)]
        if domain.faults.saturated_filter {
            filter.saturate();
        }
        let unbarriered = mem::take(&mut batches.open_unbarriered);
        let cycle = batches.open_cycle;
        batches.open_cycle += 1;
        drop(batches);

        #[cfg(loom)]
        let generation = match early_gen {
            Some(generation) => generation,
            None => {
                domain.batch_barrier(unbarriered);
                domain.flip()
            }
        };
        #[cfg(not(loom))]
        let generation = {
            domain.batch_barrier(unbarriered);
            domain.flip()
        };
        let target = if domain.combiner_checks_own_only() {
            Target::Addr(own_addr)
        } else {
            Target::Filter(&filter)
        };
        let batch = Blocker {
            target,
            generation: Some(generation),
        };
        let own = Blocker {
            target: Target::Addr(own_addr),
            generation: Some(generation),
        };
        let drained = domain.drain(batch, Some(own));

        let mut batches = self.lock();
        if drained.complete {
            batches.completed = batches.completed.max(cycle);
            domain.counters.shared_batches.fetch_add(1, Relaxed);
        } else {
            // Hand off: the batch's waiters join the open batch and wait for its scan.
            batches.open.merge(&filter);
            batches.open_unbarriered |= unbarriered;
            domain.counters.combiner_handoffs.fetch_add(1, Relaxed);
        }
        batches.combining = false;
        // Relaxed: a hint, see `combining_hint`.
        self.combining.store(false, Relaxed);
        drop(batches);
        // Every sleeping waiter wakes: those of this batch return (each exactly once, on
        // seeing `completed` cover its cycle); those of the next batch elect its combiner.
        self.done.notify_all();
    }
}
