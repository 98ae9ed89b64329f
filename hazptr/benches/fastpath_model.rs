//! A stand-alone model of `Domain::protect` + drop, to size each part of the reader's fast
//! path (the analysis in BENCHMARKS.md, "Why the reader targets are missed").
//!
//! It does not use the `hazptr` crate: it re-creates the fast path's memory accesses with
//! the same atomics and orderings (a 128-byte record of four `(value, seq)` slots plus a
//! `used` bitmask, a const thread-local `(domain id, record)` cache, a `Holder` enum with a
//! cold backup path), then removes one piece at a time. Single thread; nothing here is a
//! correct hazard-pointer implementation on its own (no scanner exists), it only reproduces
//! the reader's instruction stream.
//!
//! Output: `ROUNDS` interleaved rounds of `BATCH` iterations per row, median ns/op.
//! Run: `taskset -c 1 cargo bench -p hazptr --bench fastpath_model`.

use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicPtr, AtomicUsize};
use std::time::Instant;

/// `(value, release sequence)`, as `hazptr`'s `Slot`.
type Slot = (AtomicUsize, AtomicUsize);

#[repr(C, align(128))]
#[derive(Default)]
struct Record {
    slots: [Slot; 4],
    used: AtomicUsize,
}

/// The fields of `Domain` the fast path reads.
struct Dom {
    id: u64,
    generation: AtomicUsize,
    force_slow_path: AtomicBool,
    asymmetric: bool,
}

thread_local! {
    static LAST: Cell<(u64, Option<&'static Record>)> = const { Cell::new((0, None)) };
}

static BACKUP: Slot = (AtomicUsize::new(0), AtomicUsize::new(0));

enum Holder {
    Primary {
        record: &'static Record,
        index: usize,
    },
    Backup(&'static Slot),
}

#[cold]
#[inline(never)]
fn claim_slow() -> Holder {
    Holder::Backup(black_box(&BACKUP))
}

#[inline(always)]
fn reader_fence(d: &Dom) {
    if d.asymmetric {
        compiler_fence(SeqCst);
    } else {
        fence(SeqCst);
    }
}

/// The record lookup: force-slow-path flag, then the thread-local cache.
#[inline(always)]
fn lookup(d: &Dom) -> Option<&'static Record> {
    // Relaxed: a debug switch, as in hazptr.
    if d.force_slow_path.load(Relaxed) {
        return None;
    }
    let (id, record) = LAST.with(|c| c.get());
    if id == d.id {
        record
    } else {
        None
    }
}

/// hazptr's shape at d600f5a: `used` bitmask claim/free, Holder enum, seq bump.
#[inline(always)]
fn shape_now(d: &Dom, src: &AtomicPtr<u64>, seq_bump: bool) {
    let holder = match lookup(d) {
        Some(record) => {
            // Relaxed: owner-private bookkeeping, as in hazptr.
            let used = record.used.load(Relaxed);
            if used == 0b1111 {
                claim_slow()
            } else {
                let index = (!used).trailing_zeros() as usize;
                record.used.store(used | (1 << index), Relaxed);
                Holder::Primary { record, index }
            }
        }
        None => claim_slow(),
    };
    let slot = match holder {
        Holder::Primary { record, index } => &record.slots[index],
        Holder::Backup(slot) => slot,
    };
    // Acquire load of the generation, Release stores into the slot: as in hazptr.
    slot.0.store((d.generation.load(Acquire) << 1) | 1, Release);
    reader_fence(d);
    let p = src.load(Acquire);
    slot.0.store(p as usize, Release);
    black_box(p);
    match holder {
        Holder::Primary { record, index } => {
            let slot = &record.slots[index];
            if seq_bump {
                // Relaxed load of the owner's own counter, Release store: as in hazptr.
                let s = slot.1.load(Relaxed);
                slot.1.store(s.wrapping_add(1), Release);
            }
            slot.0.store(0, Release);
            // Relaxed: owner-private bookkeeping.
            let used = record.used.load(Relaxed);
            record.used.store(used & !(1 << index), Relaxed);
        }
        Holder::Backup(slot) => slot.0.store(0, Release),
    }
}

/// The proposal (since adopted in `f4c0e1a`): no `used` word; slot 0 is taken when its
/// own value is 0 (a branch, so the index is a constant on the hot path); release is seq
/// bump + clear.
#[inline(always)]
fn shape_proposed(d: &Dom, src: &AtomicPtr<u64>) {
    let Some(record) = lookup(d) else {
        claim_slow();
        return;
    };
    let slot = &record.slots[0];
    // Relaxed: the owner reads its own last store.
    if slot.0.load(Relaxed) != 0 {
        claim_slow();
        return;
    }
    slot.0.store((d.generation.load(Acquire) << 1) | 1, Release);
    reader_fence(d);
    let p = src.load(Acquire);
    slot.0.store(p as usize, Release);
    black_box(p);
    // As in `shape_now`.
    let s = slot.1.load(Relaxed);
    slot.1.store(s.wrapping_add(1), Release);
    slot.0.store(0, Release);
}

/// The floor: store p, compiler fence, reload and compare, clear (the least an
/// asymmetric protect can do).
#[inline(always)]
fn floor(slot: &Slot, src: &AtomicPtr<u64>) {
    // Relaxed store + compiler fence: the asymmetric scheme (the heavy side is elsewhere).
    let p = src.load(Relaxed);
    slot.0.store(p as usize, Relaxed);
    compiler_fence(SeqCst);
    if src.load(Acquire) != p {
        slot.0.store(0, Release);
        return;
    }
    black_box(p);
    slot.0.store(0, Release);
}

/// Wildcard-first on a fixed slot: no claim, no lookup, no seq.
#[inline(always)]
fn wildcard_fixed(d: &Dom, slot: &Slot, src: &AtomicPtr<u64>) {
    slot.0.store((d.generation.load(Acquire) << 1) | 1, Release);
    compiler_fence(SeqCst);
    let p = src.load(Acquire);
    slot.0.store(p as usize, Release);
    black_box(p);
    slot.0.store(0, Release);
}

type Row<'a> = (&'static str, Box<dyn Fn(u64) + 'a>);

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let (rounds, batch) = if bench_mode {
        (21, 2_000_000)
    } else {
        (1, 1_000)
    };

    let record: &'static Record = Box::leak(Box::default());
    LAST.with(|c| c.set((7, Some(black_box(record)))));
    let domain = |asymmetric| Dom {
        id: 7,
        generation: AtomicUsize::new(1),
        force_slow_path: AtomicBool::new(false),
        asymmetric,
    };
    let asym = black_box(domain(true));
    let sym = black_box(domain(false));
    let obj: &'static mut u64 = Box::leak(Box::new(42));
    let src = AtomicPtr::new(obj);
    let (src, asym, sym) = (&src, &asym, &sym);
    let fixed: &Slot = &record.slots[3];

    let rows: Vec<Row<'_>> = vec![
        (
            "plain load",
            Box::new(move |n| {
                for _ in 0..n {
                    black_box(black_box(src).load(Acquire));
                }
            }),
        ),
        (
            "floor: store p, cfence, reload, clear",
            Box::new(move |n| (0..n).for_each(|_| floor(fixed, black_box(src)))),
        ),
        (
            "wildcard-first on a fixed slot",
            Box::new(move |n| (0..n).for_each(|_| wildcard_fixed(asym, fixed, black_box(src)))),
        ),
        (
            "asym: d600f5a shape (used + Holder + seq)",
            Box::new(move |n| (0..n).for_each(|_| shape_now(asym, black_box(src), true))),
        ),
        (
            "asym: d600f5a shape minus seq bump",
            Box::new(move |n| (0..n).for_each(|_| shape_now(asym, black_box(src), false))),
        ),
        (
            "asym: no used, slot 0 by branch",
            Box::new(move |n| (0..n).for_each(|_| shape_proposed(asym, black_box(src)))),
        ),
        (
            "sym: d600f5a shape (used + Holder + seq)",
            Box::new(move |n| (0..n).for_each(|_| shape_now(sym, black_box(src), true))),
        ),
        (
            "sym: no used, slot 0 by branch",
            Box::new(move |n| (0..n).for_each(|_| shape_proposed(sym, black_box(src)))),
        ),
    ];

    let mut ns: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); rows.len()];
    for _ in 0..rounds {
        for (i, (_, run)) in rows.iter().enumerate() {
            let t0 = Instant::now();
            run(batch);
            ns[i].push(t0.elapsed().as_secs_f64() * 1e9 / batch as f64);
        }
    }
    println!("fast-path model: {rounds} rounds x {batch} iterations per row; medians");
    for (i, (name, _)) in rows.iter().enumerate() {
        ns[i].sort_by(f64::total_cmp);
        println!("{name:<44} {:>6.2} ns", ns[i][ns[i].len() / 2]);
    }
}
