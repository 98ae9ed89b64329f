//! Hot-path benchmarks against plain parking_lot and tracing-mutex 0.3.3, in the same run: a
//! nested pair on a known chain, a nested pair of two instances of one class, two threads on
//! private pairs, a new dependency (with key churn), and a new dependency in front of a long
//! chain (results: `BENCHMARKS.md`).
//! "lockdep" is parking_lot plus the `acquire`/`release` calls a lock wrapper makes.

use std::hint::black_box;
use std::panic::Location;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use lockdep::{DynamicKey, LockMap, Mode};

/// A parking_lot mutex with a lock map, as instrumented-locks wraps it.
struct Tracked {
    map: LockMap,
    raw: parking_lot::Mutex<u64>,
}

impl Tracked {
    #[track_caller]
    fn new() -> Tracked {
        Tracked {
            map: LockMap::new("bench"),
            raw: parking_lot::Mutex::new(0),
        }
    }

    #[inline]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let site = Location::caller();
        lockdep::acquire(&self.map, 0, Mode::Exclusive, false, None, site);
        let g = self.raw.lock();
        let r = f();
        drop(black_box(g));
        lockdep::release(&self.map, site);
        r
    }
}

fn tracked_pair() -> (Tracked, Tracked) {
    (Tracked::new(), Tracked::new())
}

fn nested_pair(c: &mut Criterion) {
    let mut g = c.benchmark_group("nested_pair");
    let (a, b) = (parking_lot::Mutex::new(0u64), parking_lot::Mutex::new(0u64));
    g.bench_function("parking_lot", |bench| {
        bench.iter(|| {
            let ga = black_box(&a).lock();
            let gb = black_box(&b).lock();
            drop(black_box(gb));
            drop(black_box(ga));
        })
    });
    let (ta, tb) = tracked_pair();
    g.bench_function("lockdep", |bench| {
        bench.iter(|| black_box(&ta).with(|| black_box(&tb).with(|| ())))
    });
    let (xa, xb) = (
        tracing_mutex::parkinglot::tracing::Mutex::new(0u64),
        tracing_mutex::parkinglot::tracing::Mutex::new(0u64),
    );
    g.bench_function("tracing_mutex", |bench| {
        bench.iter(|| {
            let ga = black_box(&xa).lock();
            let gb = black_box(&xb).lock();
            drop(black_box(gb));
            drop(black_box(ga));
        })
    });
    g.finish();
}

/// A nested pair of two instances of one class (instance-order nesting): the chain cache's
/// marked hit plus the thread's cache of checked instance pairs.
fn nested_same_class(c: &mut Criterion) {
    let mut g = c.benchmark_group("nested_pair_same_class");
    let same: Vec<Tracked> = (0..2).map(|_| Tracked::new()).collect();
    g.bench_function("lockdep", |bench| {
        bench.iter(|| black_box(&same[0]).with(|| black_box(&same[1]).with(|| ())))
    });
    g.finish();
}

/// Two threads, each looping `iters` times over its own A -> B pair; wall time per iteration.
fn two_threads(iters: u64, body: impl Fn() -> Box<dyn FnMut() + Send> + Sync) -> Duration {
    let start = Arc::new(Barrier::new(3));
    std::thread::scope(|s| {
        for _ in 0..2 {
            let mut f = body();
            let start = start.clone();
            s.spawn(move || {
                start.wait();
                for _ in 0..iters {
                    f();
                }
            });
        }
        start.wait();
        let t = Instant::now();
        // The scope joins both threads before returning.
        t
    })
    .elapsed()
}

fn two_threads_private(c: &mut Criterion) {
    let mut g = c.benchmark_group("two_threads_private_pairs");
    g.bench_function("parking_lot", |bench| {
        bench.iter_custom(|iters| {
            two_threads(iters, || {
                let (a, b) = (parking_lot::Mutex::new(0u64), parking_lot::Mutex::new(0u64));
                Box::new(move || {
                    let ga = black_box(&a).lock();
                    let gb = black_box(&b).lock();
                    drop(black_box(gb));
                    drop(black_box(ga));
                })
            })
        })
    });
    g.bench_function("lockdep", |bench| {
        bench.iter_custom(|iters| {
            two_threads(iters, || {
                let (a, b) = tracked_pair();
                Box::new(move || black_box(&a).with(|| black_box(&b).with(|| ())))
            })
        })
    });
    g.bench_function("tracing_mutex", |bench| {
        bench.iter_custom(|iters| {
            two_threads(iters, || {
                let (a, b) = (
                    tracing_mutex::parkinglot::tracing::Mutex::new(0u64),
                    tracing_mutex::parkinglot::tracing::Mutex::new(0u64),
                );
                Box::new(move || {
                    let ga = black_box(&a).lock();
                    let gb = black_box(&b).lock();
                    drop(black_box(gb));
                    drop(black_box(ga));
                })
            })
        })
    });
    g.finish();
}

/// A new lock (new class) taken under a long-lived one, then destroyed: one new dependency,
/// one new chain, a class zap and a key unregister per iteration.
fn new_dependency(c: &mut Criterion) {
    let mut g = c.benchmark_group("new_dependency_with_key_churn");
    let outer = Tracked::new();
    g.bench_function("lockdep", |bench| {
        bench.iter(|| {
            let key = DynamicKey::new("churn");
            let m = LockMap::with_dynamic_key("churn", &key);
            let raw = parking_lot::Mutex::new(0u64);
            outer.with(|| {
                let site = Location::caller();
                lockdep::acquire(&m, 0, Mode::Exclusive, false, None, site);
                drop(black_box(raw.lock()));
                lockdep::release(&m, site);
            });
            drop(m);
            drop(key);
        })
    });
    let xo = tracing_mutex::parkinglot::tracing::Mutex::new(0u64);
    g.bench_function("tracing_mutex", |bench| {
        bench.iter(|| {
            let x = tracing_mutex::parkinglot::tracing::Mutex::new(0u64);
            let go = xo.lock();
            drop(black_box(x.lock()));
            drop(go);
            drop(x);
        })
    });
    g.finish();
}

/// A new dependency `X -> head` in front of a recorded chain of `N` classes: the cycle check
/// (BFS here, a Pearce–Kelly reorder in tracing-mutex) walks the whole chain: a new
/// dependency against the recorded order.
fn new_edge_against_long_chain(c: &mut Criterion) {
    const N: usize = 1000;
    let mut g = c.benchmark_group("new_edge_before_1000_chain");
    g.sample_size(20);
    lockdep::reset();
    let keys: Vec<DynamicKey> = (0..N).map(|_| DynamicKey::new("chain")).collect();
    let maps: Vec<LockMap> = keys
        .iter()
        .map(|k| LockMap::with_dynamic_key("chain", k))
        .collect();
    let site = Location::caller();
    for w in maps.windows(2) {
        lockdep::acquire(&w[0], 0, Mode::Exclusive, false, None, site);
        lockdep::acquire(&w[1], 0, Mode::Exclusive, false, None, site);
        lockdep::release(&w[1], site);
        lockdep::release(&w[0], site);
    }
    g.bench_function("lockdep", |bench| {
        bench.iter(|| {
            let key = DynamicKey::new("x");
            let x = LockMap::with_dynamic_key("x", &key);
            lockdep::acquire(&x, 0, Mode::Exclusive, false, None, site);
            lockdep::acquire(&maps[0], 0, Mode::Exclusive, false, None, site);
            lockdep::release(&maps[0], site);
            lockdep::release(&x, site);
            drop(x);
            drop(key);
        })
    });
    let chain: Vec<tracing_mutex::parkinglot::tracing::Mutex<u64>> = (0..N)
        .map(|_| tracing_mutex::parkinglot::tracing::Mutex::new(0))
        .collect();
    for w in chain.windows(2) {
        let a = w[0].lock();
        drop(w[1].lock());
        drop(a);
    }
    g.bench_function("tracing_mutex", |bench| {
        bench.iter(|| {
            let x = tracing_mutex::parkinglot::tracing::Mutex::new(0u64);
            let gx = x.lock();
            drop(chain[0].lock());
            drop(gx);
            drop(x);
        })
    });
    g.finish();
    drop(maps);
    drop(keys);
}

criterion_group!(
    benches,
    nested_pair,
    nested_same_class,
    two_threads_private,
    new_dependency,
    new_edge_against_long_chain
);
criterion_main!(benches);
