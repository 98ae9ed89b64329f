//! `hazptr-torture CONFIG... [--duration S]`: the hazptrtorture analogue. Prints one
//! summary line per configuration and exits 1 if any invariant was violated.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use integration_tests::torture::{run, Config};

#[derive(Parser)]
#[command(about = "Stress hazptr (and lockdep's dynamic keys) and check invariants")]
struct Args {
    /// Configurations: READERS0 READERS4 SLOWPATH ASYMMETRIC LOCKDEP `SWEEP<n>` (2..=256), or ALL.
    #[arg(required = true)]
    configs: Vec<String>,
    /// Seconds per configuration (greater than 0, at most 3600).
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    duration: f64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 3600.0) {
        eprintln!("hazptr-torture: --duration must be greater than 0 and at most 3600 seconds");
        return ExitCode::from(2);
    }
    let mut configs = Vec::new();
    for name in &args.configs {
        if name == "ALL" {
            configs.extend(Config::all());
        } else if let Some(c) = Config::named(name) {
            configs.push(c);
        } else {
            eprintln!(
                "hazptr-torture: unknown configuration {name:?}: expected READERS0, READERS4, \
                 SLOWPATH, ASYMMETRIC, LOCKDEP, SWEEP<n> with n in 2..=256, or ALL"
            );
            return ExitCode::from(2);
        }
    }
    let mut failed = 0;
    for config in &configs {
        let summary = run(config, Duration::from_secs_f64(args.duration));
        println!("{summary}");
        failed += usize::from(!summary.passed());
    }
    println!("{} passed, {} failed", configs.len() - failed, failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
