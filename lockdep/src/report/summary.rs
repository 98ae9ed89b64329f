//! The summary of deduplicated reports: "3 distinct reports, 99,997 repeats suppressed", on
//! request and, when repeats were suppressed or suppressions matched, at process exit.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::types::ReportKind;
use super::{at_exit, dedup, output, suppress};

/// Every report made since the process started, repeats included.
static MADE: AtomicU64 = AtomicU64::new(0);

/// The number of reports made since the process started, repeats included (never reset).
pub(crate) fn made() -> u64 {
    // Relaxed: a statistic.
    MADE.load(Ordering::Relaxed)
}

/// Counts `n` reports made (see [`made`]).
pub(super) fn count_made(n: u64) {
    // Relaxed: a statistic.
    MADE.fetch_add(n, Ordering::Relaxed);
}

/// How many reports were delivered and how many repeats were not, from [`summary`].
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Reports delivered as the first occurrence of a distinct report (a report delivered
    /// again after [`reset`](crate::reset) counts again).
    pub distinct: u64,
    /// Repeats that were counted but not printed nor handed to the callback (rate-limited
    /// capacity episodes included).
    pub repeats_suppressed: u64,
    /// The same two counts per kind, for the kinds with any, in [`ReportKind::ALL`] order:
    /// `(kind, distinct, repeats_suppressed)`.
    pub by_kind: Vec<(ReportKind, u64, u64)>,
    /// Reports that a declared suppression ([`suppress`](crate::suppress)) matched: neither
    /// delivered nor counted in `distinct` or `repeats_suppressed`.
    pub suppression_hits: u64,
}

/// The counts since the process started (not reset by [`reset`](crate::reset)). Thread-safe,
/// lock-free.
pub fn summary() -> Summary {
    let by_kind: Vec<_> = dedup::counts()
        .into_iter()
        .filter(|&(_, d, s)| d + s > 0)
        .collect();
    Summary {
        distinct: by_kind.iter().map(|k| k.1).sum(),
        repeats_suppressed: by_kind.iter().map(|k| k.2).sum(),
        by_kind,
        suppression_hits: suppress::total_hits(),
    }
}

/// Writes `lockdep: ` and the [`summary`] line to standard error (see
/// [`Policy::Stderr`](crate::Policy::Stderr) for how). The same line is printed at process
/// exit (from an `atexit` handler) if any repeat was suppressed or any suppression matched.
pub fn print_summary() {
    output::write_stderr(&format!("lockdep: {}\n", summary()));
}

/// `12,345`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `3 distinct reports, 99,997 repeats suppressed (99,990 possible recursive locking, 7 bad
/// unlock balance)`; the parenthesis lists the kinds with suppressed repeats. With matches of
/// declared suppressions, `, 12 reports matched a suppression` follows.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} distinct report{}, {} repeat{} suppressed",
            thousands(self.distinct),
            plural(self.distinct),
            thousands(self.repeats_suppressed),
            plural(self.repeats_suppressed)
        )?;
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .filter(|k| k.2 > 0)
            .map(|(k, _, s)| format!("{} {k}", thousands(*s)))
            .collect();
        if !kinds.is_empty() {
            write!(f, " ({})", kinds.join(", "))?;
        }
        if self.suppression_hits > 0 {
            write!(
                f,
                ", {} report{} matched a suppression",
                thousands(self.suppression_hits),
                plural(self.suppression_hits)
            )?;
        }
        Ok(())
    }
}

static AT_EXIT: AtomicBool = AtomicBool::new(false);

/// Arranges, once, for the summary to be printed at process exit (called when a repeat is
/// first suppressed, and when a suppression first matches).
pub(crate) fn print_at_exit() {
    // Relaxed (both): only whether this caller is the first matters. The load first: every
    // repeat comes here, and a swap would write the shared line each time.
    if !AT_EXIT.load(Ordering::Relaxed) && !AT_EXIT.swap(true, Ordering::Relaxed) {
        at_exit::run_at_exit(print_if_anything_was_held_back);
    }
}

/// Prints the summary line if any repeat was suppressed or any suppression matched (run at
/// exit).
fn print_if_anything_was_held_back() {
    let s = summary();
    if s.repeats_suppressed > 0 {
        output::write_stderr(&format!(
            "lockdep: {s}; lockdep::set_report_repeats(true) prints every occurrence\n"
        ));
    } else if s.suppression_hits > 0 {
        output::write_stderr(&format!("lockdep: {s}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_line_reads_as_in_the_docs() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(99_997), "99,997");
        assert_eq!(thousands(1_234_567), "1,234,567");
        let s = Summary {
            distinct: 3,
            repeats_suppressed: 99_997,
            by_kind: vec![
                (ReportKind::RecursiveLocking, 1, 99_990),
                (ReportKind::CircularDependency, 1, 0),
                (ReportKind::BadUnlockBalance, 1, 7),
            ],
            suppression_hits: 0,
        };
        assert_eq!(
            s.to_string(),
            "3 distinct reports, 99,997 repeats suppressed (99,990 possible recursive \
             locking, 7 bad unlock balance)"
        );
        let one = Summary {
            distinct: 1,
            repeats_suppressed: 1,
            by_kind: vec![],
            suppression_hits: 0,
        };
        assert_eq!(one.to_string(), "1 distinct report, 1 repeat suppressed");
        let matched = Summary {
            suppression_hits: 1_200,
            ..one
        };
        assert_eq!(
            matched.to_string(),
            "1 distinct report, 1 repeat suppressed, 1,200 reports matched a suppression"
        );
    }
}
