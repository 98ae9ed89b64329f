//! Dynamic-key latency and memory (not criterion: it needs per-operation percentiles and RSS).
//!
//! 1. register + unregister of one key, timed one by one, with idle reader threads (threads
//!    that have used hazard pointers but are not inside a lookup): p50 / p99.
//! 2. the same while two reader threads look keys up in a loop.
//! 3. RSS: baseline; 1M keys registered at once, then all dropped; then 1M cycles of
//!    create key, lock under a long-lived lock (new class, new dependency), drop.
//! 4. Key churn next to validated traffic: the cycle of 3 (register, lock under a long-lived
//!    lock, unregister) alone, next to a thread that spins (the control: what any busy
//!    neighbour costs here), and next to a thread doing validated lock pairs in a loop (what
//!    false sharing between the two would slow down further): interleaved rounds, medians of
//!    the per-round ratios.

use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use lockdep::{DynamicKey, LockMap, Mode};

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn percentiles(mut ns: Vec<u64>) -> (u64, u64, u64) {
    ns.sort_unstable();
    let at = |p: f64| ns[((ns.len() as f64 - 1.0) * p) as usize];
    (at(0.5), at(0.99), at(0.999))
}

/// Per-operation latency percentiles, from blocks of 10 operations (a virtual machine's clock
/// can be coarser than one operation).
fn register_unregister(samples: usize) -> (u64, u64, u64) {
    const BLOCK: usize = 10;
    let mut ns = Vec::with_capacity(samples / BLOCK);
    for _ in 0..samples / BLOCK {
        let t = Instant::now();
        for _ in 0..BLOCK {
            let k = DynamicKey::new("k");
            drop(k);
        }
        ns.push(t.elapsed().as_nanos() as u64 / BLOCK as u64);
    }
    percentiles(ns)
}

/// ns per churn cycle: a new key, its lock taken under `outer`, the key dropped.
fn churn(outer: &LockMap, n: usize) -> f64 {
    let site = Location::caller();
    let t = Instant::now();
    for _ in 0..n {
        let k = DynamicKey::new("churn");
        let m = LockMap::with_dynamic_key("churn", &k);
        lockdep::acquire(outer, 0, Mode::Exclusive, false, None, site);
        lockdep::acquire(&m, 0, Mode::Exclusive, false, None, site);
        lockdep::release(&m, site);
        lockdep::release(outer, site);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// What the neighbour thread of a churn round does.
#[derive(Clone, Copy, PartialEq)]
enum Neighbour {
    /// Nothing: no neighbour thread.
    None,
    /// Spins on a local counter: the control (what any busy thread costs on a machine whose
    /// CPUs share a core or a host).
    Spin,
    /// Validated lock pairs on two long-lived locks, in a loop.
    Pairs,
}

/// Churn cycles of `n` next to `neighbour`, ns per cycle.
fn churn_round(outer: &LockMap, n: usize, neighbour: Neighbour) -> f64 {
    if neighbour == Neighbour::None {
        return churn(outer, n);
    }
    let stop = AtomicBool::new(false);
    let started = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            static A: LockMap = LockMap::new("traffic A");
            static B: LockMap = LockMap::new("traffic B");
            let site = Location::caller();
            let mut x = 0u64;
            started.wait();
            // Relaxed: a stop flag.
            while !stop.load(Ordering::Relaxed) {
                if neighbour == Neighbour::Spin {
                    x = std::hint::black_box(x + 1);
                    continue;
                }
                lockdep::acquire(&A, 0, Mode::Exclusive, false, None, site);
                lockdep::acquire(&B, 0, Mode::Exclusive, false, None, site);
                lockdep::release(&B, site);
                lockdep::release(&A, site);
            }
        });
        started.wait();
        let t = churn(outer, n);
        // Relaxed: a stop flag.
        stop.store(true, Ordering::Relaxed);
        t
    })
}

/// Churn alone, next to a spinning thread, and next to a thread doing validated pairs, in
/// interleaved rounds: ns per cycle (medians over `rounds`), then the medians of the per-round
/// ratios pairs/alone and pairs/spin (the share of the slowdown that is the validator's).
fn churn_next_to_traffic(rounds: usize, n: usize) -> ([f64; 3], f64, f64) {
    let outer = LockMap::new("churn outer");
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let modes = [Neighbour::None, Neighbour::Spin, Neighbour::Pairs];
    let mut ns: [Vec<f64>; 3] = Default::default();
    let (mut vs_alone, mut vs_spin) = (Vec::new(), Vec::new());
    let _ = churn(&outer, n / 10); // warm-up
    for round in 0..rounds {
        let mut t = [0.0; 3];
        for k in 0..3 {
            let m = (k + round) % 3;
            t[m] = churn_round(&outer, n, modes[m]);
            ns[m].push(t[m]);
        }
        vs_alone.push(t[2] / t[0]);
        vs_spin.push(t[2] / t[1]);
    }
    let [a, b, c] = &mut ns;
    (
        [median(a), median(b), median(c)],
        median(&mut vs_alone),
        median(&mut vs_spin),
    )
}

fn main() {
    // Criterion passes flags like --bench; ignore them.
    let quick = std::env::args().any(|a| a == "--quick");
    let samples = if quick { 20_000 } else { 200_000 };

    // Idle readers: threads that looked a key up once, then wait.
    let stable = Arc::new(DynamicKey::new("stable"));
    let park = Arc::new(Barrier::new(3));
    let ready = Arc::new(Barrier::new(3));
    let idle: Vec<_> = (0..2)
        .map(|_| {
            let (stable, park, ready) = (stable.clone(), park.clone(), ready.clone());
            std::thread::spawn(move || {
                assert!(stable.is_registered());
                ready.wait();
                park.wait();
            })
        })
        .collect();
    ready.wait();
    let _ = register_unregister(samples / 10); // warm-up
    let (p50, p99, p999) = register_unregister(samples);
    println!(
        "key register+unregister, 2 idle readers: p50 {p50} ns, p99 {p99} ns, p99.9 {p999} ns"
    );
    park.wait();
    for t in idle {
        t.join().unwrap();
    }

    // Busy readers.
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(Barrier::new(3));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let (stable, stop, running) = (stable.clone(), stop.clone(), running.clone());
            std::thread::spawn(move || {
                let mut n = u64::from(stable.is_registered());
                running.wait();
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    n += u64::from(stable.is_registered());
                }
                n
            })
        })
        .collect();
    running.wait();
    let (p50, p99, p999) = register_unregister(samples);
    // Relaxed: a stop flag.
    stop.store(true, Ordering::Relaxed);
    let lookups: u64 = busy.into_iter().map(|t| t.join().unwrap()).sum();
    println!(
        "key register+unregister, 2 busy readers ({lookups} lookups): p50 {p50} ns, p99 {p99} ns, p99.9 {p999} ns"
    );

    // Memory.
    let n = if quick { 100_000 } else { 1_000_000 };
    let base = rss_kib();
    let keys: Vec<DynamicKey> = (0..n).map(|_| DynamicKey::new("bulk")).collect();
    let peak = rss_kib();
    let t = Instant::now();
    drop(keys);
    let drop_ns = t.elapsed().as_nanos() as u64 / n as u64;
    let after = rss_kib();
    // SAFETY: malloc_trim only returns free heap memory to the OS.
    unsafe { libc::malloc_trim(0) };
    let trimmed = rss_kib();
    println!(
        "{n} keys live: RSS {base} KiB -> {peak} KiB ({} B/key); after drop ({drop_ns} ns/key): {after} KiB; after malloc_trim: {trimmed} KiB",
        (peak.saturating_sub(base)) * 1024 / n as u64
    );

    let outer = LockMap::new("outer");
    let site = Location::caller();
    let base2 = rss_kib();
    let t = Instant::now();
    for _ in 0..n {
        let k = DynamicKey::new("churn");
        let m = LockMap::with_dynamic_key("churn", &k);
        lockdep::acquire(&outer, 0, Mode::Exclusive, false, None, site);
        lockdep::acquire(&m, 0, Mode::Exclusive, false, None, site);
        lockdep::release(&m, site);
        lockdep::release(&outer, site);
    }
    let churn_ns = t.elapsed().as_nanos() as u64 / n as u64;
    // SAFETY: as above.
    unsafe { libc::malloc_trim(0) };
    let after2 = rss_kib();
    let s = lockdep::stats();
    println!(
        "{n} x (new key, lock under outer, drop): {churn_ns} ns/cycle; RSS {base2} KiB -> {after2} KiB; classes {}, dependencies {}, keys {}",
        s.classes, s.dependencies, s.keys
    );

    let (rounds, cycles) = if quick { (3, 2_000) } else { (9, 50_000) };
    let ([alone, spin, pairs], vs_alone, vs_spin) = churn_next_to_traffic(rounds, cycles);
    println!(
        "key churn (new key, lock under outer, drop), {rounds} rounds x {cycles}: alone {alone:.0}, next to a spinning thread {spin:.0}, next to a thread doing validated pairs {pairs:.0} ns/cycle; pairs/alone {vs_alone:.2}, pairs/spin {vs_spin:.2} (medians of per-round ratios)"
    );
}
