//! `demo scale`: the rcuscale analogue. Synchronize latency for nreaders x nw concurrent
//! synchronizers, for hazptr's shared scan (`synchronize`), its direct path
//! (`synchronize_direct`) and, when built with `rcu`, liburcu's `synchronize_rcu`.
//!
//! Readers loop over `objects` addresses and protect one at a time for `hold_us` (a busy
//! wait), so synchronizers, which cycle over the very same addresses, really have to wait.
//! Each cell runs in a fresh private hazptr domain. An extra row per nreaders runs the shared
//! scan at nw = 16 in a `FenceMode::Asymmetric` domain and reports its heavy barriers
//! (`membarrier` calls) per synchronize. In the liburcu rows every thread, reader or
//! synchronizer, registers with liburcu before the window opens.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

use crate::interrupts;
use crate::latency::{fmt_us, Histogram};
use crate::rcu;

/// `demo scale` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Timed window per cell, in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    duration_ms: u64,
    /// How long a reader holds its protection, in microseconds (busy wait).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    hold_us: u64,
    /// Distinct addresses readers protect and synchronizers wait on.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=4096))]
    objects: u64,
}

/// The synchronize flavour of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Shared,
    Direct,
    SharedAsym,
    Rcu,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Shared => "hazptr shared",
            Kind::Direct => "hazptr direct",
            Kind::SharedAsym => "hazptr shared asym",
            Kind::Rcu => "urcu-memb",
        }
    }
}

struct Cell {
    kind: Kind,
    nreaders: usize,
    nw: usize,
    hist: Histogram,
    window: Duration,
    ipis: Option<u64>,
    heavy_barriers: u64,
    sync_calls: u64,
    sections: u64,
}

/// Busy-waits for `hold`.
fn spin_for(hold: Duration) {
    if hold.is_zero() {
        return;
    }
    let t = Instant::now();
    while t.elapsed() < hold {
        std::hint::spin_loop();
    }
}

fn run_cell(kind: Kind, nreaders: usize, nw: usize, args: &Args) -> Cell {
    let domain = Domain::new(if kind == Kind::SharedAsym {
        FenceMode::Asymmetric
    } else {
        FenceMode::Symmetric
    });
    let objects: Vec<u64> = vec![0; args.objects as usize];
    let hold = Duration::from_micros(args.hold_us);
    let go = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let sections = AtomicU64::new(0);
    let (mut hist, mut ipis, mut window) = (Histogram::default(), None, Duration::ZERO);
    let mut stats_before = domain.stats();
    std::thread::scope(|s| {
        for r in 0..nreaders {
            let (domain, objects, go, stop, sections) = (&domain, &objects, &go, &stop, &sections);
            s.spawn(move || {
                if kind == Kind::Rcu {
                    rcu::register_thread();
                }
                // Relaxed: start/stop flags with no data attached.
                while !go.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                let mut n = 0u64;
                let mut i = r;
                // Relaxed: as above.
                while !stop.load(Ordering::Relaxed) {
                    i = (i + 1) % objects.len();
                    if kind == Kind::Rcu {
                        let entered = rcu::read_lock();
                        spin_for(hold);
                        if entered {
                            rcu::read_unlock();
                        }
                    } else {
                        let g = domain.protect_addr(&objects[i] as *const u64);
                        spin_for(hold);
                        drop(g);
                    }
                    n += 1;
                }
                // Relaxed: read after the scope joins.
                sections.fetch_add(n, Ordering::Relaxed);
            });
        }
        let writers: Vec<_> = (0..nw)
            .map(|w| {
                let (domain, objects, go, stop) = (&domain, &objects, &go, &stop);
                s.spawn(move || {
                    let mut h = Histogram::default();
                    if kind == Kind::Rcu {
                        rcu::register_thread();
                    }
                    // Relaxed: start/stop flags with no data attached.
                    while !go.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                    let mut i = w;
                    // Relaxed: as above.
                    while !stop.load(Ordering::Relaxed) {
                        i = (i + 1) % objects.len();
                        let addr = &objects[i] as *const u64;
                        let t = Instant::now();
                        match kind {
                            Kind::Shared | Kind::SharedAsym => {
                                domain.synchronize(addr).expect("writer holds no guard")
                            }
                            Kind::Direct => domain
                                .synchronize_direct(addr)
                                .expect("writer holds no guard"),
                            Kind::Rcu => rcu::synchronize_rcu(),
                        }
                        h.record(t.elapsed().as_nanos() as u64);
                    }
                    h
                })
            })
            .collect();
        stats_before = domain.stats();
        let before = interrupts::function_call_ipis();
        let t = Instant::now();
        // Relaxed: flags only.
        go.store(true, Ordering::Relaxed);
        // The measurement window (a duration, not a synchronization device).
        std::thread::sleep(Duration::from_millis(args.duration_ms));
        // Relaxed: flags only.
        stop.store(true, Ordering::Relaxed);
        window = t.elapsed();
        ipis = before
            .zip(interrupts::function_call_ipis())
            .map(|(a, b)| b.saturating_sub(a));
        for w in writers {
            hist.merge(&w.join().expect("writer panicked"));
        }
    });
    let after = domain.stats();
    Cell {
        kind,
        nreaders,
        nw,
        window,
        ipis,
        heavy_barriers: after.heavy_barriers - stats_before.heavy_barriers,
        sync_calls: hist.count(),
        hist,
        // Relaxed: all threads joined.
        sections: sections.load(Ordering::Relaxed),
    }
}

fn rate(n: u64, window: Duration) -> String {
    let r = n as f64 / window.as_secs_f64();
    if r >= 1e6 {
        format!("{:.1}M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1}k", r / 1e3)
    } else {
        format!("{r:.0}")
    }
}

/// Runs every cell and prints the table; returns the exit code.
pub fn run(args: &Args) -> i32 {
    let cores = interrupts::cores();
    let mut nreaders = vec![0, 1, 4, cores];
    nreaders.sort_unstable();
    nreaders.dedup();
    let mut kinds = vec![Kind::Shared, Kind::Direct];
    if rcu::AVAILABLE {
        kinds.push(Kind::Rcu);
    }
    println!(
        "scale: {} ms per cell, readers hold {} us, {} objects, {} CPUs",
        args.duration_ms, args.hold_us, args.objects, cores
    );
    println!(
        "{:>8} {:>3}  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>10}",
        "nreaders",
        "nw",
        "wait",
        "avg us",
        "p50 us",
        "p99 us",
        "max us",
        "calls/s",
        "CAL/100",
        "barriers/op",
        "sections/s"
    );
    println!("{}", "-".repeat(123));
    for &nr in &nreaders {
        for nw in [1usize, 16] {
            let mut row_kinds = kinds.clone();
            if nw == 16 {
                row_kinds.push(Kind::SharedAsym);
            }
            for &kind in &row_kinds {
                let c = run_cell(kind, nr, nw, args);
                let s = c.hist.summary();
                let barriers = if c.kind == Kind::SharedAsym {
                    format!(
                        "{:.2}",
                        c.heavy_barriers as f64 / c.sync_calls.max(1) as f64
                    )
                } else {
                    "-".to_owned()
                };
                println!(
                    "{:>8} {:>3}  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>10}",
                    c.nreaders,
                    c.nw,
                    c.kind.name(),
                    fmt_us(s.avg_us),
                    fmt_us(s.p50_us),
                    fmt_us(s.p99_us),
                    fmt_us(s.max_us),
                    rate(c.sync_calls, c.window),
                    c.ipis.map_or_else(
                        || "n/a".to_owned(),
                        |n| format!("{:.1}", n as f64 * 100.0 / c.sync_calls.max(1) as f64)
                    ),
                    barriers,
                    if c.nreaders == 0 {
                        "-".to_owned()
                    } else {
                        rate(c.sections, c.window)
                    },
                );
            }
        }
    }
    if !rcu::AVAILABLE {
        println!("note: {}", crate::modes::rcu_unavailable_note());
    }
    println!("note: barriers/op = heavy barriers (membarrier) per synchronize, Asymmetric domain only; calls/s and sections/s are summed over threads");
    0
}
