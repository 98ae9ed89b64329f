//! The shared scan: concurrent `synchronize` callers that found a blocking slot share one
//! barrier, one generation flip and one sweep over the slots, and each is then released
//! as soon as *its own* address is clear.
//!
//! A caller joins the *open* batch with a [`Waiter`] record on its own stack (linked into
//! the batch, no allocation) and adds its address to the batch's Bloom filter. The first
//! waiter that finds no combiner at work becomes the **combiner** (no dedicated scan
//! thread, so the common blocked case pays no extra wake-up). It
//!
//! 1. closes the open batch *before* it flips the wildcard generation (a waiter that joins
//!    later belongs to the next batch and its next flip); in Asymmetric mode it first
//!    yields its CPU while a `membarrier` is in flight, and once more when the previous
//!    batch had company, so that callers arriving meanwhile still join this batch
//!    (`Domain::gather_callers`),
//! 2. issues the batch's barrier (see `Domain::batch_barrier`) and flips,
//! 3. **sweeps** every slot once, primary slots first: a slot value that misses the filter
//!    blocks nobody; a hit, or a wildcard older than the flip, is compared exactly with
//!    the batch's waiters, and each waiter it blocks (that nothing blocked earlier in the
//!    scan order) records the slot's position and the observation,
//! 4. hands every waiter its outcome under the batch lock, and wakes it: a waiter that
//!    nothing blocked returns at once; a blocked one continues the scan itself from the
//!    recorded position, waiting only for the slots that block its own address.
//!
//! So the combiner never waits on another caller's behalf, and no waiter ever waits for a
//! reader of another waiter's address (the ordering argument is point 6 of the crate
//! docs). Before this design a batch completed all at once, and every waiter waited for
//! the slowest reader of any address in it; the `batch_completion` fault of the loom
//! models brings that back, and the model of per-waiter release fails with it.

use std::ptr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::PoisonError;

use crossbeam_utils::CachePadded;

use crate::bloom::Bloom;
use crate::primitive::{spin_hint, Condvar, Mutex, MutexGuard, UnsafeCell};
use crate::scan::{wildcard_blocks, Blocker, Cursor};
use crate::slot::Observation;
use crate::Domain;

/// One `synchronize` caller in the shared scan, on the caller's stack for the whole wait.
///
/// Access protocol (what makes the cells below race-free):
/// * `next` is written once, under the batch lock, when the waiter joins; afterwards only
///   read, by whoever owns the batch (the open batch's lock holder, then the combiner
///   that closed it).
/// * `outcome` is written by the combiner that closed the batch, and read by the waiter
///   only after it saw `served` under the batch lock, which the combiner set, under that
///   lock, after writing `outcome`.
/// * `served` is accessed under the batch lock only. After the combiner sets it and
///   unlocks, it touches the record no more, so the waiter may return and its stack frame
///   may go.
struct Waiter<'d> {
    addr: usize,
    next: UnsafeCell<*const Waiter<'d>>,
    outcome: UnsafeCell<Outcome<'d>>,
    served: UnsafeCell<bool>,
    /// This waiter's own wake-up, used with the batch lock: it was served, or elected to
    /// combine the open batch.
    wake: Condvar,
}

/// What the combiner's sweep found for one waiter.
#[derive(Clone, Copy)]
enum Outcome<'d> {
    /// No slot blocked the waiter (also the state before the sweep).
    Clear,
    /// The first slot, in scan order, that blocked the waiter after its batch's flip.
    Blocked {
        generation: usize,
        at: Cursor<'d>,
        seen: Observation,
    },
}

impl<'d> Waiter<'d> {
    fn new(addr: usize) -> Self {
        Waiter {
            addr,
            next: UnsafeCell::new(ptr::null()),
            outcome: UnsafeCell::new(Outcome::Clear),
            served: UnsafeCell::new(false),
            wake: Condvar::new(),
        }
    }

    /// Protocol: see the type's docs (the batch's owner reads it).
    fn next(&self) -> *const Waiter<'d> {
        // SAFETY: `next` is written once before the waiter is reachable by anyone but the
        // batch's owner, which is the caller (type docs).
        self.next.with(|p| unsafe { *p })
    }

    /// Protocol: the combiner that closed this waiter's batch, before `served` is set.
    fn outcome(&self) -> Outcome<'d> {
        // SAFETY: either the combiner reads its own writes, or the waiter reads after it
        // saw `served` (type docs): never concurrent with `set_outcome`.
        self.outcome.with(|p| unsafe { *p })
    }

    /// Protocol: the combiner that closed this waiter's batch, before `served` is set.
    fn set_outcome(&self, outcome: Outcome<'d>) {
        // SAFETY: only the combiner that owns the closed batch writes, while the waiter
        // does not read (it has not seen `served` yet; type docs).
        self.outcome.with_mut(|p| unsafe { *p = outcome })
    }

    /// Protocol: under the batch lock.
    fn served(&self, _lock: &Batches) -> bool {
        // SAFETY: `served` is accessed under the batch lock only; `_lock` proves it is
        // held.
        self.served.with(|p| unsafe { *p })
    }

    /// Protocol: under the batch lock, by the combiner.
    fn set_served(&self, _lock: &mut Batches) {
        // SAFETY: as in `served`.
        self.served.with_mut(|p| unsafe { *p = true })
    }
}

/// The batch state of one domain, under its lock.
struct Batches {
    /// The newest waiter of the open batch (a stack through `Waiter::next`), or null.
    /// Lifetime-erased: every waiter borrows the same domain, whose registry every cursor
    /// points into.
    open: *const Waiter<'static>,
    /// Waiters in the open batch.
    open_len: usize,
    /// Addresses of the open batch's waiters.
    filter: Bloom,
    /// The open batch's waiters joined without a heavy barrier of their own after their
    /// unpublish (Asymmetric mode, see `Domain::synchronize`).
    unbarriered: bool,
    /// A combiner is between closing its batch and handing out the outcomes.
    combining: bool,
}

// SAFETY: the raw pointers name `Waiter` records of threads blocked in `SharedScan::wait`,
// each valid until that waiter has seen itself served, and accessed only under the
// protocol of `Waiter`; `Batches` itself is only reached through the batch lock.
unsafe impl Send for Batches {}

/// A closed batch, owned by its combiner.
struct Batch<'d> {
    newest: *const Waiter<'d>,
    len: usize,
    filter: Bloom,
    unbarriered: bool,
}

impl<'d> Batch<'d> {
    /// Every waiter of the batch, newest first.
    fn waiters(&self) -> impl Iterator<Item = &Waiter<'d>> + '_ {
        // SAFETY: every waiter of a closed batch stays on its thread's stack until the
        // combiner marks it served, which happens after the last use of this iterator
        // (type docs of `Waiter`).
        let newest = unsafe { self.newest.as_ref() };
        std::iter::successors(newest, |w| {
            let next = w.next();
            // SAFETY: as above, for every later waiter of the batch.
            unsafe { next.as_ref() }
        })
    }
}

/// What one sweep found.
#[derive(Default)]
struct Swept {
    /// Waiters the sweep found blocked (handed back to finish their own wait).
    blocked: u64,
    /// Slot values that hit the filter but matched no waiter.
    false_positives: u64,
}

/// Counts one caller in `SharedScan::callers` while it lives.
struct CallerCount<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> CallerCount<'a> {
    fn enter(count: &'a std::sync::atomic::AtomicUsize) -> Self {
        // Relaxed: a hint (see `SharedScan::callers`).
        count.fetch_add(1, Relaxed);
        CallerCount(count)
    }
}

impl Drop for CallerCount<'_> {
    fn drop(&mut self) {
        // Relaxed: as in `enter`.
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The batch state of one domain.
pub(crate) struct SharedScan {
    batches: Mutex<Batches>,
    /// Callers inside `wait` that joined without a barrier (Asymmetric mode): more of
    /// them than the open batch holds means others may be about to join, so a combiner
    /// lets them (`Domain::gather_callers`). A hint with no ordering role.
    callers: CachePadded<std::sync::atomic::AtomicUsize>,
}

impl SharedScan {
    pub(crate) fn new() -> Self {
        SharedScan {
            batches: Mutex::new(Batches {
                open: ptr::null(),
                open_len: 0,
                filter: Bloom::default(),
                unbarriered: false,
                combining: false,
            }),
            callers: CachePadded::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Batches> {
        // A panic while holding this lock can only come from our own code between lock and
        // unlock, none of which panics; recover the state rather than propagate poison.
        self.batches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait, in a batch, until no slot that protected `addr` when the caller unpublished it
    /// still does. `barriered`: the caller issued a heavy barrier after its unpublish.
    pub(crate) fn wait(&self, domain: &Domain, addr: usize, barriered: bool) {
        let _caller = (!barriered).then(|| CallerCount::enter(&self.callers));
        let me = Waiter::new(addr);
        let mut batches = self.lock();
        me.next.with_mut(|p| {
            // SAFETY: `me` is not linked yet; nobody else can see it.
            unsafe { *p = batches.open.cast() }
        });
        batches.open = ptr::from_ref(&me).cast();
        batches.open_len += 1;
        batches.filter.insert(addr);
        batches.unbarriered |= !barriered;
        while !me.served(&batches) {
            if !batches.combining {
                batches = self.combine(domain, batches, &me);
                continue;
            }
            batches = me
                .wake
                .wait(batches)
                .unwrap_or_else(PoisonError::into_inner);
            if domain.faults().wake_without_recheck && Self::unlink(&mut batches, &me) {
                // Fault: the wake-up that elected us combiner is taken as the end of the
                // wait (unlinked first, so that no combiner touches the record later; the
                // election passes on, so the fault shows as an early release, not a hang).
                // SAFETY: open waiters are alive until served, and we hold the batch lock.
                if let Some(next) = unsafe { batches.open.as_ref() } {
                    next.wake.notify_one();
                }
                return;
            }
        }
        drop(batches);
        if let Outcome::Blocked {
            generation,
            at,
            seen,
        } = me.outcome()
        {
            let blocker = Blocker {
                addr,
                generation: Some(generation),
            };
            domain.drain_from(blocker, at, Some(seen));
        }
    }

    /// Removes `me` from the open batch if it is there (the `wake_without_recheck` fault
    /// only). The filter keeps its bits: a stale bit is a false positive.
    fn unlink(batches: &mut Batches, me: &Waiter<'_>) -> bool {
        let me: *const Waiter<'static> = ptr::from_ref(me).cast();
        let mut link: *const Waiter<'static> = ptr::null();
        let mut cur = batches.open;
        while !cur.is_null() {
            // SAFETY: waiters of the open batch are alive (they are not served yet), and
            // we hold the batch lock, which owns the open batch.
            let next = unsafe { &*cur }.next();
            if cur == me {
                if link.is_null() {
                    batches.open = next;
                } else {
                    // SAFETY: as above; `link` is a waiter of the open batch.
                    let link = unsafe { &*link };
                    // SAFETY: the open batch's links are written under the batch lock only.
                    link.next.with_mut(|p| unsafe { *p = next });
                }
                batches.open_len -= 1;
                return true;
            }
            link = cur;
            cur = next;
        }
        false
    }

    /// Serve the open batch (which contains `me`): close, barrier, flip, sweep, hand out
    /// the outcomes. Returns with the lock held again and `me` served.
    fn combine<'s, 'd>(
        &'s self,
        domain: &'d Domain,
        mut batches: MutexGuard<'s, Batches>,
        me: &Waiter<'d>,
    ) -> MutexGuard<'s, Batches> {
        batches.combining = true;
        let faults = domain.faults();
        let early_generation = if faults.flip_before_close {
            // Fault: flip before closing, so a waiter that joins in between is served by a
            // flip that does not follow its unpublish.
            drop(batches);
            domain.batch_barrier(true);
            let generation = domain.flip();
            // As below: a yield point for the models.
            spin_hint();
            batches = self.lock();
            Some(generation)
        } else {
            None
        };
        if batches.unbarriered {
            // Relaxed: a hint (callers that may still join; see `callers`).
            let busy = self.callers.load(Relaxed) > batches.open_len;
            drop(batches);
            domain.gather_callers(busy);
            batches = self.lock();
        }
        // Close the batch before the flip: every waiter in it unpublished (and issued its
        // own barrier, unless `unbarriered`) before joining, which the lock orders before
        // our barrier and flip.
        let mut batch = Batch {
            newest: std::mem::replace(&mut batches.open, ptr::null()).cast(),
            len: std::mem::take(&mut batches.open_len),
            filter: std::mem::take(&mut batches.filter),
            unbarriered: std::mem::take(&mut batches.unbarriered),
        };
        drop(batches);
        // A pause instruction; in the loom build a yield, so that the models explore
        // callers joining the next batch while this one is served without spending their
        // preemption bound on it.
        spin_hint();
        let generation = early_generation.unwrap_or_else(|| {
            domain.batch_barrier(batch.unbarriered);
            domain.flip()
        });
        if faults.saturated_filter {
            batch.filter.saturate();
        }
        let own_only = faults.combiner_checks_own_only.then_some(me);
        let swept = domain.sweep(&batch, generation, own_only);
        if faults.batch_completion {
            // Fault: all-or-nothing completion, the replaced design: the combiner finishes
            // every waiter's wait before it releases any.
            for waiter in batch.waiters() {
                if let Outcome::Blocked { at, seen, .. } = waiter.outcome() {
                    let blocker = Blocker {
                        addr: waiter.addr,
                        generation: Some(generation),
                    };
                    domain.drain_from(blocker, at, Some(seen));
                    waiter.set_outcome(Outcome::Clear);
                }
            }
        }
        domain.counters.record_batch(batch.len as u64, &swept);

        let mut batches = self.lock();
        for waiter in batch.waiters() {
            waiter.set_served(&mut batches);
            // Under the lock: the waiter cannot see `served`, return and drop its
            // condition variable before this call is done with it.
            waiter.wake.notify_one();
        }
        batches.combining = false;
        // Waiters that joined while we worked elect one of them to combine their batch.
        // SAFETY: open waiters are alive until served, and we hold the batch lock.
        if let Some(next) = unsafe { batches.open.as_ref() } {
            next.wake.notify_one();
        }
        batches
    }
}

impl Domain {
    /// The combiner's one pass for a closed batch (step 3 of the module docs). Every
    /// waiter's `outcome` is `Clear` on entry; a waiter that a slot blocks gets `Blocked`
    /// at the first such slot in scan order. `own_only` (the `combiner_checks_own_only`
    /// fault): only that waiter is checked.
    fn sweep<'d>(
        &'d self,
        batch: &Batch<'d>,
        generation: usize,
        own_only: Option<&Waiter<'d>>,
    ) -> Swept {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let checked = |w: &Waiter<'d>| own_only.is_none_or(|own| ptr::eq(own, w));
        let mut swept = Swept::default();
        let mut unresolved = batch.waiters().filter(|w| checked(w)).count();
        let mut cursor = Cursor::start(self);
        while unresolved > 0 {
            let Some(slot) = cursor.slot() else { break };
            let seen = slot.observe();
            let value = seen.value;
            let blocks_all = value & 1 == 1 && wildcard_blocks(value, Some(generation));
            if blocks_all || (value != 0 && value & 1 == 0 && batch.filter.may_contain(value)) {
                let mut matched = false;
                for waiter in batch.waiters().filter(|w| checked(w)) {
                    if !blocks_all && waiter.addr != value {
                        continue;
                    }
                    matched = true;
                    if let Outcome::Clear = waiter.outcome() {
                        waiter.set_outcome(Outcome::Blocked {
                            generation,
                            at: cursor,
                            seen,
                        });
                        unresolved -= 1;
                        swept.blocked += 1;
                    }
                }
                swept.false_positives += u64::from(!matched && !blocks_all);
            }
            cursor.advance();
        }
        swept
    }
}

impl crate::stats::Counters {
    /// Statistics of one served batch of `waiters` waiters.
    fn record_batch(&self, waiters: u64, swept: &Swept) {
        self.shared_batches.fetch_add(1, Relaxed);
        self.batch_waiters.fetch_add(waiters, Relaxed);
        self.batch_size_histogram[crate::stats::size_bucket(waiters)].fetch_add(1, Relaxed);
        self.handoffs.fetch_add(swept.blocked, Relaxed);
        if swept.blocked > 0 {
            self.released_early
                .fetch_add(waiters - swept.blocked, Relaxed);
        }
        self.bloom_false_positives
            .fetch_add(swept.false_positives, Relaxed);
    }
}
