//! Counting a batch of reports again without making it again.
//!
//! A program that keeps taking locks in an order that was reported (a true positive it has
//! not fixed yet, or one a declared suppression covers) would otherwise pay the whole
//! validation of that acquisition every time: the graph lock, the search that finds the cycle
//! again, and the report built again only to be counted as a repeat. A [`Replay`] is what such
//! a batch came to (which reports were repeats of delivered ones, which a suppression matched):
//! the validator keeps it for the chain (`validate::replays`) and, while nothing it depends on
//! has changed, counts the next occurrence exactly as the delivery would have: one report made
//! per report, a repeat counted per kind, a hit on each suppression that matched.
//!
//! What it depends on is stamped in it: the number of declared suppressions; and checked when
//! it runs: repeats not asked for ([`set_report_repeats`](crate::set_report_repeats)), the
//! policy not `Policy::Panic`, and the thread in no test scope (all three make every occurrence
//! do something). The caller stamps the graph's shape itself, which a reset changes too (it
//! zaps every class), so a reset of the deduplication needs no stamp of its own.

use super::types::ReportKind;
use super::{dedup, policy, scope, summary, suppress};
use crate::settings;

/// What happened to one report of a batch that can be counted again: it was of the kind at
/// place `kind` in [`ReportKind::ALL`](crate::ReportKind::ALL), and either a repeat of a
/// delivered report (`suppressed_by` `None`) or matched by the declared suppressions at those
/// places.
pub(crate) struct Fate {
    pub(super) kind: usize,
    pub(super) suppressed_by: Option<Box<[u32]>>,
}

/// When a batch was classified: what must not have changed for a replay to count the same.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    suppressions: usize,
}

/// A batch of reports that was delivered without being delivered (see the module docs):
/// counted again by [`count`](Self::count) while [`is_current`](Self::is_current).
pub(crate) struct Replay {
    fates: Box<[Fate]>,
    stamp: Stamp,
}

impl Replay {
    /// The stamp of a batch about to be classified.
    pub(super) fn stamp() -> Stamp {
        Stamp {
            suppressions: suppress::declared(),
        }
    }

    pub(super) fn new(fates: Vec<Fate>, stamp: Stamp) -> Replay {
        Replay {
            fates: fates.into_boxed_slice(),
            stamp,
        }
    }

    /// Whether a new occurrence of the batch would come to the same: no new suppression
    /// since it was classified, repeats not asked for, no panicking policy, and
    /// this thread in no test scope. Lock-free.
    pub(crate) fn is_current(&self) -> bool {
        self.stamp == Replay::stamp()
            && !settings::report_repeats()
            && !policy::panics()
            && !scope::in_scope()
    }

    /// Counts one more occurrence of the batch, as its delivery would have: every report made,
    /// each repeat per kind, each suppression's hit. Call it only while
    /// [`is_current`](Self::is_current). Thread-safe; takes the suppressions' leaf lock if one
    /// matched.
    pub(crate) fn count(&self) {
        summary::count_made(self.fates.len() as u64);
        for f in &self.fates {
            match &f.suppressed_by {
                None => dedup::count_repeat(f.kind),
                Some(places) => suppress::count_suppressed_again(places),
            }
        }
        summary::print_at_exit();
    }

    /// How many of the batch's reports are cycles (each one an attempt to close a cycle,
    /// which the validator counts too).
    pub(crate) fn cycles(&self) -> usize {
        let cycle = ReportKind::CircularDependency.index();
        self.fates.iter().filter(|f| f.kind == cycle).count()
    }
}
