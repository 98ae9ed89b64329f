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
//!
//! A second table has the parked-reader cells (see `parked.rs`): one reader holds one
//! address for a long time while other writers wait on other addresses, at the hazptr
//! level and at the lockdep dynamic-key level, with liburcu side by side.
//!
//! With `--rounds N` every cell runs N times (cells interleaved, so a slow phase of the
//! machine hits all rows) and the table shows the median over rounds of each figure.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

use crate::interrupts;
use crate::latency::{fmt_us, Histogram};
use crate::parked;
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
    /// Runs of every cell; the tables show medians over rounds.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Which tables to run.
    #[arg(long, value_enum, default_value_t = Tables::All)]
    only: Tables,
    /// Restrict the grid to these reader counts (comma-separated) [default: 0,1,4,cores].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(0..=4096))]
    nreaders: Vec<u64>,
    /// Restrict the grid to these synchronizer counts (comma-separated) [default: 1,16].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=4096))]
    nw: Vec<u64>,
    /// Parked-reader cells: how long the parked reader holds its address each time, in ms.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    parked_hold_ms: u64,
    /// Parked-reader cells: writers on other addresses.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    parked_writers: u64,
}

/// The tables `demo scale` can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Tables {
    /// The nreaders x nw grid.
    Grid,
    /// The parked-reader cells.
    Parked,
    /// Both.
    All,
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

/// The median of `values` (the lower middle for an even count); 0 for none.
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[(values.len() - 1) / 2]
}

/// One grid row's figures, per round.
#[derive(Default)]
struct GridRow {
    avg: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    max: Vec<f64>,
    calls_per_s: Vec<f64>,
    cal_per_100: Vec<f64>,
    barriers_per_op: Vec<f64>,
    sections_per_s: Vec<f64>,
}

impl GridRow {
    fn add(&mut self, c: &Cell) {
        let s = c.hist.summary();
        let secs = c.window.as_secs_f64();
        self.avg.push(s.avg_us);
        self.p50.push(s.p50_us);
        self.p99.push(s.p99_us);
        self.max.push(s.max_us);
        self.calls_per_s.push(c.sync_calls as f64 / secs);
        if let Some(n) = c.ipis {
            self.cal_per_100
                .push(n as f64 * 100.0 / c.sync_calls.max(1) as f64);
        }
        self.barriers_per_op
            .push(c.heavy_barriers as f64 / c.sync_calls.max(1) as f64);
        self.sections_per_s.push(c.sections as f64 / secs);
    }
}

fn fmt_rate(r: f64) -> String {
    rate(r.round() as u64, Duration::from_secs(1))
}

/// Runs the grid and prints its table.
fn run_grid(args: &Args) {
    let cores = interrupts::cores();
    let mut nreaders: Vec<usize> = if args.nreaders.is_empty() {
        vec![0, 1, 4, cores]
    } else {
        args.nreaders.iter().map(|&n| n as usize).collect()
    };
    nreaders.sort_unstable();
    nreaders.dedup();
    let nws: Vec<usize> = if args.nw.is_empty() {
        vec![1, 16]
    } else {
        args.nw.iter().map(|&n| n as usize).collect()
    };
    let mut kinds = vec![Kind::Shared, Kind::Direct];
    if rcu::AVAILABLE {
        kinds.push(Kind::Rcu);
    }
    let mut cells: Vec<(usize, usize, Kind)> = Vec::new();
    for &nr in &nreaders {
        for &nw in &nws {
            for &kind in &kinds {
                cells.push((nr, nw, kind));
            }
            if nw == 16 {
                cells.push((nr, nw, Kind::SharedAsym));
            }
        }
    }
    let mut rows: Vec<GridRow> = cells.iter().map(|_| GridRow::default()).collect();
    for round in 0..args.rounds as usize {
        // Rotate the order so that no cell always runs first after a slow one.
        for k in 0..cells.len() {
            let i = (k + round) % cells.len();
            let (nr, nw, kind) = cells[i];
            rows[i].add(&run_cell(kind, nr, nw, args));
        }
    }
    println!(
        "scale: {} ms per cell, readers hold {} us, {} objects, {} CPUs, medians over {} round(s)",
        args.duration_ms, args.hold_us, args.objects, cores, args.rounds
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
    for (&(nr, nw, kind), row) in cells.iter().zip(rows) {
        let barriers = if kind == Kind::SharedAsym {
            format!("{:.2}", median(row.barriers_per_op))
        } else {
            "-".to_owned()
        };
        let cal = if row.cal_per_100.is_empty() {
            "n/a".to_owned()
        } else {
            format!("{:.1}", median(row.cal_per_100))
        };
        println!(
            "{:>8} {:>3}  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>10}",
            nr,
            nw,
            kind.name(),
            fmt_us(median(row.avg)),
            fmt_us(median(row.p50)),
            fmt_us(median(row.p99)),
            fmt_us(median(row.max)),
            fmt_rate(median(row.calls_per_s)),
            cal,
            barriers,
            if nr == 0 {
                "-".to_owned()
            } else {
                fmt_rate(median(row.sections_per_s))
            },
        );
    }
    if !rcu::AVAILABLE {
        println!("note: {}", crate::modes::rcu_unavailable_note());
    }
    println!("note: barriers/op = heavy barriers (membarrier) per synchronize, Asymmetric domain only; calls/s and sections/s are summed over threads");
}

/// One parked-reader row's figures, per round.
#[derive(Default)]
struct ParkedRow {
    others_p50: Vec<f64>,
    others_p99: Vec<f64>,
    others_max: Vec<f64>,
    others_calls: Vec<f64>,
    others_over_hold: Vec<f64>,
    parked_p50: Vec<f64>,
    parked_calls: Vec<f64>,
    mean_batch: Vec<f64>,
    released_early: Vec<f64>,
    handoffs: Vec<f64>,
    false_positives: Vec<f64>,
    barriers_per_op: Vec<f64>,
}

/// Runs the parked-reader cells and prints their table.
fn run_parked(args: &Args) {
    let cfg = parked::Config {
        window: Duration::from_millis(args.duration_ms.max(10 * args.parked_hold_ms)),
        hold: Duration::from_millis(args.parked_hold_ms),
        nw: args.parked_writers as usize,
        short_hold: Duration::from_micros(args.hold_us),
    };
    let kinds = parked::Kind::available();
    let mut rows: Vec<ParkedRow> = kinds.iter().map(|_| ParkedRow::default()).collect();
    for round in 0..args.rounds as usize {
        for k in 0..kinds.len() {
            let i = (k + round) % kinds.len();
            let c = parked::run_cell(kinds[i], &cfg);
            let (o, p) = (c.others.summary(), c.parked.summary());
            let row = &mut rows[i];
            row.others_p50.push(o.p50_us);
            row.others_p99.push(o.p99_us);
            row.others_max.push(o.max_us);
            row.others_calls.push(c.others.count() as f64);
            row.others_over_hold.push(c.others_over_hold as f64);
            row.parked_p50.push(p.p50_us);
            row.parked_calls.push(c.parked.count() as f64);
            if let Some(s) = c.stats {
                row.mean_batch
                    .push(s.batch_waiters as f64 / s.shared_batches.max(1) as f64);
                row.released_early.push(s.released_early as f64);
                row.handoffs.push(s.handoffs as f64);
                row.false_positives.push(s.bloom_false_positives as f64);
                row.barriers_per_op
                    .push(s.heavy_barriers as f64 / s.synchronize_calls.max(1) as f64);
            }
        }
    }
    println!(
        "parked reader: one address held {} ms at a time for a {} ms window; {} writers on {} other addresses (short readers hold {} us); medians over {} round(s)",
        args.parked_hold_ms,
        cfg.window.as_millis(),
        cfg.nw,
        cfg.nw,
        args.hold_us,
        args.rounds
    );
    println!(
        "{:<20} {:>11} {:>11} {:>11} {:>8} {:>6} {:>11} {:>7} {:>10} {:>9} {:>8} {:>8} {:>11}",
        "wait",
        "others p50",
        "others p99",
        "others max",
        "calls",
        ">=hold",
        "parked p50",
        "calls",
        "mean batch",
        "released",
        "handoffs",
        "bloom fp",
        "barriers/op"
    );
    println!("{}", "-".repeat(146));
    for (kind, row) in kinds.iter().zip(rows) {
        let opt = |v: Vec<f64>, f: fn(f64) -> String| {
            if v.is_empty() {
                "-".to_owned()
            } else {
                f(median(v))
            }
        };
        println!(
            "{:<20} {:>11} {:>11} {:>11} {:>8} {:>6} {:>11} {:>7} {:>10} {:>9} {:>8} {:>8} {:>11}",
            kind.name(),
            fmt_us(median(row.others_p50)),
            fmt_us(median(row.others_p99)),
            fmt_us(median(row.others_max)),
            median(row.others_calls),
            median(row.others_over_hold),
            fmt_us(median(row.parked_p50)),
            median(row.parked_calls),
            opt(row.mean_batch, |m| format!("{m:.2}")),
            opt(row.released_early, |m| format!("{m:.0}")),
            opt(row.handoffs, |m| format!("{m:.0}")),
            opt(row.false_positives, |m| format!("{m:.0}")),
            if *kind == parked::Kind::SharedAsym {
                opt(row.barriers_per_op, |m| format!("{m:.2}"))
            } else {
                "-".to_owned()
            },
        );
    }
    if !rcu::AVAILABLE {
        println!("note: {}", crate::modes::rcu_unavailable_note());
    }
    println!("note: times in us; others = writers on addresses the parked reader does not hold; >=hold = their calls that took at least the hold time; parked p50 = the writer on the parked address; lockdep rows time one unregister + register of a key; released = waiters released while a batch-mate was still blocked");
}

/// Runs the selected tables; returns the exit code.
pub fn run(args: &Args) -> i32 {
    if args.only != Tables::Parked {
        run_grid(args);
    }
    if args.only != Tables::Grid {
        if args.only == Tables::All {
            println!();
        }
        run_parked(args);
    }
    0
}
