//! `demo`: the qdisc-like churn workload that motivates hazard pointers for lockdep's dynamic
//! keys, and the benchmarks that compare the ways to wait for key lookups.
//!
//! - `demo qdisc-churn`: repeated `tc qdisc replace dev X root mq` in userspace; with no
//!   `--wait`, compares every available wait mode back to back and prints one table.
//! - `demo scale`: synchronize latency (the rcuscale analogue).
//! - `demo refscale`: reader-side cost per protected section.
//!
//! Nothing is written to disk except the files named by `--json`/`--svg`: they are opened
//! (and checked for room) before the run and written at its end.

mod interrupts;
mod latency;
mod modes;
mod output;
mod parked;
mod progress;
mod qdisc;
mod rcu;
mod refscale;
mod report;
mod scale;
mod svg;
mod table;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::modes::WaitMode;

/// Userspace lockdep + hazptr demos and benchmarks.
#[derive(Parser, Debug)]
#[command(name = "demo", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Repeated qdisc replaces (dynamic lockdep keys registered and unregistered) under
    /// background traffic; compares how key unregistration waits.
    QdiscChurn(ChurnArgs),
    /// Synchronize latency for nreaders x concurrent synchronizers (rcuscale analogue).
    Scale(scale::Args),
    /// Reader-side ns per protected section (refscale analogue).
    Refscale(refscale::Args),
}

#[derive(clap::Args, Debug)]
struct ChurnArgs {
    /// Transmit queues per device (child qdiscs, each with its own lock and key).
    #[arg(long, short = 'q', default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=4096))]
    queues: u32,
    /// Replaces per device.
    #[arg(long, short = 'n', default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    replaces: u32,
    /// Devices replaced in parallel, one thread each.
    #[arg(long, short = 'd', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    devices: u32,
    /// Background traffic threads [default: CPUs minus devices, at least 1, so that every
    /// thread has a CPU and a replace does not also measure waiting for one].
    #[arg(long, short = 'r', value_parser = clap::value_parser!(u32).range(0..=4096))]
    readers: Option<u32>,
    /// Rounds: each runs every mode once (rotating the order); the table shows the median
    /// over rounds with the rounds' min–max.
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// How key unregistration waits; omit to compare every available mode.
    #[arg(long, value_enum)]
    wait: Option<WaitMode>,
    /// Also write the results as JSON to this file (opened before the run).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also draw the unregister latency distributions as SVG to this file (opened before
    /// the run; must differ from --json's).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Make the traffic take two queue locks in opposite orders once (lockdep reports it).
    #[arg(long)]
    inject_inversion: bool,
    /// Pin every replace and traffic thread to a CPU of its own (refused if there are more
    /// threads than CPUs). Unpinned, the scheduler sometimes runs a traffic thread on the
    /// replacer's CPU, and such a round measures unregisters with no concurrent reader.
    #[arg(long)]
    pin: bool,
    /// Also collect lockdep's per-class contention statistics over the measured rounds and
    /// print them after the results (the kernel's /proc/lock_stat: acquisitions,
    /// contentions, wait and hold times, top contended sites).
    #[arg(long)]
    lock_stat: bool,
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::QdiscChurn(args) => churn(args),
        Command::Scale(args) => scale::run(&args),
        Command::Refscale(args) => refscale::run(&args),
    };
    std::process::exit(code);
}

/// The default number of traffic threads: one per CPU left over by the replacers.
fn default_readers(cpus: usize, devices: usize) -> usize {
    cpus.saturating_sub(devices).max(1)
}

/// Bytes to reserve for the JSON (per mode and round about 1 KB) and the SVG (at most ~400
/// points per curve) before the run.
fn output_sizes(modes: usize, rounds: u32) -> (u64, u64) {
    let json = 4096 + 1536 * modes as u64 * u64::from(rounds);
    let svg = 4096 + 8192 * modes as u64;
    (json, svg)
}

fn churn(args: ChurnArgs) -> i32 {
    if args.inject_inversion && args.queues < 2 {
        eprintln!("demo: --inject-inversion needs at least 2 queues (--queues)");
        return 2;
    }
    let cpus = interrupts::cores();
    let readers = args.readers.map_or_else(
        || default_readers(cpus, args.devices as usize),
        |r| r as usize,
    );
    if args.inject_inversion && readers == 0 {
        eprintln!("demo: --inject-inversion needs at least one traffic thread (--readers)");
        return 2;
    }
    let mut notes = Vec::new();
    let modes: Vec<WaitMode> = match args.wait {
        Some(m) if !m.available() => {
            eprintln!("demo: {}", modes::rcu_unavailable_note());
            return 2;
        }
        Some(m) => vec![m],
        None => {
            if !WaitMode::Rcu.available() {
                notes.push(modes::rcu_unavailable_note().to_owned());
            }
            WaitMode::ALL
                .into_iter()
                .filter(|m| m.available())
                .collect()
        }
    };
    // Outputs first: a bad target fails now, not after the run.
    let (json_bytes, svg_bytes) = output_sizes(modes.len(), args.rounds);
    let requests: Vec<(&'static str, &std::path::Path, u64)> = [
        ("--json", args.json.as_deref(), json_bytes),
        ("--svg", args.svg.as_deref(), svg_bytes),
    ]
    .into_iter()
    .filter_map(|(flag, p, n)| p.map(|p| (flag, p, n)))
    .collect();
    let mut outputs = match output::open_all(&requests) {
        Ok(o) => o.into_iter(),
        Err(e) => {
            eprintln!("demo: {e}");
            return 2;
        }
    };
    let (json_out, svg_out) = (
        args.json.as_ref().and_then(|_| outputs.next()),
        args.svg.as_ref().and_then(|_| outputs.next()),
    );
    if args.pin && readers + args.devices as usize > cpus {
        eprintln!(
            "demo: --pin needs a CPU per thread: {readers} traffic + {} replace thread(s) on \
             {cpus} CPUs",
            args.devices
        );
        return 2;
    }
    if args.pin {
        notes.push("threads pinned: each replace and traffic thread on a CPU of its own".into());
    }
    if readers + args.devices as usize > cpus {
        notes.push(format!(
            "{readers} traffic + {} replace thread(s) on {cpus} CPUs: replaces also wait for a \
             CPU (in \"wait for traffic\"), and descheduled readers stretch unregister tails",
            args.devices
        ));
    }
    let cfg = qdisc::Config {
        queues: args.queues as usize,
        replaces: args.replaces as usize,
        devices: args.devices as usize,
        readers,
        inject_inversion: args.inject_inversion,
        pin: args.pin,
        progress: progress::enabled(),
    };
    lockdep::set_policy(lockdep::Policy::Callback(Arc::new(
        |r: &lockdep::Report| {
            // Relaxed: a counter read after the run's threads are joined.
            qdisc::REPORTS.fetch_add(1, Ordering::Relaxed);
            println!("lockdep report (delivered at run time):\n{r}");
        },
    )));
    // Warm-up, not measured: thread and lockdep start-up costs stay out of the first mode.
    qdisc::run(
        &qdisc::Config {
            replaces: 5,
            inject_inversion: false,
            progress: false,
            ..cfg.clone()
        },
        WaitMode::Hazptr,
    );
    if args.lock_stat {
        lockdep::reset_lock_stat();
        lockdep::set_lock_stat(true);
    }
    let mut results: Vec<report::ModeRounds> = modes
        .iter()
        .map(|&mode| report::ModeRounds {
            mode,
            rounds: Vec::new(),
        })
        .collect();
    for round in 0..args.rounds as usize {
        for k in 0..modes.len() {
            let i = (k + round) % modes.len();
            let mut run_cfg = cfg.clone();
            // Inject once per process, in the first measured run.
            run_cfg.inject_inversion = cfg.inject_inversion && round == 0 && k == 0;
            results[i].rounds.push(qdisc::run(&run_cfg, modes[i]));
        }
    }
    lockdep::set_key_table_sync(lockdep::KeyTableSync::Hazptr);
    if interrupts::function_call_ipis().is_none() {
        notes.push("CAL row of /proc/interrupts not readable: IPIs n/a".to_owned());
    }
    let setup = report::Setup {
        cfg: &cfg,
        rounds: args.rounds,
        cpus,
    };
    print!("{}", report::text(&setup, &results, &notes));
    if args.lock_stat {
        lockdep::set_lock_stat(false);
        print!("\n{}", lockdep::lock_stat());
    }
    let mut code = 0;
    let written = [
        json_out.map(|o| o.write(&report::json(&setup, &results, &notes))),
        svg_out.map(|o| o.write(&svg::latency_svg(&results))),
    ];
    for e in written.into_iter().flatten().filter_map(Result::err) {
        eprintln!("demo: {e}");
        code |= 1;
    }
    let reports: u64 = results.iter().map(report::ModeRounds::reports).sum();
    if args.inject_inversion {
        if reports == 0 {
            eprintln!("demo: the injected inversion was not reported");
            code |= 1;
        }
    } else if reports != 0 {
        eprintln!("demo: lockdep reported {reports} problem(s); 0 expected");
        code |= 1;
    }
    code
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    #[test]
    fn cli_is_consistent() {
        super::Cli::command().debug_assert();
    }

    #[test]
    fn bad_flags_are_errors() {
        for args in [
            &["demo", "qdisc-churn", "--wait", "nope"][..],
            &["demo", "qdisc-churn", "--queues", "0"],
            &["demo", "qdisc-churn", "--replaces", "-3"],
            &["demo", "scale", "--duration-ms", "1"],
            &["demo", "frobnicate"],
            &["demo", "qdisc-churn", "--rounds", "0"],
        ] {
            assert!(super::Cli::try_parse_from(args).is_err(), "{args:?}");
        }
        assert!(
            super::Cli::try_parse_from(["demo", "qdisc-churn", "--wait", "hazptr-direct"]).is_ok()
        );
    }

    #[test]
    fn default_traffic_leaves_a_cpu_per_replacer() {
        assert_eq!(super::default_readers(2, 1), 1);
        assert_eq!(super::default_readers(16, 4), 12);
        assert_eq!(super::default_readers(1, 1), 1, "always some traffic");
        assert_eq!(super::default_readers(2, 8), 1);
    }
}
