//! Every torture configuration, briefly (the runner `scripts/torture.sh` runs them longer).

use std::time::Duration;

use integration_tests::torture::{run, Config};

fn check(name: &str) {
    let config = Config::named(name).expect("known configuration");
    let summary = run(&config, Duration::from_millis(700));
    eprintln!("{summary}");
    assert!(summary.passed(), "{summary}");
    assert!(summary.updates > 0);
    if config.readers > 0 {
        assert!(summary.reads > 0, "{summary}");
    }
    if config.slow_path && summary.reads > 0 {
        assert!(summary.slow_path > 0, "{summary}");
    }
    if config.lockdep {
        assert!(summary.keys_cycled > 0, "{summary}");
    }
}

#[test]
fn readers0() {
    check("READERS0");
}

#[test]
fn readers4() {
    check("READERS4");
}

#[test]
fn slowpath() {
    check("SLOWPATH");
}

#[test]
fn asymmetric() {
    check("ASYMMETRIC");
}

#[test]
fn lockdep_dynamic_keys() {
    check("LOCKDEP");
}

#[test]
fn sweep_2_to_64() {
    for n in [2, 8, 16, 64] {
        check(&format!("SWEEP{n}"));
    }
}

#[test]
fn unknown_configurations_are_refused() {
    assert_eq!(Config::named("CPU128"), None);
    assert_eq!(Config::named("SWEEP1"), None);
    assert_eq!(Config::named("SWEEPx"), None);
    assert_eq!(Config::all().len(), 9);
}
