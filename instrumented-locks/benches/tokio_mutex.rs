//! The validated `tokio::sync::Mutex` (feature `tokio`) against tokio's own, in one run:
//! lock+unlock, uncontended (one task on a current-thread runtime) and contended (two tasks
//! on a two-worker multi-thread runtime, each locking in a loop with a yield while holding).
//!
//! Columns: `tokio` (tokio's `Mutex`); `validated` (ours, in an instrumented task: validated,
//! held by the task, released); `validated_plain_spawn` (ours, in a plain `tokio::spawn`
//! task: the same, in a context found by the task id); `validated_outside_task` (ours, in
//! `block_on`'s own future: validated, not held); `validated_off` (ours, validation switched
//! off at run time).
//!
//! Two harnesses in one run: first a table of interleaved rounds (`ROUNDS` rounds, each
//! running every cell once for `OPS` operations, the cells in rotating order; per cell the
//! median over rounds of ns/op, per ratio to `tokio` the median over rounds of the per-round
//! ratio, so a busy phase of the machine hits a whole round), then criterion's groups. Run
//! `cargo bench -p instrumented-locks --features tokio --bench tokio_mutex`; numbers and
//! ratios are in BENCHMARKS.md.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use instrumented_locks::task::instrument;
use tokio::runtime::{Builder, Runtime};

fn current_thread() -> Runtime {
    Builder::new_current_thread().build().expect("runtime")
}

fn two_workers() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime")
}

/// `n` lock+unlock of `lock` in one task, timed inside it.
macro_rules! uncontended {
    ($rt:expr, $lock:expr, $wrap:expr, $n:expr) => {{
        let lock = &$lock;
        $rt.block_on($wrap(async move {
            let t = Instant::now();
            for _ in 0..$n {
                let mut g = lock.lock().await;
                *g += 1;
                black_box(&mut *g);
            }
            t.elapsed()
        }))
    }};
}

/// Two tasks, `n / 2` lock+unlock each, yielding while holding every 8th time (so the other
/// task finds the lock taken); timed around both.
macro_rules! contended {
    ($rt:expr, $lock:expr, $spawn:expr, $n:expr) => {{
        let lock = $lock.clone();
        $rt.block_on(async move {
            let t = Instant::now();
            let tasks: Vec<_> = (0..2)
                .map(|_| {
                    let lock = lock.clone();
                    $spawn(async move {
                        for i in 0..$n / 2 {
                            let mut g = lock.lock().await;
                            *g += 1;
                            if i % 8 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("task");
            }
            t.elapsed()
        })
    }};
}

fn same<F>(f: F) -> F {
    f
}

/// `n` lock+unlock of our mutex in the calling task, timed.
async fn uncontended_in(lock: &instrumented_locks::tokio::Mutex<u64>, n: u64) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        let mut g = lock.lock().await;
        *g += 1;
        black_box(&mut *g);
    }
    t.elapsed()
}

fn bench(c: &mut Criterion) {
    let rt = current_thread();
    let mut g = c.benchmark_group("tokio_mutex_uncontended");
    let peer = tokio::sync::Mutex::new(0u64);
    let ours = Arc::new(instrumented_locks::tokio::Mutex::new(0u64));
    g.bench_function("tokio", |b| {
        b.iter_custom(|n| uncontended!(rt, peer, same, n))
    });
    g.bench_function("validated", |b| {
        b.iter_custom(|n| uncontended!(rt, ours, instrument, n))
    });
    g.bench_function("validated_plain_spawn", |b| {
        b.iter_custom(|n| {
            let ours = ours.clone();
            rt.block_on(async move {
                tokio::spawn(async move { uncontended_in(&ours, n).await })
                    .await
                    .expect("task")
            })
        })
    });
    g.bench_function("validated_outside_task", |b| {
        b.iter_custom(|n| uncontended!(rt, ours, same, n))
    });
    g.bench_function("validated_off", |b| {
        instrumented_locks::set_enabled(false);
        b.iter_custom(|n| uncontended!(rt, ours, instrument, n));
        instrumented_locks::set_enabled(true);
    });
    g.finish();

    let rt = two_workers();
    let mut g = c.benchmark_group("tokio_mutex_contended_2_tasks");
    let peer = Arc::new(tokio::sync::Mutex::new(0u64));
    let ours = Arc::new(instrumented_locks::tokio::Mutex::new(0u64));
    g.bench_function("tokio", |b| {
        b.iter_custom(|n| contended!(rt, peer, tokio::spawn, n.max(2)))
    });
    g.bench_function("validated", |b| {
        b.iter_custom(|n| contended!(rt, ours, instrumented_locks::task::spawn, n.max(2)))
    });
    g.bench_function("validated_plain_spawn", |b| {
        b.iter_custom(|n| contended!(rt, ours, tokio::spawn, n.max(2)))
    });
    g.finish();
}

const ROUNDS: usize = 15;
const OPS: u64 = 20_000;

/// One cell of the rounds table: runs `OPS` operations, returns the time.
type Cell<'a> = (&'static str, Box<dyn Fn(u64) -> Duration + 'a>);

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The interleaved-rounds table (see the module docs).
fn rounds_table() {
    let rt1 = current_thread();
    let rt2 = two_workers();
    let peer = tokio::sync::Mutex::new(0u64);
    let ours = Arc::new(instrumented_locks::tokio::Mutex::new(0u64));
    let peer_c = Arc::new(tokio::sync::Mutex::new(0u64));
    let ours_c = Arc::new(instrumented_locks::tokio::Mutex::new(0u64));
    let cells: Vec<Cell<'_>> = vec![
        (
            "uncontended tokio",
            Box::new(|n| uncontended!(rt1, peer, same, n)),
        ),
        (
            "uncontended validated",
            Box::new(|n| uncontended!(rt1, ours, instrument, n)),
        ),
        (
            "uncontended validated_plain_spawn",
            Box::new(|n| {
                let ours = ours.clone();
                rt1.block_on(async move {
                    tokio::spawn(async move { uncontended_in(&ours, n).await })
                        .await
                        .expect("task")
                })
            }),
        ),
        (
            "uncontended validated_outside_task",
            Box::new(|n| uncontended!(rt1, ours, same, n)),
        ),
        (
            "uncontended validated_off",
            Box::new(|n| {
                instrumented_locks::set_enabled(false);
                let t = uncontended!(rt1, ours, instrument, n);
                instrumented_locks::set_enabled(true);
                t
            }),
        ),
        (
            "contended tokio",
            Box::new(|n| contended!(rt2, peer_c, tokio::spawn, n)),
        ),
        (
            "contended validated",
            Box::new(|n| contended!(rt2, ours_c, instrumented_locks::task::spawn, n)),
        ),
        (
            "contended validated_plain_spawn",
            Box::new(|n| contended!(rt2, ours_c, tokio::spawn, n)),
        ),
    ];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); cells.len()];
    for round in 0..ROUNDS {
        for k in 0..cells.len() {
            let i = (k + round) % cells.len();
            let t = (cells[i].1)(OPS);
            ns[i].push(t.as_nanos() as f64 / OPS as f64);
        }
    }
    println!("rounds table: {ROUNDS} rounds x {OPS} ops per cell; medians over rounds");
    println!("{:<36} {:>9} {:>12}", "cell", "ns/op", "x tokio");
    for i in 0..cells.len() {
        // The peer of a cell is the first cell of its group ("uncontended tokio", ...).
        let peer = if i < 5 { 0 } else { 5 };
        let mut ratios: Vec<f64> = (0..ROUNDS).map(|r| ns[i][r] / ns[peer][r]).collect();
        let mut cell = ns[i].clone();
        println!(
            "{:<36} {:>9.1} {:>12.2}",
            cells[i].0,
            median(&mut cell),
            median(&mut ratios)
        );
    }
}

fn main() {
    rounds_table();
    benches();
    Criterion::default().configure_from_args().final_summary();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = bench
}
