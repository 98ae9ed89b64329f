//! The comparison table and its JSON form for `qdisc-churn`.

use std::fmt::Write as _;

use crate::latency::fmt_us;
use crate::qdisc::{Config, RunResult};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_owned(), |x| format!("{x:.digits$}"))
}

/// The per-mode comparison as an aligned text table.
pub fn table(cfg: &Config, rounds: u32, results: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "qdisc-churn: {} device(s) x {} replaces x {} rounds per mode, {} tx queues ({} keys per tree), {} traffic threads",
        cfg.devices,
        cfg.replaces,
        rounds,
        cfg.queues,
        cfg.queues + 1,
        cfg.readers
    );
    let header = [
        "mode",
        "wall s",
        "replaces/s",
        "unreg p50 us",
        "unreg p99 us",
        "unreg max us",
        "CAL IPIs/100 replaces",
        "membarriers",
        "lockdep reports",
        "lookups",
    ];
    let rows: Vec<[String; 10]> = results
        .iter()
        .map(|r| {
            [
                r.mode.name().to_owned(),
                format!("{:.3}", r.wall.as_secs_f64()),
                format!("{:.0}", r.replaces_per_s()),
                fmt_us(r.unregister.p50_us),
                fmt_us(r.unregister.p99_us),
                fmt_us(r.unregister.max_us),
                opt(r.ipis_per_100(), 0),
                if r.mode.name() == "rcu" {
                    "n/a".to_owned()
                } else {
                    r.heavy_barriers.to_string()
                },
                r.reports.to_string(),
                r.packets.to_string(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                let _ = write!(s, "{c:<w$}", w = widths[i]);
            } else {
                let _ = write!(s, "  {c:>w$}", w = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    };
    line(header.to_vec(), &mut out);
    let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    let _ = writeln!(out, "{}", "-".repeat(total));
    for r in &rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

fn json_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "null".to_owned(), |x| format!("{x:.3}"))
}

/// The same data as JSON.
pub fn json(cfg: &Config, rounds: u32, results: &[RunResult], notes: &[String]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"workload\": {{\"devices\": {}, \"replaces\": {}, \"rounds\": {}, \"queues\": {}, \"keys_per_tree\": {}, \"traffic_threads\": {}, \"inject_inversion\": {}}},\n  \"modes\": [",
        cfg.devices,
        cfg.replaces,
        rounds,
        cfg.queues,
        cfg.queues + 1,
        cfg.readers,
        cfg.inject_inversion
    );
    for (i, r) in results.iter().enumerate() {
        let membarriers = if r.mode.name() == "rcu" {
            "null".to_owned()
        } else {
            r.heavy_barriers.to_string()
        };
        let _ = write!(
            out,
            "{}\n    {{\"mode\": \"{}\", \"wall_s\": {:.4}, \"replaces\": {}, \"replaces_per_s\": {:.1}, \"unregisters\": {}, \"unregister_us\": {{\"avg\": {:.3}, \"p50\": {:.3}, \"p99\": {:.3}, \"max\": {:.3}}}, \"cal_ipis\": {}, \"cal_ipis_per_100_replaces\": {}, \"membarriers\": {}, \"hazptr_synchronize_waits\": {}, \"lockdep_reports\": {}, \"lookups\": {}}}",
            if i == 0 { "" } else { "," },
            r.mode.name(),
            r.wall.as_secs_f64(),
            r.replaces,
            r.replaces_per_s(),
            r.unregisters,
            r.unregister.avg_us,
            r.unregister.p50_us,
            r.unregister.p99_us,
            r.unregister.max_us,
            r.ipis.map_or_else(|| "null".to_owned(), |n| n.to_string()),
            json_opt(r.ipis_per_100()),
            membarriers,
            r.synchronize_waits,
            r.reports,
            r.packets,
        );
    }
    out.push_str("\n  ],\n  \"notes\": [");
    for (i, n) in notes.iter().enumerate() {
        let _ = write!(
            out,
            "{}\"{}\"",
            if i == 0 { "" } else { ", " },
            n.replace('\\', "\\\\").replace('"', "\\\"")
        );
    }
    out.push_str("]\n}\n");
    out
}
