//! `instrumented_locks::raw` against parking_lot 0.12, in one run: the same `lock_api`
//! wrappers (`Mutex<R, u64>`, `RwLock<R, u64>`) over our raw locks and over parking_lot's.
//!
//! Rows, each once per implementation:
//!
//! * uncontended, one thread: mutex `lock`+unlock, mutex `try_lock`+unlock, rwlock `read`,
//!   `write`, `read_recursive`, `upgradable_read`+`upgrade`+unlock;
//! * contended, two threads on one lock, each doing `CONTENDED_OPS` operations: mutex
//!   lock+increment+unlock, rwlock write, rwlock read-mostly (one write in eight). Reported as
//!   ns per operation of the pair (wall time / total operations).
//!
//! Two measurements of the same closures, as in `hazptr/benches/reader.rs`:
//!
//! 1. criterion (`iter_custom`), one row after the other;
//! 2. an interleaved table printed at the end: 21 rounds, each running every row in
//!    turn (the pair's two sides in alternating order), then per row the median over rounds of ns/op, and the median over rounds of the
//!    per-round ratio ours / parking_lot. The ratio is the quoted figure: a busy phase of the
//!    machine hits both members of a pair.
//!
//! Run: `cargo bench -p instrumented-locks --bench raw` (the workspace bench profile uses fat
//! LTO, so parking_lot's fast paths are inlined as ours are). Under `cargo test --benches`
//! criterion runs each row once and the table does one short round.

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::Criterion;
use instrumented_locks::raw;
use lock_api::RwLockUpgradableReadGuard;

/// Operations per thread in one contended run.
const CONTENDED_OPS: u64 = 100_000;

/// A benchmark row: runs its operation `n` times, returns the operations done.
type Run<'a> = Box<dyn FnMut(u64) -> u64 + 'a>;

/// A pair of rows: (name, ours, parking_lot's).
struct Pair<'a> {
    name: &'static str,
    ours: Run<'a>,
    theirs: Run<'a>,
}

/// The locks every row works on, once per implementation.
struct Locks<M: lock_api::RawMutex, L: lock_api::RawRwLock> {
    mutex: lock_api::Mutex<M, u64>,
    rwlock: lock_api::RwLock<L, u64>,
}

impl<M, L> Locks<M, L>
where
    M: lock_api::RawMutex + Sync,
    L: lock_api::RawRwLockUpgrade + lock_api::RawRwLockRecursive + Sync,
{
    fn new() -> Self {
        Locks {
            mutex: lock_api::Mutex::new(0),
            rwlock: lock_api::RwLock::new(0),
        }
    }

    /// The uncontended rows, in `PAIR_NAMES` order.
    fn rows(&self) -> Vec<Run<'_>> {
        let (m, l) = (&self.mutex, &self.rwlock);
        vec![
            Box::new(move |n| {
                for _ in 0..n {
                    *black_box(m).lock() += 1;
                }
                n
            }),
            Box::new(move |n| {
                for _ in 0..n {
                    if let Some(mut g) = black_box(m).try_lock() {
                        *g += 1;
                    }
                }
                n
            }),
            Box::new(move |n| {
                for _ in 0..n {
                    black_box(*black_box(l).read());
                }
                n
            }),
            Box::new(move |n| {
                for _ in 0..n {
                    *black_box(l).write() += 1;
                }
                n
            }),
            Box::new(move |n| {
                for _ in 0..n {
                    black_box(*black_box(l).read_recursive());
                }
                n
            }),
            Box::new(move |n| {
                for _ in 0..n {
                    let u = black_box(l).upgradable_read();
                    *RwLockUpgradableReadGuard::upgrade(u) += 1;
                }
                n
            }),
            Box::new(move |n| contended(n, |_| *black_box(m).lock() += 1)),
            Box::new(move |n| contended(n, |_| *black_box(l).write() += 1)),
            Box::new(move |n| {
                contended(n, |i| {
                    if i % 8 == 0 {
                        *black_box(l).write() += 1;
                    } else {
                        black_box(*black_box(l).read());
                    }
                })
            }),
        ]
    }
}

const PAIR_NAMES: [&str; 9] = [
    "mutex_lock_unlock",
    "mutex_try_lock",
    "rwlock_read",
    "rwlock_write",
    "rwlock_read_recursive",
    "rwlock_upgradable_upgrade",
    "contended_2t/mutex",
    "contended_2t/rwlock_write",
    "contended_2t/rwlock_read_mostly",
];

/// Two threads each run `op` `CONTENDED_OPS` times per unit of `n` (criterion asks for `n`
/// iterations; one iteration = one run of both threads). Returns the operations done.
fn contended(n: u64, op: impl Fn(u64) + Sync) -> u64 {
    let start = Barrier::new(2);
    for _ in 0..n {
        thread::scope(|s| {
            s.spawn(|| {
                start.wait();
                for i in 0..CONTENDED_OPS {
                    op(i);
                }
            });
            start.wait();
            for i in 0..CONTENDED_OPS {
                op(i);
            }
        });
    }
    2 * n * CONTENDED_OPS
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Iterations per row per round: about the same time for every row.
fn batch(name: &str, bench_mode: bool) -> u64 {
    match (name.starts_with("contended"), bench_mode) {
        (true, true) => 3,
        (false, true) => 2_000_000,
        (true, false) => 1,
        (false, false) => 1_000,
    }
}

/// The interleaved table: per round, every row (ours, then parking_lot's) in turn.
fn interleaved(pairs: &mut [Pair<'_>], rounds: usize, bench_mode: bool) {
    let mut ns = vec![(Vec::new(), Vec::new()); pairs.len()];
    for round in 0..rounds {
        for (i, pair) in pairs.iter_mut().enumerate() {
            let n = batch(pair.name, bench_mode);
            let (ours, theirs) = &mut ns[i];
            let mut runs = [(&mut pair.ours, ours), (&mut pair.theirs, theirs)];
            // Alternate which side runs first, so neither always gets the warmer cache.
            if round % 2 == 1 {
                runs.reverse();
            }
            for (run, out) in runs {
                let t0 = Instant::now();
                let ops = run(n);
                out.push(t0.elapsed().as_secs_f64() * 1e9 / ops as f64);
            }
        }
    }
    println!("\ninterleaved: {rounds} rounds; medians over rounds (ns per operation)");
    println!(
        "{:<34} {:>9} {:>12} {:>15}",
        "row", "ours", "parking_lot", "ours/parking_lot"
    );
    for (pair, (ours, theirs)) in pairs.iter().zip(&ns) {
        let mut ratios: Vec<f64> = ours.iter().zip(theirs).map(|(a, b)| a / b).collect();
        println!(
            "{:<34} {:>9.2} {:>12.2} {:>15.3}",
            pair.name,
            median(&mut ours.clone()),
            median(&mut theirs.clone()),
            median(&mut ratios)
        );
    }
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let ours = Locks::<raw::RawMutex, raw::RawRwLock>::new();
    let theirs = Locks::<real_parking_lot::RawMutex, real_parking_lot::RawRwLock>::new();
    let mut pairs: Vec<Pair<'_>> = PAIR_NAMES
        .iter()
        .zip(ours.rows().into_iter().zip(theirs.rows()))
        .map(|(&name, (ours, theirs))| Pair { name, ours, theirs })
        .collect();

    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args();
    for pair in pairs.iter_mut() {
        let mut group = c.benchmark_group(format!("raw/{}", pair.name));
        if pair.name.starts_with("contended") {
            group.sample_size(10);
        }
        for (label, run) in [("ours", &mut pair.ours), ("parking_lot", &mut pair.theirs)] {
            group.bench_function(label, |b| {
                b.iter_custom(|iters| {
                    let t0 = Instant::now();
                    run(iters);
                    t0.elapsed()
                })
            });
        }
        group.finish();
    }
    c.final_summary();

    interleaved(&mut pairs, if bench_mode { 21 } else { 1 }, bench_mode);
}
