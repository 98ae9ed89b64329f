//! What `qdisc-churn` prints: the comparison table (each cell a median over rounds with the
//! rounds' min–max), the verdict, where a replace's time goes, the legend, and the same data
//! as JSON.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::latency::{fmt_us, Spread};
use crate::modes::WaitMode;
use crate::qdisc::{Config, ReplaceTimes, RunResult};
use crate::table::SHARDS;

/// Every round of one wait mode.
#[derive(Clone, Debug)]
pub struct ModeRounds {
    /// The wait mode.
    pub mode: WaitMode,
    /// One result per round, in round order.
    pub rounds: Vec<RunResult>,
}

impl ModeRounds {
    fn spread(&self, f: impl Fn(&RunResult) -> f64) -> Spread {
        Spread::of(self.rounds.iter().map(f)).expect("a mode has at least one round")
    }

    /// Unregister p50 over rounds, in µs.
    pub fn p50(&self) -> Spread {
        self.spread(|r| r.unregister.p50_us)
    }

    /// Unregister p99 over rounds, in µs.
    pub fn p99(&self) -> Spread {
        self.spread(|r| r.unregister.p99_us)
    }

    /// Function-call IPIs per 100 replaces over rounds; `None` if a round could not count.
    pub fn ipis(&self) -> Option<Spread> {
        let per_round: Option<Vec<f64>> = self.rounds.iter().map(|r| r.ipis_per_100()).collect();
        Spread::of(per_round?)
    }

    /// Unregisters that had to wait, all rounds; `None` where the mode cannot tell.
    pub fn waits(&self) -> Option<u64> {
        self.rounds.iter().map(|r| r.waits).sum()
    }

    /// Key unregistrations, all rounds.
    pub fn unregisters(&self) -> usize {
        self.rounds.iter().map(RunResult::unregisters).sum()
    }

    /// Lockdep reports, all rounds.
    pub fn reports(&self) -> u64 {
        self.rounds.iter().map(|r| r.reports).sum()
    }

    /// Membarrier calls of lockdep's hazptr domain, all rounds.
    pub fn heavy_barriers(&self) -> u64 {
        self.rounds.iter().map(|r| r.heavy_barriers).sum()
    }

    /// Traffic lookups per second over rounds, in millions.
    pub fn lookups_m_per_s(&self) -> Spread {
        self.spread(|r| r.lookups_per_s() / 1e6)
    }

    /// One step of the mean replace over rounds, in µs.
    fn replace_step(&self, step: impl Fn(&ReplaceTimes) -> u64) -> Spread {
        self.spread(|r| step(&r.mean_replace()) as f64 / 1e3)
    }

    /// Every round's unregister latencies together, sorted, in ns (for the SVG).
    pub fn all_samples_ns(&self) -> Vec<u64> {
        let mut all: Vec<u64> = self
            .rounds
            .iter()
            .flat_map(|r| r.samples_ns.iter().copied())
            .collect();
        all.sort_unstable();
        all
    }
}

/// The run's shape, as printed above the table.
pub struct Setup<'a> {
    /// The workload.
    pub cfg: &'a Config,
    /// Rounds per mode.
    pub rounds: u32,
    /// CPUs the process may run on.
    pub cpus: usize,
}

/// An aligned text table: first column left-aligned, the others right-aligned.
fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut s = String::new();
        for (i, c) in cells.enumerate() {
            let pad = " ".repeat(widths[i] - c.chars().count());
            if i == 0 {
                let _ = write!(s, "{c}{pad}");
            } else {
                let _ = write!(s, "  {pad}{c}");
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    };
    line(&mut header.iter().copied());
    for r in rows {
        line(&mut r.iter().map(String::as_str));
    }
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Everything printed for a finished run, `notes` last.
pub fn text(setup: &Setup<'_>, results: &[ModeRounds], notes: &[String]) -> String {
    let cfg = setup.cfg;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "qdisc-churn: {} x {} replaces per round, {} per mode (order rotates), {} tx queues \
         ({} keys per tree), {}, {}",
        plural(cfg.devices, "device", "devices"),
        cfg.replaces,
        plural(setup.rounds as usize, "round", "rounds"),
        cfg.queues,
        cfg.queues + 1,
        plural(cfg.readers, "traffic thread", "traffic threads"),
        plural(setup.cpus, "CPU", "CPUs"),
    );
    let _ = writeln!(
        out,
        "each cell: median over the rounds (min–max of the rounds); lower is better except lookups\n"
    );
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|m| {
            vec![
                m.mode.name().to_owned(),
                m.p50().display(fmt_us),
                m.p99().display(fmt_us),
                m.waits().map_or_else(
                    || "n/a".to_owned(),
                    |w| format!("{w} of {}", m.unregisters()),
                ),
                m.ipis()
                    .map_or_else(|| "n/a".to_owned(), |s| s.display(|x| format!("{x:.0}"))),
                m.lookups_m_per_s().display(|x| format!("{x:.2}")),
                m.reports().to_string(),
            ]
        })
        .collect();
    out.push_str(&aligned(
        &[
            "mode",
            "unregister p50 us",
            "unregister p99 us",
            "waited",
            "IPIs/100 replaces",
            "lookups M/s",
            "reports",
        ],
        &rows,
    ));
    let _ = writeln!(out, "\nverdict: {}\n", verdict(results));

    let _ = writeln!(
        out,
        "where a replace's time goes (mean us per replace, median over rounds; only the \
         unregister step differs by mode):"
    );
    let unregister_header = format!("unregister x{}", cfg.queues + 1);
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|m| {
            let total = m.replace_step(ReplaceTimes::total_ns);
            let unregister = m.replace_step(|t| t.unregister_ns);
            vec![
                m.mode.name().to_owned(),
                fmt_us(m.replace_step(|t| t.build_ns).median),
                fmt_us(m.replace_step(|t| t.traffic_wait_ns).median),
                fmt_us(m.replace_step(|t| t.destroy_locks_ns).median),
                fmt_us(unregister.median),
                total.display(fmt_us),
                format!("{:.0}%", 100.0 * unregister.median / total.median.max(1e-9)),
            ]
        })
        .collect();
    out.push_str(&aligned(
        &[
            "mode",
            "build tree",
            "wait for traffic",
            "destroy locks",
            &unregister_header,
            "total",
            "unregister share",
        ],
        &rows,
    ));

    let barriers: u64 = results
        .iter()
        .filter(|m| m.mode != WaitMode::Rcu)
        .map(ModeRounds::heavy_barriers)
        .sum();
    out.push_str(&legend(cfg, barriers));
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// What each column means, its unit, and which way is better; `barriers` is the number of
/// membarrier calls the hazptr modes issued.
fn legend(cfg: &Config, barriers: u64) -> String {
    format!(
        "\nlegend:
  unregister p50/p99  one key unregister, in us (per-round percentile); lower is better. It is
                      unlink + zap the key's lock classes (the same code in every mode, under
                      lockdep's graph lock, which the traffic also takes for each new tree's
                      classes) + the mode's wait for lookups in the key's bucket
  waited              unregisters, over all rounds, that found a lookup in progress and had to
                      wait for it (hazptr: the self-scan found the key's bucket protected; rwlock:
                      the shard's write lock was busy). A wait needs a lookup in that very bucket
                      (1 of {buckets}) or shard (1 of {SHARDS}) at that instant; the traffic looks up the
                      live tree's keys, so such waits are rare. rcu: n/a, synchronize_rcu always
                      waits a grace period for all readers and does not say if one held it up
  IPIs/100 replaces   function-call interrupts (CAL row of /proc/interrupts, all CPUs, whole
                      machine: other processes count too) per 100 replaces; lower is better
  lookups M/s         key lookups by the {readers} (the read side that unregisters
                      wait for), millions per second; load, not a score (higher: readers slowed less)
  reports             lockdep reports delivered; 0 expected (1 with --inject-inversion)
  replace steps       build = register {keys} keys and make their locks; wait for traffic = until no
                      traffic thread is on the old tree (includes waiting for a CPU when threads
                      outnumber CPUs); destroy locks; unregister = the old tree's {keys} keys
  membarriers         no column: the hazptr modes issued {barriers} (lockdep's hazptr domain is
                      Symmetric: plain fences, so 0 is by design); liburcu's show up as its IPIs
",
        buckets = lockdep::KEY_BUCKETS,
        readers = plural(cfg.readers, "traffic thread", "traffic threads"),
        keys = cfg.queues + 1,
    )
}

/// A percentage with two significant digits below 10% ("0.031%", "1.5%", "42%").
fn percent(p: f64) -> String {
    if p == 0.0 || p >= 10.0 {
        format!("{p:.0}%")
    } else {
        let digits = (1 - p.log10().floor() as i32).max(0) as usize;
        format!("{p:.digits$}%")
    }
}

fn ratio_text(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

/// Hazptr's unregister p50 against `peer`'s (called `name`): "17× lower than liburcu's (in
/// every round)", "1.3× higher than rwlock's (round ranges overlap: no clear ranking)", or
/// "within 10% of rwlock's".
fn compare(hazptr: &ModeRounds, peer: &ModeRounds, name: &str) -> String {
    let (h, p) = (hazptr.p50(), peer.p50());
    let (ratio, direction) = if p.median >= h.median {
        (p.median / h.median.max(1e-9), "lower")
    } else {
        (h.median / p.median.max(1e-9), "higher")
    };
    let every_round = h.entirely_below(&p) || p.entirely_below(&h);
    if ratio < 1.1 {
        return format!("within 10% of {name}'s");
    }
    let robust = if every_round {
        "in every round"
    } else {
        "round ranges overlap: no clear ranking"
    };
    format!("{} {direction} than {name}'s ({robust})", ratio_text(ratio))
}

/// The one-line conclusion, computed from the results: hazptr's unregister p50 against each
/// other mode's (and whether the ranking held in every round), and its IPIs against
/// liburcu's; says how to add liburcu when it is not compiled in.
pub fn verdict(results: &[ModeRounds]) -> String {
    let find = |m: WaitMode| results.iter().find(|r| r.mode == m);
    let mut parts = Vec::new();
    match find(WaitMode::Hazptr) {
        Some(h) if results.len() > 1 => {
            if let Some(rcu) = find(WaitMode::Rcu) {
                let mut s = compare(h, rcu, "liburcu");
                if let (Some(hi), Some(ri)) = (h.ipis(), rcu.ipis()) {
                    if ri.median > 0.0 {
                        let _ = write!(
                            s,
                            "; IPIs {} of liburcu's",
                            percent(100.0 * hi.median / ri.median)
                        );
                    } else {
                        s.push_str("; IPIs: liburcu's median is 0, no ratio");
                    }
                }
                parts.push(s);
            }
            for peer in [WaitMode::Rwlock, WaitMode::HazptrDirect] {
                if let Some(p) = find(peer) {
                    parts.push(compare(h, p, peer.name()));
                }
            }
        }
        _ => {
            let names: Vec<&str> = results.iter().map(|r| r.mode.name()).collect();
            parts.push(format!(
                "only {} ran: nothing to compare (omit --wait to compare every mode)",
                names.join(", ")
            ));
        }
    }
    let mut out = if find(WaitMode::Hazptr).is_some() && results.len() > 1 {
        format!("hazptr unregister p50 is {}.", parts.join("; "))
    } else {
        format!("{}.", parts.join("; "))
    };
    if !WaitMode::Rcu.available() {
        out.push_str(
            " liburcu is not compiled in: add --features rcu (needs liburcu-dev: \
             apt-get install -y liburcu-dev) to compare with synchronize_rcu.",
        );
    }
    out
}

fn spread_json(s: Spread) -> Value {
    json!({"median": s.median, "min": s.min, "max": s.max})
}

/// The same data as JSON: the workload, per mode the spreads shown in the table and every
/// round's raw numbers, the verdict and the notes.
pub fn json(setup: &Setup<'_>, results: &[ModeRounds], notes: &[String]) -> String {
    let cfg = setup.cfg;
    let modes: Vec<Value> = results
        .iter()
        .map(|m| {
            let per_round: Vec<Value> = m
                .rounds
                .iter()
                .map(|r| {
                    let t = r.mean_replace();
                    json!({
                        "wall_s": r.wall.as_secs_f64(),
                        "replaces": r.replaces,
                        "unregisters": r.unregisters(),
                        "unregister_us": {
                            "avg": r.unregister.avg_us,
                            "p50": r.unregister.p50_us,
                            "p99": r.unregister.p99_us,
                            "max": r.unregister.max_us,
                        },
                        "waits": r.waits,
                        "cal_ipis": r.ipis,
                        "hazptr_heavy_barriers": r.heavy_barriers,
                        "lockdep_reports": r.reports,
                        "lookups": r.lookups,
                        "replace_mean_us": {
                            "build": t.build_ns as f64 / 1e3,
                            "traffic_wait": t.traffic_wait_ns as f64 / 1e3,
                            "destroy_locks": t.destroy_locks_ns as f64 / 1e3,
                            "unregister": t.unregister_ns as f64 / 1e3,
                            "total": t.total_ns() as f64 / 1e3,
                        },
                    })
                })
                .collect();
            json!({
                "mode": m.mode.name(),
                "unregisters": m.unregisters(),
                "waits": m.waits(),
                "lockdep_reports": m.reports(),
                "unregister_p50_us": spread_json(m.p50()),
                "unregister_p99_us": spread_json(m.p99()),
                "cal_ipis_per_100_replaces": m.ipis().map(spread_json),
                "lookups_m_per_s": spread_json(m.lookups_m_per_s()),
                "replace_total_mean_us": spread_json(m.replace_step(ReplaceTimes::total_ns)),
                "replace_unregister_mean_us": spread_json(m.replace_step(|t| t.unregister_ns)),
                "rounds": per_round,
            })
        })
        .collect();
    let doc = json!({
        "workload": {
            "devices": cfg.devices,
            "replaces_per_round": cfg.replaces,
            "rounds": setup.rounds,
            "queues": cfg.queues,
            "keys_per_tree": cfg.queues + 1,
            "traffic_threads": cfg.readers,
            "cpus": setup.cpus,
            "inject_inversion": cfg.inject_inversion,
        },
        "modes": modes,
        "verdict": verdict(results),
        "notes": notes,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("JSON values always serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::latency::summarize;

    /// A round of 100 replaces whose 17 unregisters all took `p50_us`.
    fn round(p50_us: f64, ipis: u64) -> RunResult {
        let ns = (p50_us * 1e3) as u64;
        let mut samples = vec![ns; 17];
        RunResult {
            wall: Duration::from_millis(1),
            replaces: 100,
            unregister: summarize(&mut samples),
            samples_ns: samples,
            replace_sum: ReplaceTimes {
                build_ns: 100,
                traffic_wait_ns: 100,
                destroy_locks_ns: 10,
                unregister_ns: 17 * ns,
            },
            ipis: Some(ipis),
            heavy_barriers: 0,
            waits: Some(0),
            reports: 0,
            lookups: 1000,
        }
    }

    fn mode(mode: WaitMode, p50s: &[f64], ipis: u64) -> ModeRounds {
        ModeRounds {
            mode,
            rounds: p50s.iter().map(|&p| round(p, ipis)).collect(),
        }
    }

    #[test]
    fn verdict_is_computed_and_says_when_rounds_disagree() {
        let results = [
            mode(WaitMode::Hazptr, &[1.0, 1.1, 0.9], 10),
            mode(WaitMode::HazptrDirect, &[1.05, 0.95, 1.0], 10),
            mode(WaitMode::Rwlock, &[0.8, 1.5, 1.2], 10),
            mode(WaitMode::Rcu, &[29.0, 30.0, 31.0], 660),
        ];
        let v = verdict(&results);
        assert!(
            v.starts_with(
                "hazptr unregister p50 is 30× lower than liburcu's (in every round); \
                 IPIs 1.5% of liburcu's; 1.2× lower than rwlock's (round ranges overlap: no \
                 clear ranking); within 10% of hazptr-direct's."
            ),
            "{v}"
        );
        // Slower hazptr, and every round agrees.
        let results = [
            mode(WaitMode::Hazptr, &[3.0, 3.2], 1),
            mode(WaitMode::Rwlock, &[1.0, 1.1], 1),
        ];
        let v = verdict(&results);
        assert!(
            v.starts_with("hazptr unregister p50 is 3.0× higher than rwlock's (in every round)."),
            "{v}"
        );
        assert_eq!(
            v.contains("--features rcu"),
            !WaitMode::Rcu.available(),
            "says how to get liburcu exactly when it is missing: {v}"
        );
    }

    #[test]
    fn verdict_for_one_mode_says_there_is_nothing_to_compare() {
        let v = verdict(&[mode(WaitMode::Rwlock, &[1.0], 0)]);
        assert!(v.starts_with("only rwlock ran: nothing to compare"), "{v}");
    }

    #[test]
    fn percentages_keep_two_significant_digits() {
        assert_eq!(percent(1.5), "1.5%");
        assert_eq!(percent(0.0312), "0.031%");
        assert_eq!(percent(42.4), "42%");
        assert_eq!(percent(0.0), "0%");
    }
}
