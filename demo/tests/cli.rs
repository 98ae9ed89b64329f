//! The `demo` binary end to end: the comparison table, the injected inversion's report, the
//! JSON file, and clear errors for bad flags.

use std::process::Command;

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
    "1",
];

#[test]
fn compares_every_mode_in_one_table() {
    let out = demo(SMALL);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    for mode in ["hazptr ", "hazptr-direct", "rwlock"] {
        assert!(
            text.lines().any(|l| l.starts_with(mode)),
            "{mode} row missing:\n{text}"
        );
    }
    assert!(text.contains("CAL IPIs/100 replaces"));
    if cfg!(feature = "rcu") {
        assert!(text.lines().any(|l| l.starts_with("rcu ")), "{text}");
    } else {
        assert!(text.contains("rcu: unavailable"), "{text}");
    }
}

#[test]
fn injected_inversion_is_reported() {
    let mut args = SMALL.to_vec();
    args.extend(["--wait", "hazptr", "--inject-inversion"]);
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("possible circular locking dependency"),
        "{text}"
    );
    let row = text.lines().find(|l| l.starts_with("hazptr ")).unwrap();
    let reports: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(reports[reports.len() - 2], "1", "{row}");
}

#[test]
fn json_is_written_only_when_asked() {
    let dir = std::env::temp_dir().join(format!("demo-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("churn.json");
    let mut args = SMALL.to_vec();
    let p = path.to_str().unwrap().to_owned();
    args.extend(["--wait", "rwlock", "--json", &p]);
    let out = demo(&args);
    assert!(out.status.success(), "{out:?}");
    let json = std::fs::read_to_string(&path).unwrap();
    assert!(json.contains("\"mode\": \"rwlock\""), "{json}");
    assert!(json.contains("\"lockdep_reports\": 0"), "{json}");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "only the JSON file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_are_clear_errors() {
    let out = demo(&["qdisc-churn", "--wait", "spin"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("invalid value 'spin'"), "{err}");
    let out = demo(&["qdisc-churn", "--inject-inversion", "--queues", "1"]);
    assert_eq!(out.status.code(), Some(2));
    if !cfg!(feature = "rcu") {
        let out = demo(&["qdisc-churn", "--wait", "rcu"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8(out.stderr)
            .unwrap()
            .contains("unavailable"));
    }
}
