//! `demo`: the qdisc-like churn workload that motivates hazard pointers for lockdep's dynamic
//! keys, and the benchmarks that compare the ways to wait for key lookups.
//!
//! - `demo qdisc-churn`: repeated `tc qdisc replace dev X root mq` in userspace; with no
//!   `--wait`, compares every available wait mode back to back and prints one table.
//! - `demo scale`: synchronize latency (the rcuscale analogue).
//! - `demo refscale`: reader-side cost per protected section.
//!
//! Nothing is written to disk except the files named by `--json`/`--svg`, and those only
//! at the end of a run.

mod interrupts;
mod latency;
mod modes;
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
    /// Background traffic threads [default: one per core].
    #[arg(long, short = 'r', value_parser = clap::value_parser!(u32).range(0..=4096))]
    readers: Option<u32>,
    /// Rounds: each runs every mode once (rotating the order); results add up per mode.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// How key unregistration waits; omit to compare every available mode.
    #[arg(long, value_enum)]
    wait: Option<WaitMode>,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also draw the unregister latency distributions as SVG to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Make the traffic take two queue locks in opposite orders once (lockdep reports it).
    #[arg(long)]
    inject_inversion: bool,
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

/// Writes `text` to `path`, or explains why not (exit code 1).
pub fn write_output(path: &std::path::Path, text: &str) -> i32 {
    match std::fs::write(path, text) {
        Ok(()) => {
            eprintln!("wrote {}", path.display());
            0
        }
        Err(e) => {
            eprintln!("demo: cannot write {}: {e}", path.display());
            1
        }
    }
}

/// Whether `path`'s directory exists, so an output file can be written at the end of a
/// run (checked up front so a long run does not end in "cannot write"; nothing is created).
fn output_dir_exists(path: &std::path::Path) -> bool {
    path.parent()
        .is_none_or(|dir| dir.as_os_str().is_empty() || dir.is_dir())
}

fn churn(args: ChurnArgs) -> i32 {
    for path in args.json.iter().chain(args.svg.iter()) {
        if !output_dir_exists(path) {
            eprintln!(
                "demo: cannot write {}: its directory does not exist",
                path.display()
            );
            return 2;
        }
    }
    if args.inject_inversion && args.queues < 2 {
        eprintln!("demo: --inject-inversion needs at least 2 queues (--queues)");
        return 2;
    }
    let readers = args.readers.map_or_else(interrupts::cores, |r| r as usize);
    if args.inject_inversion && readers == 0 {
        eprintln!("demo: --inject-inversion needs at least one traffic thread (--readers)");
        return 2;
    }
    if readers > 8 * interrupts::cores() {
        eprintln!(
            "demo: note: {readers} traffic threads on {} CPUs: each replace waits for \
             readers that are descheduled mid-lookup, so expect the run to take much longer",
            interrupts::cores()
        );
    }
    let cfg = qdisc::Config {
        queues: args.queues as usize,
        replaces: args.replaces as usize,
        devices: args.devices as usize,
        readers,
        inject_inversion: args.inject_inversion,
        progress: progress::enabled(),
    };
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
    let mut results: Vec<qdisc::RunResult> = Vec::new();
    for round in 0..args.rounds as usize {
        for k in 0..modes.len() {
            let mode = modes[(k + round) % modes.len()];
            let mut run_cfg = cfg.clone();
            // Inject once per process, in the first measured run.
            run_cfg.inject_inversion = cfg.inject_inversion && round == 0 && k == 0;
            let r = qdisc::run(&run_cfg, mode);
            match results.iter_mut().find(|x| x.mode == mode) {
                Some(acc) => acc.merge(r),
                None => results.push(r),
            }
        }
    }
    results.sort_by_key(|r| modes.iter().position(|&m| m == r.mode));
    lockdep::set_key_table_sync(lockdep::KeyTableSync::Hazptr);
    print!("{}", report::table(&cfg, args.rounds, &results));
    if interrupts::function_call_ipis().is_none() {
        notes.push("CAL row of /proc/interrupts not readable: IPIs n/a".to_owned());
    }
    notes.push(
        "membarriers = heavy barriers of lockdep's hazptr domain (Symmetric: 0 by design); n/a for rcu (liburcu does not count its membarrier calls)"
            .to_owned(),
    );
    for n in &notes {
        println!("note: {n}");
    }
    let mut code = 0;
    if let Some(path) = &args.json {
        code |= write_output(path, &report::json(&cfg, args.rounds, &results, &notes));
    }
    if let Some(path) = &args.svg {
        code |= write_output(path, &svg::latency_svg(&results));
    }
    let reports: u64 = results.iter().map(|r| r.reports).sum();
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
        ] {
            assert!(super::Cli::try_parse_from(args).is_err(), "{args:?}");
        }
        assert!(
            super::Cli::try_parse_from(["demo", "qdisc-churn", "--wait", "hazptr-direct"]).is_ok()
        );
    }
}
