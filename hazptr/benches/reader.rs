//! Reader acquire+release cost, ns/op, all variants side by side in one run.
//!
//! Every row does one complete read-side critical section on a heap `u64` published in an
//! atomic pointer: acquire (protect / pin / enter), hand the protected pointer to
//! `black_box` as one plain `*mut u64`/`*const u64` (the "use": the same 8-byte value in
//! every row, so no row pays for spilling a wider `Option` to the stack), release. One thread, nothing else touching the pointer.
//! Rows:
//!
//! * `atomicptr_load`: a bare `AtomicPtr::load(Acquire)`, the floor.
//! * `hazptr_protect/{symmetric,asymmetric}`: `Domain::protect(&src)` + drop of the guard.
//! * `hazptr_protect_addr/{symmetric,asymmetric}`: `Domain::protect_addr(addr)` + drop.
//! * `hazptr_protect/two_domains_alternating`: as `hazptr_protect/asymmetric`, in two
//!   Asymmetric domains in turn (a thread reading through its own domain and a library's).
//! * `haphazard`: one reused `HazardPointer`, `protect_ptr` + `reset_protection`.
//! * `crossbeam_epoch`: `epoch::pin()` + `Atomic::load` + drop of the guard.
//! * `seize`: `Collector::enter()` + `Guard::protect` + drop of the guard.
//!
//! Each row is a closure that runs `n` critical sections in a loop (the body inlined, one
//! indirect call per batch). Two measurements of the same closures:
//!
//! 1. criterion (`iter_custom`), one row after the other;
//! 2. an interleaved table printed at the end: `ROUNDS` rounds, each running every row
//!    for `BATCH` iterations in turn, then per row the median over rounds, and the
//!    median over rounds of the per-round ratio to haphazard. On a busy machine the
//!    interleaving keeps a slow phase from landing on one row only.
//!
//! Run: `cargo bench -p hazptr --bench reader`. Under `cargo test --benches` (no `--bench`
//! argument) criterion runs each row once and the interleaved table does one short round.

use std::hint::black_box;
use std::ptr;
use std::sync::atomic::AtomicPtr;
use std::sync::atomic::Ordering::Acquire;
use std::time::{Duration, Instant};

use criterion::Criterion;
use hazptr::{Domain, FenceMode};

/// A benchmark row: runs `n` complete critical sections.
type Row<'a> = (&'static str, Box<dyn FnMut(u64) + 'a>);

/// What the rows read and the domains/collectors they read through.
struct Env {
    obj: *mut u64,
    src: AtomicPtr<u64>,
    symmetric: Domain,
    asymmetric: Domain,
    /// A second Asymmetric domain, for the row that alternates between two domains.
    asymmetric2: Domain,
    epoch_atomic: crossbeam_epoch::Atomic<u64>,
    collector: seize::Collector,
}

impl Env {
    fn new() -> Env {
        let obj = Box::into_raw(Box::new(42u64));
        Env {
            obj,
            src: AtomicPtr::new(obj),
            symmetric: Domain::new(FenceMode::Symmetric),
            asymmetric: Domain::new(FenceMode::Asymmetric),
            asymmetric2: Domain::new(FenceMode::Asymmetric),
            epoch_atomic: crossbeam_epoch::Atomic::new(42u64),
            collector: seize::Collector::new(),
        }
    }

    fn rows(&self) -> Vec<Row<'_>> {
        let src = &self.src;
        let obj = self.obj as *const u64;
        let mut rows: Vec<Row<'_>> = Vec::new();

        rows.push((
            "atomicptr_load",
            Box::new(move |n| {
                for _ in 0..n {
                    // Acquire, like every protect below; a plain `mov` on x86.
                    black_box(black_box(src).load(Acquire));
                }
            }),
        ));

        for (name, domain) in [
            ("hazptr_protect/symmetric", &self.symmetric),
            ("hazptr_protect/asymmetric", &self.asymmetric),
        ] {
            rows.push((
                name,
                Box::new(move |n| {
                    for _ in 0..n {
                        let guard = domain.protect(black_box(src));
                        black_box(guard.as_ref().map_or(ptr::null_mut(), |g| g.as_ptr()));
                        drop(guard);
                    }
                }),
            ));
        }

        for (name, domain) in [
            ("hazptr_protect_addr/symmetric", &self.symmetric),
            ("hazptr_protect_addr/asymmetric", &self.asymmetric),
        ] {
            rows.push((
                name,
                Box::new(move |n| {
                    for _ in 0..n {
                        let guard = domain.protect_addr(black_box(obj));
                        black_box(guard.as_ptr());
                        drop(guard);
                    }
                }),
            ));
        }

        // A thread that reads through two domains in turn (its own, and a library's inside
        // the same loop): one critical section per operation, in the two domains alternately.
        let (a, b) = (&self.asymmetric, &self.asymmetric2);
        rows.push((
            "hazptr_protect/two_domains_alternating",
            Box::new(move |n| {
                for i in 0..n {
                    let domain = if i % 2 == 0 { a } else { b };
                    let guard = domain.protect(black_box(src));
                    black_box(guard.as_ref().map_or(ptr::null_mut(), |g| g.as_ptr()));
                    drop(guard);
                }
            }),
        ));

        let mut hp = haphazard::HazardPointer::new();
        rows.push((
            "haphazard",
            Box::new(move |n| {
                for _ in 0..n {
                    let p = hp.protect_ptr(black_box(src));
                    black_box(p.map_or(ptr::null_mut(), |(p, _)| p.as_ptr()));
                    hp.reset_protection();
                }
            }),
        ));

        let atomic = &self.epoch_atomic;
        rows.push((
            "crossbeam_epoch",
            Box::new(move |n| {
                for _ in 0..n {
                    let guard = crossbeam_epoch::pin();
                    // Acquire, as in every other row.
                    black_box(black_box(atomic).load(Acquire, &guard).as_raw());
                    drop(guard);
                }
            }),
        ));

        let collector = &self.collector;
        rows.push((
            "seize",
            Box::new(move |n| {
                use seize::Guard as _;
                for _ in 0..n {
                    let guard = collector.enter();
                    // Acquire, as in every other row.
                    black_box(guard.protect(black_box(src), Acquire));
                    drop(guard);
                }
            }),
        ));

        rows
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: `obj` came from `Box::into_raw` in `new`; every row and guard is gone
        // (`&mut self`), so no reader can still hold it, and it is freed only here.
        drop(unsafe { Box::from_raw(self.obj) });
        let atomic = std::mem::take(&mut self.epoch_atomic);
        // SAFETY: no guard is alive and no other thread ever saw the atomic.
        drop(unsafe { atomic.into_owned() });
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The interleaved table: per round, every row in turn for `batch` iterations.
fn interleaved(rows: &mut [Row<'_>], rounds: usize, batch: u64) {
    let mut ns: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); rows.len()];
    for _ in 0..rounds {
        for (i, (_, run)) in rows.iter_mut().enumerate() {
            let t0 = Instant::now();
            run(batch);
            ns[i].push(t0.elapsed().as_secs_f64() * 1e9 / batch as f64);
        }
    }
    let base = rows
        .iter()
        .position(|(name, _)| *name == "haphazard")
        .expect("haphazard row");
    println!("\ninterleaved: {rounds} rounds x {batch} iterations per row; medians over rounds");
    println!("{:<32} {:>8} {:>14}", "row", "ns/op", "x haphazard");
    for (i, (name, _)) in rows.iter().enumerate() {
        let mut ratios: Vec<f64> = ns[i].iter().zip(&ns[base]).map(|(a, b)| a / b).collect();
        let mut own = ns[i].clone();
        println!(
            "{name:<32} {:>8.2} {:>14.2}",
            median(&mut own),
            median(&mut ratios)
        );
    }
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let env = Env::new();
    // Which mode the asymmetric domain actually got (it falls back to Symmetric where
    // membarrier(PRIVATE_EXPEDITED) cannot be registered).
    println!(
        "hazptr: Domain::new(Asymmetric).fence_mode() = {:?}",
        env.asymmetric.fence_mode()
    );
    let mut rows = env.rows();

    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
        .configure_from_args();
    {
        let mut group = c.benchmark_group("reader");
        for (name, run) in rows.iter_mut() {
            group.bench_function(*name, |b| {
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

    if bench_mode {
        interleaved(&mut rows, 21, 2_000_000);
    } else {
        interleaved(&mut rows, 1, 1_000);
    }
    drop(rows);
    drop(env);
}
