//! The `demo` binary end to end: the comparison table (legend, spread, waits, verdict), the
//! injected inversion's report, the JSON and SVG files, output paths checked before the run,
//! and clear errors for bad flags.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn demo(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(args)
        .output()
        .expect("run demo")
}

const SMALL: &[&str] = &[
    "qdisc-churn",
    "--replaces",
    "5",
    "--queues",
    "4",
    "--rounds",
    "3",
];

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demo-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// The main table's rows (after its header line, up to the blank line).
fn main_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.starts_with("mode "))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

/// A pinned run (one replace thread and one traffic thread, which every CI machine has CPUs
/// for) runs and says so in its notes.
#[test]
fn a_pinned_run_says_it_is_pinned() {
    let args: Vec<&str> = SMALL
        .iter()
        .copied()
        .chain(["--pin", "--readers", "1"])
        .collect();
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).contains("threads pinned"), "{}", stdout(&out));
}

#[test]
fn compares_every_mode_in_one_table() {
    let out = demo(SMALL);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for mode in ["hazptr ", "hazptr-direct", "rwlock"] {
        assert!(
            main_rows(&text).iter().any(|l| l.starts_with(mode)),
            "{mode} row missing:\n{text}"
        );
    }
    if cfg!(feature = "rcu") {
        assert!(
            main_rows(&text).iter().any(|l| l.starts_with("rcu ")),
            "{text}"
        );
    } else {
        assert!(text.contains("rcu: unavailable"), "{text}");
    }
}

/// Every column of both tables is explained in the legend, which says which way is better;
/// no column is the always-zero membarrier count; the header says how cells are summarized.
#[test]
fn table_has_a_legend_for_every_column() {
    let out = demo(SMALL);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let header = text.lines().find(|l| l.starts_with("mode ")).unwrap();
    assert!(!header.contains("membarrier"), "{header}");
    assert!(
        !header.contains("CAL"),
        "unexplained abbreviation: {header}"
    );
    let legend: String = text
        .lines()
        .skip_while(|l| *l != "legend:")
        .collect::<Vec<_>>()
        .join("\n");
    for entry in [
        "unregister p50/p99",
        "waited",
        "IPIs/100 replaces",
        "lookups M/s",
        "reports",
        "replace steps",
        "membarriers",
    ] {
        assert!(
            legend.lines().any(|l| l.trim_start().starts_with(entry)),
            "legend lacks {entry}:\n{text}"
        );
    }
    assert!(legend.contains("lower is better"), "{legend}");
    assert!(
        legend.contains("by design"),
        "why membarriers are 0: {legend}"
    );
    assert!(
        text.contains("each cell: median over the rounds (min–max of the rounds)"),
        "{text}"
    );
}

/// Latency cells show the median with the rounds' range, e.g. `0.33 (0.32–0.34)`, and the
/// range holds the median.
#[test]
fn latency_cells_show_spread_over_rounds() {
    let out = demo(SMALL);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    for row in main_rows(&text) {
        // mode, p50 (min–max), p99 (min–max), ...
        let cells: Vec<&str> = row.split_whitespace().collect();
        for (median, range) in [(cells[1], cells[2]), (cells[3], cells[4])] {
            let median: f64 = median.parse().unwrap_or_else(|_| panic!("{row}"));
            let (lo, hi) = range
                .trim_matches(|c| c == '(' || c == ')')
                .split_once('–')
                .unwrap_or_else(|| panic!("no min–max in {row}"));
            let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
            assert!(lo <= median && median <= hi, "{row}");
        }
    }
}

/// The waited column counts unregisters out of all that ran (rounds x replaces x keys), and
/// is n/a only for liburcu, which cannot tell; the JSON carries the same numbers.
#[test]
fn waits_are_shown_out_of_all_unregisters() {
    let dir = scratch("waits");
    let json_path = dir.join("w.json");
    let mut args = SMALL.to_vec();
    args.extend(["--json", json_path.to_str().unwrap()]);
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let unregisters = 3 * 5 * (4 + 1);
    for row in main_rows(&text) {
        if row.starts_with("rcu ") {
            assert!(row.contains(" n/a "), "{row}");
        } else {
            assert!(row.contains(&format!(" of {unregisters} ")), "{row}");
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    for m in json["modes"].as_array().unwrap() {
        assert_eq!(m["unregisters"], unregisters, "{m}");
        let waits = &m["waits"];
        if m["mode"] == "rcu" {
            assert!(waits.is_null());
        } else {
            assert!(waits.as_u64().unwrap() <= unregisters, "{m}");
        }
        assert_eq!(m["rounds"].as_array().unwrap().len(), 3);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One verdict line, computed from the rows it compares; without liburcu it says how to get
/// it.
#[test]
fn verdict_compares_hazptr_with_the_others() {
    let out = demo(SMALL);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("verdict: "))
        .collect();
    assert_eq!(verdicts.len(), 1, "{text}");
    let v = verdicts[0];
    assert!(v.starts_with("verdict: hazptr unregister p50 is "), "{v}");
    assert!(v.contains("rwlock's"), "{v}");
    assert!(v.contains("hazptr-direct's"), "{v}");
    if cfg!(feature = "rcu") {
        assert!(v.contains("liburcu's") && v.contains("IPIs"), "{v}");
    } else {
        assert!(
            v.contains("--features rcu") && v.contains("liburcu-dev"),
            "{v}"
        );
    }
    let out = demo(&[SMALL, &["--wait", "rwlock"]].concat());
    let text = stdout(&out);
    assert!(
        text.contains("verdict: only rwlock ran: nothing to compare"),
        "{text}"
    );
}

/// By default the traffic leaves one CPU to the replacer, so a replace does not also
/// measure waiting for a CPU.
#[test]
fn default_traffic_does_not_oversubscribe_the_cpus() {
    let out = demo(SMALL);
    let text = stdout(&out);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let readers = cpus.saturating_sub(1).max(1);
    let title = text.lines().next().unwrap();
    let want = if readers == 1 {
        "1 traffic thread,".to_owned()
    } else {
        format!("{readers} traffic threads,")
    };
    assert!(title.contains(&want), "{title}");
    // An explicit oversubscription is allowed and noted.
    let out = demo(&[SMALL, &["--readers", &(cpus + 1).to_string()]].concat());
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).contains("replaces also wait for a CPU"));
}

/// The breakdown of a replace names each step, and only unregister differs by mode.
#[test]
fn replace_time_is_broken_down_by_step() {
    let out = demo(SMALL);
    let text = stdout(&out);
    let header = text
        .lines()
        .find(|l| l.starts_with("mode") && l.contains("build tree"))
        .unwrap_or_else(|| panic!("no breakdown:\n{text}"));
    for col in [
        "wait for traffic",
        "destroy locks",
        "unregister x5",
        "total",
        "unregister share",
    ] {
        assert!(header.contains(col), "{header}");
    }
    assert!(!text.contains("replaces/s"), "{text}");
}

#[test]
fn injected_inversion_is_reported() {
    let mut args = SMALL.to_vec();
    args.extend(["--wait", "hazptr", "--inject-inversion"]);
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(
        text.contains("possible circular locking dependency"),
        "{text}"
    );
    let row = main_rows(&text)
        .into_iter()
        .find(|l| l.starts_with("hazptr "))
        .unwrap();
    assert_eq!(row.split_whitespace().last(), Some("1"), "{row}");
}

#[test]
fn lock_stat_is_printed_only_when_asked() {
    let mut args = SMALL.to_vec();
    args.extend(["--wait", "hazptr"]);
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    assert!(!stdout(&out).contains("lock_stat version"));
    args.push("--lock-stat");
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let table = &text[text.find("lock_stat version").expect("the lock_stat table")..];
    assert!(
        table.contains("acquisitions") && table.contains("holdtime-max"),
        "{table}"
    );
    // At least one class was acquired during the measured rounds.
    let rows = table
        .lines()
        .skip(3)
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(rows >= 1, "{table}");
}

#[test]
fn json_and_svg_are_written_only_when_asked() {
    let dir = scratch("files");
    let json_path = dir.join("churn.json");
    let svg_path = dir.join("churn.svg");
    let mut args = SMALL.to_vec();
    args.extend([
        "--wait",
        "rwlock",
        "--json",
        json_path.to_str().unwrap(),
        "--svg",
        svg_path.to_str().unwrap(),
    ]);
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(json["modes"][0]["mode"], "rwlock");
    assert_eq!(json["modes"][0]["lockdep_reports"], 0);
    assert!(json["verdict"]
        .as_str()
        .unwrap()
        .starts_with("only rwlock ran"));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["churn.json", "churn.svg"],
        "only the files asked for"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The y labels of the written SVG (right-aligned texts left of the plot) are at least a
/// line of text apart.
#[test]
fn svg_y_labels_do_not_overlap() {
    let dir = scratch("svg");
    let svg_path = dir.join("lat.svg");
    let out = demo(&[SMALL, &["--svg", svg_path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{out:?}");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let mut ys: Vec<f64> = svg
        .split("<text ")
        .skip(1)
        .filter(|t| t.contains("text-anchor=\"end\""))
        .map(|t| {
            let start = t.find(" y=\"").unwrap() + 4;
            t[start..].split('"').next().unwrap().parse().unwrap()
        })
        .collect();
    assert!(ys.len() >= 3, "{svg}");
    ys.sort_by(f64::total_cmp);
    for pair in ys.windows(2) {
        assert!(pair[1] - pair[0] >= 14.0, "y labels overlap: {ys:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two outputs naming one file (also spelled differently) is an error, found before the
/// run: exit 2, no table, no file.
#[test]
fn outputs_naming_the_same_file_are_an_error() {
    let dir = scratch("same");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let a = dir.join("x.out");
    let b = dir.join("sub").join("..").join("x.out");
    for (json, svg) in [(&a, &a), (&a, &b)] {
        let out = demo(
            &[
                SMALL,
                &[
                    "--json",
                    json.to_str().unwrap(),
                    "--svg",
                    svg.to_str().unwrap(),
                ],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(stderr(&out).contains("name the same file"), "{out:?}");
        assert!(stdout(&out).is_empty(), "the run must not start: {out:?}");
        assert!(!a.exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs demo with `args` and returns its output, killing it (and failing) if it is still
/// running after a minute: a check that is meant to fail up front must not run the workload.
fn demo_bounded(args: &[&str]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run demo");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("demo {args:?} ran the workload instead of failing up front");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Unwritable targets (missing directory, a directory, a full device) fail before the run:
/// a run that would take minutes exits at once with exit 2 and a message naming the path.
#[test]
fn bad_output_targets_fail_before_the_run() {
    let dir = scratch("bad");
    let missing = dir.join("no-such-dir").join("x.json");
    let mut targets: Vec<(&str, &Path, &str)> = vec![
        ("--json", &missing, "No such file"),
        ("--svg", &dir, "Is a directory"),
    ];
    if Path::new("/dev/full").exists() {
        targets.push(("--svg", Path::new("/dev/full"), "No space left"));
    }
    for (flag, path, why) in targets {
        let out = demo_bounded(&[
            "qdisc-churn",
            "--replaces",
            "1000000",
            "--queues",
            "64",
            flag,
            path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = stderr(&out);
        assert!(
            err.contains(&path.display().to_string()) && err.contains(flag) && err.contains(why),
            "{err}"
        );
        assert!(stdout(&out).is_empty(), "the run must not start: {out:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_are_clear_errors() {
    let out = demo(&["qdisc-churn", "--wait", "spin"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("invalid value 'spin'"), "{err}");
    let out = demo(&["qdisc-churn", "--inject-inversion", "--queues", "1"]);
    assert_eq!(out.status.code(), Some(2));
    // More threads than CPUs cannot be pinned one per CPU.
    let out = demo(&["qdisc-churn", "--pin", "--readers", "4096"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--pin needs a CPU per thread"),
        "{out:?}"
    );
    if !cfg!(feature = "rcu") {
        let out = demo(&["qdisc-churn", "--wait", "rcu"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("unavailable"));
    }
}
