//! The shared scan: concurrent `synchronize` callers that have to wait share one barrier,
//! one generation flip and one sweep over the slots, and each is then released as soon as
//! *its own* address is clear.
//!
//! A caller joins the *open* batch with a [`Waiter`] record on its own stack (linked into
//! the batch, no allocation) and adds its address to the batch's Bloom filter. The first
//! waiter that finds no combiner at work becomes the **combiner** (no dedicated scan
//! thread, so the common blocked case pays no extra wake-up). It
//!
//! 1. closes the open batch *before* it flips the wildcard generation (a waiter that joins
//!    later belongs to the next batch and its next flip); in Asymmetric mode it first
//!    lets more callers join: while a `membarrier` is in flight, and for a short timed
//!    wait (the *gather*) when other callers are inside `synchronize` *and* a look at the
//!    slots, without a barrier, finds one that may block the batch (see below),
//! 2. issues the batch's barrier (see `Domain::batch_barrier`) and flips,
//! 3. **sweeps** every slot once, primary slots first: a slot value that misses the filter
//!    blocks nobody; a hit, or a wildcard older than the flip, is compared exactly with
//!    the batch's waiters, and each waiter it blocks (that nothing blocked earlier in the
//!    scan order) records the slot's position and the observation,
//! 4. under the batch lock, serves every waiter that nothing blocked (it returns at once)
//!    and moves the blocked ones to the **blocked list**.
//!
//! One blocked waiter at a time is the **poller**: it polls every waiter of the blocked
//! list from the slot that blocked it onwards, in scan order, and serves each one as soon
//! as that waiter's own scan reaches the end; the others sleep. When the poller's own scan
//! ends, it hands the rest back and wakes one of them to poll next. So however many
//! callers wait, one thread polls (on a machine with few CPUs, waiters that each spun on
//! their own slots would take the CPU from the very readers they wait for), the combiner
//! never waits on another caller's behalf, and no waiter waits for a reader of another
//! waiter's address (the ordering argument is point 6 of the crate docs).
//!
//! The gather trades latency for fewer `membarrier`s, and is only worth it when there is
//! someone to combine with, as in flat combining (Hendler et al., "Flat combining and the
//! synchronization-parallelism tradeoff", SPAA 2010), which serves whoever is queued and
//! never waits for more. A caller alone has nobody to wait for. A batch that nothing
//! protects returns right after its barrier and sweep, so a gather would be most of its
//! latency; it is served at once, and callers that arrive meanwhile form the next batch.
//! A batch whose address a reader is using waits for that reader after its barrier
//! anyway, and its barrier must interrupt running readers, so sharing it is worth a short
//! wait. `Stats::gather_waits` counts the gathers.
//!
//! Before this design a batch completed all at once, and every waiter waited for the
//! slowest reader of any address in it; the `batch_completion` fault of the loom models
//! brings that back, and the model of per-waiter release fails with it.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::PoisonError;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::bloom::Bloom;
use crate::primitive::{spin_hint, Mutex, MutexGuard};
use crate::scan::{wildcard_blocks, Blocker, Cursor};
use crate::wait::Backoff;
use crate::waiter::{List, Locked, Outcome, State, Waiter};
use crate::Domain;

/// The batch state of one domain, under its lock.
struct Batches {
    /// The open batch's waiters.
    open: List,
    /// Addresses of the open batch's waiters.
    filter: Bloom,
    /// The open batch's waiters joined without a heavy barrier of their own after their
    /// unpublish (Asymmetric mode, see `Domain::synchronize`).
    unbarriered: bool,
    /// A combiner is between closing its batch and handing out the outcomes.
    combining: bool,
    /// Waiters the sweep found blocked, not being polled right now.
    blocked: List,
    /// A poller is at work (it owns the waiters it took out of `blocked`).
    polling: bool,
    /// The poller's record while `polling`: a combiner that adds blocked waiters wakes it
    /// from its sleep, so that they are polled at once.
    poller: *const Waiter<'static>,
}

// SAFETY: `poller` names the record of a thread inside `SharedScan::poll`, valid while
// `polling` is set (the poller clears both under the lock before it returns), and is only
// used under the lock; the lists are `Send`.
unsafe impl Send for Batches {}

impl Batches {
    fn locked(&self) -> Locked<'_> {
        Locked(PhantomData)
    }
}

/// What one sweep found.
#[derive(Default)]
struct Swept {
    /// Waiters the sweep found blocked (handed to the poller).
    blocked: u64,
    /// Slot values that hit the filter but matched no waiter.
    false_positives: u64,
}

/// How long an Asymmetric combiner waits for more callers to join its batch when others
/// are inside `synchronize` and a slot may block the batch (a timed wait, so a combiner
/// that gave its CPU to busy readers gets it back soon; the timer's slack usually makes it
/// longer).
const GATHER: Duration = Duration::from_micros(20);

/// Counts one caller in `SharedScan::callers` while it lives.
struct CallerCount<'a>(&'a AtomicUsize);

impl<'a> CallerCount<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
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
    /// Callers inside `wait` that joined without a barrier (Asymmetric mode). More of
    /// them than the open batch holds means that others may be about to join, so a
    /// combiner whose batch a slot may block waits for them a little. A hint with no
    /// ordering role.
    callers: CachePadded<AtomicUsize>,
    /// A combiner added waiters to the blocked list while a poller was at work: the
    /// poller takes them in at its next round. A hint with no ordering role (the lock
    /// orders the hand-over; the poller also takes the lock every few rounds).
    handed_over: std::sync::atomic::AtomicBool,
}

/// Spinning poll rounds after which the poller takes the lock anyway.
const UNLOCKED_ROUNDS: u32 = 16;

impl SharedScan {
    pub(crate) fn new() -> Self {
        SharedScan {
            batches: Mutex::new(Batches {
                open: List::new(),
                filter: Bloom::default(),
                unbarriered: false,
                combining: false,
                blocked: List::new(),
                polling: false,
                poller: ptr::null(),
            }),
            callers: CachePadded::new(AtomicUsize::new(0)),
            handed_over: std::sync::atomic::AtomicBool::new(false),
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
        batches.open.push(&me);
        batches.filter.insert(addr);
        batches.unbarriered |= !barriered;
        loop {
            let state = me.state(&batches.locked());
            match state {
                State::Served => return,
                State::Queued if !batches.combining => {
                    batches = self.combine(domain, batches, &me);
                }
                State::Blocked if !batches.polling => {
                    batches = self.poll(domain, batches, &me);
                }
                State::Queued | State::Blocked => {
                    batches = me
                        .wake
                        .wait(batches)
                        .unwrap_or_else(PoisonError::into_inner);
                    if domain.faults().wake_without_recheck
                        && state == State::Queued
                        && batches.open.remove(&me)
                    {
                        // Fault: the wake-up that elected us combiner is taken as the end
                        // of the wait (unlinked first, so that no combiner touches the
                        // record later; the election passes on, so the fault shows as an
                        // early release, not a hang).
                        if let Some(next) = batches.open.first() {
                            next.wake.notify_one();
                        }
                        return;
                    }
                }
            }
        }
    }

    /// Serve the open batch (which contains `me`): close, barrier, flip, sweep, hand out
    /// the outcomes. Returns with the lock held again.
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
            // Let more callers join the batch that its one `membarrier` will serve: until
            // a `membarrier` in flight ends (it started before our waiters joined, so it
            // cannot serve them), and for `GATHER` if other callers are about and a slot
            // may block the batch (module docs: never for a caller alone, nor for a batch
            // that nothing protects).
            drop(batches);
            domain.let_barrier_in_flight_end();
            batches = self.lock();
            // Relaxed: a hint (see `callers`). Checked first, so that a caller alone does
            // not even look at the slots.
            if self.callers.load(Relaxed) > batches.open.len
                && domain.batch_seen_protected(&batches.open, &batches.filter)
            {
                domain.counters.gather_waits.fetch_add(1, Relaxed);
                // Nobody notifies a combiner's own condition variable: this times out,
                // unless the wake-up is spurious, which only shortens the wait.
                batches = me
                    .wake
                    .wait_timeout(batches, GATHER)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        // Close the batch before the flip: every waiter in it unpublished (and issued its
        // own barrier, unless `unbarriered`) before joining, which the lock orders before
        // our barrier and flip.
        let batch = batches.open.take();
        let mut filter = std::mem::take(&mut batches.filter);
        let unbarriered = std::mem::take(&mut batches.unbarriered);
        drop(batches);
        // A pause instruction; in the loom build a yield, so that the models explore
        // callers joining the next batch while this one is served without spending their
        // preemption bound on it.
        spin_hint();
        let generation = early_generation.unwrap_or_else(|| {
            domain.batch_barrier(unbarriered);
            domain.flip()
        });
        if faults.saturated_filter {
            filter.saturate();
        }
        let own_only = faults.combiner_checks_own_only.then_some(me);
        let swept = domain.sweep(&batch, &filter, generation, own_only);
        if faults.batch_completion {
            // Fault: all-or-nothing completion, the replaced design: the combiner finishes
            // every waiter's wait before it releases any.
            for waiter in batch.iter() {
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
        let mut me_blocked = false;
        for waiter in batch.drain() {
            let mine = ptr::eq(waiter, me);
            match waiter.outcome() {
                Outcome::Clear => {
                    waiter.set_state(State::Served, &batches.locked());
                    // Under the lock: the waiter cannot see `Served`, return and drop its
                    // condition variable before this call is done with it. Not our own:
                    // we see `Served` when we return to `wait` (a notify is a syscall).
                    if !mine {
                        waiter.wake.notify_one();
                    }
                }
                Outcome::Blocked { .. } => {
                    me_blocked |= mine;
                    waiter.set_state(State::Blocked, &batches.locked());
                    batches.blocked.push(waiter);
                }
            }
        }
        batches.combining = false;
        // Waiters that joined while we worked elect one of them to combine their batch,
        // and the blocked ones one to poll if nobody does, or wake the poller.
        if let Some(next) = batches.open.first() {
            next.wake.notify_one();
        }
        if batches.blocked.len > 0 {
            if batches.polling {
                // Relaxed: a hint for the poller's next round (see `handed_over`).
                self.handed_over.store(true, Relaxed);
                // SAFETY: the poller's record is alive while `polling` (see `poller`),
                // and we hold the lock.
                unsafe { &*batches.poller }.wake.notify_one();
            } else if !me_blocked {
                if let Some(next) = batches.blocked.first() {
                    next.wake.notify_one();
                }
            }
            // else: we are blocked and nobody polls, so `wait` makes us the poller.
        }
        batches
    }

    /// Poll the blocked list (which contains `me`) until `me`'s own scan ends, serving
    /// every other waiter whose scan ends meanwhile. Returns with the lock held again and
    /// `me` served.
    fn poll<'s, 'd>(
        &'s self,
        domain: &'d Domain,
        mut batches: MutexGuard<'s, Batches>,
        me: &Waiter<'d>,
    ) -> MutexGuard<'s, Batches> {
        batches.polling = true;
        batches.poller = ptr::from_ref(me).cast();
        let mut mine = batches.blocked.take();
        drop(batches);
        let mut backoff = Backoff::new();
        let mut unlocked_rounds = 0u32;
        loop {
            let (mut finished, mut waiting) = (List::new(), List::new());
            for waiter in mine.drain() {
                if domain.advance(waiter) {
                    finished.push(waiter);
                } else {
                    waiting.push(waiter);
                }
            }
            mine = waiting;
            // Take the lock only to serve, to take in waiters a combiner handed over, to
            // sleep, or every few rounds: polling must not contend with the combiners.
            // Relaxed: a hint; the lock orders the hand-over itself.
            let must_lock = finished.len > 0
                || self.handed_over.load(Relaxed)
                || unlocked_rounds >= UNLOCKED_ROUNDS;
            let pause = if must_lock {
                None
            } else {
                backoff.next_pause()
            };
            if !must_lock && pause.is_none() {
                unlocked_rounds += 1;
                backoff.spin();
                continue;
            }
            unlocked_rounds = 0;
            let mut batches = self.lock();
            // Relaxed: as above.
            self.handed_over.store(false, Relaxed);
            let arrived = batches.blocked.take();
            let changed = finished.len > 0 || arrived.len > 0;
            mine.append(arrived);
            if mine.len > 0 {
                domain
                    .counters
                    .released_early
                    .fetch_add(finished.len as u64, Relaxed);
            }
            let mut done = false;
            for waiter in finished.drain() {
                let mine = ptr::eq(waiter, me);
                done |= mine;
                waiter.set_state(State::Served, &batches.locked());
                // Under the lock, and not our own, as in `combine`.
                if !mine {
                    waiter.wake.notify_one();
                }
            }
            if done {
                // Hand the rest back and wake one of them to poll next.
                batches.blocked = mine;
                batches.polling = false;
                batches.poller = ptr::null();
                if let Some(next) = batches.blocked.first() {
                    next.wake.notify_one();
                }
                return batches;
            }
            if changed {
                backoff = Backoff::new();
                continue;
            }
            match pause {
                // Sleep on our own condition variable, so that a combiner that hands us
                // more blocked waiters wakes us at once (a spurious wake-up only polls
                // early).
                Some(pause) => drop(
                    me.wake
                        .wait_timeout(batches, pause)
                        .unwrap_or_else(PoisonError::into_inner),
                ),
                None => drop(batches),
            }
        }
    }
}

impl Domain {
    /// Whether a slot seems to block `batch` (the open batch, under the lock; `filter`
    /// holds its addresses): a wildcard of any generation, or one of the batch's
    /// addresses. Plain loads before the batch's barrier and flip, so only a hint: a
    /// reader's publication may not be visible yet, and a protection seen may end before
    /// the sweep. It decides whether an Asymmetric combiner waits for more callers
    /// (step 1 of the module docs); only the sweep decides who waits for what.
    fn batch_seen_protected(&self, batch: &List, filter: &Bloom) -> bool {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let mut cursor = Cursor::start(self);
        while let Some(slot) = cursor.slot() {
            // An Acquire load (the slot's); a hint needs no ordering, the sweep's
            // observations after the barrier and flip are what count.
            let value = slot.load_value();
            let blocks = value & 1 == 1
                || (value != 0
                    && filter.may_contain(value)
                    && batch.iter().any(|w| w.addr == value));
            if blocks {
                return true;
            }
            cursor.advance();
        }
        false
    }

    /// The combiner's one pass for a closed batch (step 3 of the module docs). Every
    /// waiter's `outcome` is `Clear` on entry; a waiter that a slot blocks gets `Blocked`
    /// at the first such slot in scan order. `own_only` (the `combiner_checks_own_only`
    /// fault): only that waiter is checked.
    fn sweep<'d>(
        &'d self,
        batch: &List,
        filter: &Bloom,
        generation: usize,
        own_only: Option<&Waiter<'d>>,
    ) -> Swept {
        self.counters.scan_passes.fetch_add(1, Relaxed);
        let checked = |w: &Waiter<'d>| own_only.is_none_or(|own| ptr::eq(own, w));
        let mut swept = Swept::default();
        let mut unresolved = batch.iter().filter(|w| checked(w)).count();
        let mut cursor = Cursor::start(self);
        while unresolved > 0 {
            let Some(slot) = cursor.slot() else { break };
            let seen = slot.observe();
            let value = seen.value;
            let blocks_all = value & 1 == 1 && wildcard_blocks(value, Some(generation));
            if blocks_all || (value != 0 && value & 1 == 0 && filter.may_contain(value)) {
                let mut matched = false;
                for waiter in batch.iter().filter(|w| checked(w)) {
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

    /// One poll for a blocked waiter (owned by the caller): if the slot that blocked it
    /// is seen released, continue its scan to the next slot that blocks it. Returns
    /// whether its scan reached the end (its wait is over).
    fn advance(&self, waiter: &Waiter<'_>) -> bool {
        let Outcome::Blocked {
            generation,
            at,
            seen,
        } = waiter.outcome()
        else {
            return true;
        };
        let blocker = Blocker {
            addr: waiter.addr,
            generation: Some(generation),
        };
        if let Some(slot) = at.slot() {
            self.counters.slot_polls.fetch_add(1, Relaxed);
            let now = slot.observe();
            let released = now.seq != seen.seq && !self.faults().ignore_release_seq;
            if !released && blocker.blocks(now.value) {
                return false;
            }
        }
        let mut cursor = at;
        cursor.advance();
        while let Some(slot) = cursor.slot() {
            let seen = slot.observe();
            if blocker.blocks(seen.value) {
                waiter.set_outcome(Outcome::Blocked {
                    generation,
                    at: cursor,
                    seen,
                });
                return false;
            }
            cursor.advance();
        }
        waiter.set_outcome(Outcome::Clear);
        true
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
