//! The exit line: one line per process in [`REPORT_FILE_ENV`]'s file, written at exit by a
//! process that validated anything, so that a report file tells a clean run (exit lines that
//! say `0 reports`) from a run that validated nothing (no line: not patched, the locks not
//! reached, or the process did not exit normally).
//!
//! `lockdep: exit of pid 4242 (rt_threaded-6f1c): 16 lock classes, 14 dependencies, 0 reports`
//!
//! Armed at the process's first class creation, so a process that never took a validated
//! lock writes nothing and costs nothing. The line goes to the file only: standard error
//! keeps its exit summary (printed when repeats were suppressed) and nothing else, so
//! `cargo test` output is unchanged.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{at_exit, output, summary};
use crate::graph::lifetime_counts;

#[cfg(doc)]
use super::REPORT_FILE_ENV;

static ARMED: AtomicBool = AtomicBool::new(false);

/// Arranges, once per process, for the exit line to be written at exit (if a report file is
/// set then). Called on every class creation (a cold path): after the first, one load.
pub(crate) fn arm() {
    // Relaxed: only whether this caller is the first matters; the handler reads counters
    // that are statistics.
    if !ARMED.load(Ordering::Relaxed) && !ARMED.swap(true, Ordering::Relaxed) {
        at_exit::run_at_exit(write_exit_line);
    }
}

/// The exit line's text, with its newline.
pub(crate) fn text(pid: u32, program: &str) -> String {
    let (classes, dependencies) = lifetime_counts();
    let s = summary::summary();
    let mut line = format!(
        "lockdep: exit of pid {pid} ({program}): {}, {}, {}",
        count(classes, "lock class", "lock classes"),
        count(dependencies, "dependency", "dependencies"),
        count(s.distinct, "report", "reports"),
    );
    if s.repeats_suppressed > 0 {
        let repeats = count(s.repeats_suppressed, "repeat", "repeats");
        line.push_str(&format!(" ({repeats} suppressed)"));
    }
    if s.suppression_hits > 0 {
        let hits = count(s.suppression_hits, "report", "reports");
        line.push_str(&format!(", {hits} matched a suppression"));
    }
    line.push('\n');
    line
}

/// `1 lock class`, `12,345 lock classes`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        summary::thousands(n),
        if n == 1 { one } else { many }
    )
}

/// The program's file name, from its first argument (`?` if there is none).
fn program() -> String {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "?".to_owned())
}

/// Writes the exit line to the report file, if one is set (run at exit).
fn write_exit_line() {
    output::write_report_file_only(&text(std::process::id(), &program()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_line_names_the_process_and_counts_in_words() {
        let line = text(42, "prog");
        assert!(
            line.starts_with("lockdep: exit of pid 42 (prog): "),
            "{line}"
        );
        assert!(line.ends_with('\n'), "{line}");
        assert!(
            line.contains(" lock class") && line.contains(" report"),
            "{line}"
        );
        assert_eq!(count(1, "lock class", "lock classes"), "1 lock class");
        assert_eq!(
            count(12_345, "lock class", "lock classes"),
            "12,345 lock classes"
        );
    }
}
