//! `Domain::synchronize` latency with nothing to wait for.
//!
//! Setup per scenario: a fresh domain, 16 threads that each protect and release once in
//! it (so each owns a registered record of 4 slots) and then block on a `Barrier`
//! (parked in the kernel, not running), optionally plus one thread that spins on a flag
//! (pinned to CPU 0 while the benchmark thread is pinned to the last CPU, so it is running
//! elsewhere whenever the OS lets it; it is registered too but holds no guard). The benchmark
//! thread then calls `synchronize(addr)` on an address nobody protects, so every call is
//! fence (or membarrier) + generation flip + scan of 16–17 records and the empty overflow
//! list, and never waits.
//!
//! Two measurements per scenario:
//! * percentiles: at least 20 000 individual calls and at least 1 s of them (so that the
//!   samples span many scheduler slices), each timed with its own pair of `Instant`s,
//!   sorted; p50/p90/p99 printed (the `Instant` pair itself is measured and printed
//!   too). With a spinner, the calls are also split by whether the spinner made progress
//!   around the call (it was running, so the membarrier had to IPI its CPU) or not (the OS
//!   had descheduled it: on a busy machine the spinner shares its CPU);
//! * criterion's mean/median over batched calls (no per-call clock read).
//!
//! Run: `cargo bench -p hazptr --bench synchronize`. Under `cargo test --benches` (no
//! `--bench` argument) the percentile loop takes 200 samples and criterion runs each
//! routine once, so the whole binary finishes in well under a second.

use std::hint::black_box;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::Criterion;
use crossbeam_utils::CachePadded;
use hazptr::{Domain, FenceMode};

/// Registered, idle threads per scenario.
const IDLE_THREADS: usize = 16;

struct Scenario {
    name: &'static str,
    mode: FenceMode,
    spinner: bool,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        name: "symmetric/16_idle",
        mode: FenceMode::Symmetric,
        spinner: false,
    },
    Scenario {
        name: "symmetric/16_idle+1_spinning",
        mode: FenceMode::Symmetric,
        spinner: true,
    },
    Scenario {
        name: "asymmetric/16_idle",
        mode: FenceMode::Asymmetric,
        spinner: false,
    },
    Scenario {
        name: "asymmetric/16_idle+1_spinning",
        mode: FenceMode::Asymmetric,
        spinner: true,
    },
];

/// "n=.. p50 .. p90 .. p99 .." of `samples` (sorts them).
fn summary(samples: &mut [Duration]) -> String {
    if samples.is_empty() {
        return "n=0".to_string();
    }
    samples.sort_unstable();
    let at = |q: f64| us(samples[((samples.len() - 1) as f64 * q).round() as usize]);
    format!(
        "n={:<7} p50 {:>7.3} us  p90 {:>7.3} us  p99 {:>7.3} us",
        samples.len(),
        at(0.50),
        at(0.90),
        at(0.99)
    )
}

/// Pin the calling thread to `cpu` (Linux; a no-op elsewhere or if it fails). The
/// benchmark thread and the spinner are pinned to different CPUs so that the spinner is
/// really running elsewhere while `synchronize` issues its membarrier.
fn pin_to(cpu: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `cpu_set_t` is plain data for which all-zero is a valid (empty) set;
    // `CPU_SET` writes inside it (it checks `cpu` against the set's size), and
    // `sched_setaffinity(0, ...)` only reads the set we pass, for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// How many calls to time: at least `min_samples`, and for at least `min_time` of wall
/// time (so that the samples span several scheduler slices of the busy machine).
struct Budget {
    min_samples: usize,
    min_time: Duration,
}

fn run_scenario(c: &mut Criterion, s: &Scenario, budget: &Budget, cpus: usize) {
    let domain = Domain::new(s.mode);
    // Distinct, 8-aligned addresses: what the idle threads protect once, and what the
    // benchmark synchronizes on (never protected by anyone).
    let registered_on = Box::new(1u64);
    let target = Box::new(2u64);
    let stop_spinning = AtomicBool::new(false);
    // The spinner's loop count, on its own cache line: the benchmark thread reads it
    // before and after each timed call to tell whether the spinner ran meanwhile.
    let progress = CachePadded::new(AtomicU64::new(0));
    // Idle threads + spinner (if any) + this thread meet twice: "registered" and "stop".
    let parties = IDLE_THREADS + usize::from(s.spinner) + 1;
    let registered = Barrier::new(parties);
    let stop = Barrier::new(IDLE_THREADS + 1);

    thread::scope(|scope| {
        for _ in 0..IDLE_THREADS {
            scope.spawn(|| {
                drop(domain.protect_addr(&*registered_on as *const u64));
                registered.wait();
                // Parked in the kernel until the scenario ends.
                stop.wait();
            });
        }
        if s.spinner {
            scope.spawn(|| {
                pin_to(0);
                drop(domain.protect_addr(&*registered_on as *const u64));
                registered.wait();
                let mut n = 0u64;
                // Relaxed: a stop flag, no data is handed over with it.
                while !stop_spinning.load(Relaxed) {
                    n += 1;
                    // Relaxed: a progress count, no data is handed over with it.
                    progress.store(n, Relaxed);
                    std::hint::spin_loop();
                }
            });
        }
        registered.wait();
        pin_to(cpus - 1);
        // Relaxed: see the spinner's store; we only wait until it runs.
        while s.spinner && progress.load(Relaxed) == 0 {
            std::hint::spin_loop();
        }

        let target_ptr: *const u64 = &*target;
        let sync = || {
            domain
                .synchronize(black_box(target_ptr))
                .expect("the benchmark thread protects nothing");
        };

        // Warm up (faults in the scan path, lets the spinner settle on its CPU).
        for _ in 0..budget.min_samples.min(1000) {
            sync();
        }
        // (duration, whether the spinner made progress around the call)
        let mut times: Vec<(Duration, bool)> = Vec::with_capacity(budget.min_samples);
        let start = Instant::now();
        while times.len() < budget.min_samples || start.elapsed() < budget.min_time {
            // Relaxed: only compared with the load after the call.
            let before = progress.load(Relaxed);
            let t0 = Instant::now();
            sync();
            let elapsed = t0.elapsed();
            // Relaxed: as above.
            let ran = progress.load(Relaxed) != before;
            times.push((elapsed, ran));
        }
        let stats = domain.stats();
        let mut all: Vec<Duration> = times.iter().map(|t| t.0).collect();
        println!(
            "synchronize/{:<30} all calls:            {}  (fence_mode {:?}, records {}, \
             waits {}, membarriers {})",
            s.name,
            summary(&mut all),
            domain.fence_mode(),
            stats.records,
            stats.synchronize_waits,
            stats.heavy_barriers,
        );
        if s.spinner {
            for (label, ran) in [("spinner ran", true), ("spinner idle", false)] {
                let mut part: Vec<Duration> =
                    times.iter().filter(|t| t.1 == ran).map(|t| t.0).collect();
                println!(
                    "synchronize/{:<30} calls {label:<13}:  {}  ({:.1}% of calls)",
                    s.name,
                    summary(&mut part),
                    100.0 * part.len() as f64 / times.len() as f64
                );
            }
        }

        c.bench_function(&format!("synchronize/{}", s.name), |b| b.iter(sync));

        // Relaxed: see the spinner's load.
        stop_spinning.store(true, Relaxed);
        stop.wait();
    });
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let budget = if bench_mode {
        Budget {
            min_samples: 20_000,
            min_time: Duration::from_secs(1),
        }
    } else {
        Budget {
            min_samples: 200,
            min_time: Duration::ZERO,
        }
    };
    let samples = budget.min_samples;

    // Cost of the timing itself: an `Instant` pair around nothing.
    let mut clock = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t0 = Instant::now();
        clock.push(black_box(t0).elapsed());
    }
    println!(
        "clock overhead (Instant::now + elapsed): {}",
        summary(&mut clock)
    );

    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    for s in &SCENARIOS {
        run_scenario(&mut c, s, &budget, cpus);
    }
    c.final_summary();
}
