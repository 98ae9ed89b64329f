//! loom models of the shared scan (batches and the combiner), each with a companion that
//! injects the matching fault and must fail.
//!
//! Run: `RUSTFLAGS="--cfg hazptr_loom" cargo test -p hazptr --features loom --test loom_shared --release`
//! (CI uses a separate target dir so the loom build does not evict the normal one).
#![cfg(hazptr_loom)]

mod loom_common;

use std::sync::Arc;

use hazptr::{AtomicPtr, Domain, Faults};
use loom::thread;
use loom_common::{builder, free, must_fail, obj, read, spawn_writer};

/// The waiters' spin-then-sleep loops and `until_waiting` are long branches.
fn shared_builder(preemptions: usize) -> loom::model::Builder {
    let mut b = builder(preemptions);
    b.max_branches = 20_000;
    b
}

/// Yield until `n` synchronize calls have found a blocker (are waiting). Domain stats are
/// plain std atomics, so this orders nothing; it only steers the schedule.
fn until_waiting(d: &Domain, n: u64) {
    while d.stats().synchronize_waits < n {
        thread::yield_now();
    }
}

/// The main thread holds the permanent address `head`, so a combiner thread's
/// synchronize(head) waits for it. A reader (whose record is scanned before main's)
/// protects `src`, old object `x`, while a writer unpublishes `x` and synchronizes on it.
/// If the combiner flipped before closing its batch, the writer can join that batch after
/// the flip while the reader, holding a wildcard of the new generation, loads the old
/// `x`: the scan exempts the wildcard and the writer escapes.
fn waiter_after_flip(faults: Faults) {
    // One preemption: the combiner yields between its flip and its close in the faulty
    // order (and after its close in the right one), which costs none.
    shared_builder(1).check(move || {
        let d = Arc::new(Domain::with_faults(faults));
        let head: &'static u64 = Box::leak(Box::new(0u64));
        let x = obj(1);
        let y = obj(2);
        let src = Arc::new(AtomicPtr::new(x));
        let h = d.protect_addr(head as *const u64);
        let combiner = {
            let d = d.clone();
            thread::spawn(move || d.synchronize(head as *const u64).unwrap())
        };
        let reader = {
            let (d, src) = (d.clone(), src.clone());
            thread::spawn(move || {
                if let Some(g) = d.protect(&src) {
                    read(g.as_ptr());
                }
            })
        };
        let writer = spawn_writer(&d, &src, x, y);
        until_waiting(&d, 1);
        drop(h);
        combiner.join().unwrap();
        reader.join().unwrap();
        writer.join().unwrap();
        free(&[x, y]);
    });
}

#[test]
fn waiter_registered_after_flip_does_not_escape() {
    waiter_after_flip(Faults::default());
}

#[test]
fn waiter_registered_after_flip_escapes_when_flip_precedes_close() {
    must_fail("flip before close", || {
        waiter_after_flip(Faults {
            flip_before_close: true,
            ..Faults::default()
        })
    });
}

/// Two waiters share a batch, and only one of them can be its combiner. The main thread
/// protects the permanent address `head` and the object `x`; three threads then
/// synchronize: two on `head`, and a writer on `x` after unpublishing it. The first to
/// wait combines batch 1; the other two join batch 2 while it works (the combiner yields
/// between closing its batch and handing out the outcomes). Then main releases `head`,
/// reads `x`, releases `x`. Whichever waiter combines batch 2, the writer is released
/// only after main's protection of `x` ends: the sweep blocks each waiter on the slots of
/// its own address, and a blocked waiter finishes its wait itself.
fn two_waiters_one_batch(faults: Faults) {
    // One preemption (main's, right after the spawns) reaches every batch shape, the
    // combiner's yield doing the rest.
    shared_builder(1).check(move || {
        let d = Arc::new(Domain::with_faults(faults));
        let head: &'static u64 = Box::leak(Box::new(0u64));
        let x = obj(1);
        let y = obj(2);
        let src = Arc::new(AtomicPtr::new(x));
        let h = d.protect_addr(head as *const u64);
        let g = d.protect(&src).unwrap();
        let on_head: Vec<_> = (0..2)
            .map(|_| {
                let d = d.clone();
                thread::spawn(move || d.synchronize(head as *const u64).unwrap())
            })
            .collect();
        let writer = spawn_writer(&d, &src, x, y);
        // No hand-shake: the schedules in which all three wait before this line are the
        // interesting ones, and loom reaches them by preempting main here once.
        drop(h);
        read(g.as_ptr());
        drop(g);
        on_head.into_iter().for_each(|t| t.join().unwrap());
        writer.join().unwrap();
        free(&[x, y]);
    });
}

#[test]
fn every_waiter_of_a_batch_waits_for_the_readers_of_its_own_address() {
    two_waiters_one_batch(Faults::default());
}

#[test]
fn bloom_false_positives_never_release_a_waiter_early() {
    two_waiters_one_batch(Faults {
        saturated_filter: true,
        ..Faults::default()
    });
}

#[test]
fn combiner_that_checks_only_its_own_address_releases_others_early() {
    must_fail("combiner checks its own address only", || {
        two_waiters_one_batch(Faults {
            combiner_checks_own_only: true,
            ..Faults::default()
        })
    });
}

#[test]
fn waiter_that_takes_any_wakeup_as_completion_is_released_early() {
    must_fail("wake-up without re-check", || {
        two_waiters_one_batch(Faults {
            wake_without_recheck: true,
            ..Faults::default()
        })
    });
}

/// Set by an execution of the per-waiter model in which one waiter of a batch was
/// released while another of the same batch was still blocked (`Stats::released_early`),
/// so the model is known to reach the case it is about. A plain `std` atomic: it outlives
/// the model's executions and orders nothing inside them.
static SAW_EARLY_RELEASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Per-waiter completion (point 6 of the crate docs). Main protects three permanent
/// addresses `h`, `a`, `b`; three threads synchronize on them, one each. Once all three
/// wait, main releases `h` and `b` and joins the synchronizer on `b` *while it still
/// protects `a`*; only then does it release `a` (as early as it can: the waiter on `a`
/// polls meanwhile, and each poll multiplies the schedules loom explores). When the waiters on `a` and `b` share a
/// batch (they do when both join while the combiner of `h`'s batch is at work), the waiter
/// on `b` must return although its batch-mate on `a` is still blocked. Under batch-level
/// completion it cannot, and main's join never returns (loom reports the deadlock).
fn clear_waiter_beside_a_blocked_one(faults: Faults) {
    // No preemption: the combiner yields between closing its batch and handing out the
    // outcomes (in the loom build), so the schedules in which the waiters on `a` and `b`
    // join the next batch meanwhile cost none, and the test below checks that they were
    // reached. A bound of 1 explores far more and did not finish within 15 minutes.
    let mut b = shared_builder(0);
    // The waiter on `a` polls its slot (a yield each) until main lets go.
    b.max_branches = 200_000;
    b.check(move || {
        let d = Arc::new(Domain::with_faults(faults));
        let words: &'static [u64; 3] = Box::leak(Box::new([0; 3]));
        let [h, a, b] = [0, 1, 2].map(|i| &words[i] as *const u64 as usize);
        let gh = d.protect_addr(h as *const u64);
        let ga = d.protect_addr(a as *const u64);
        let gb = d.protect_addr(b as *const u64);
        let [th, ta, tb] = [h, a, b].map(|addr| {
            let d = d.clone();
            thread::spawn(move || d.synchronize(addr as *const u64).unwrap())
        });
        until_waiting(&d, 3);
        drop(gb);
        drop(gh);
        tb.join().unwrap();
        if d.stats().released_early > 0 {
            SAW_EARLY_RELEASE.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        drop(ga);
        th.join().unwrap();
        ta.join().unwrap();
    });
}

#[test]
fn waiter_with_a_clear_address_returns_while_another_is_blocked() {
    clear_waiter_beside_a_blocked_one(Faults::default());
    assert!(
        SAW_EARLY_RELEASE.load(std::sync::atomic::Ordering::Relaxed),
        "no explored execution put the waiters on `a` and `b` in one batch"
    );
}

#[test]
fn waiter_with_a_clear_address_waits_for_a_batch_mate_under_batch_completion() {
    must_fail("batch-level completion", || {
        clear_waiter_beside_a_blocked_one(Faults {
            batch_completion: true,
            ..Faults::default()
        })
    });
}
