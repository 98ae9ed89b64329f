//! One ordered pair of classes (or of lock instances) in a dependency graph: which kinds of
//! dependency it has and where, and on which instances, each kind was first seen.

use std::panic::Location;
use std::sync::Arc;

use crate::mode::Kind;

/// A stack trace captured when a dependency was first recorded (only with
/// [`set_capture_backtraces`](crate::set_capture_backtraces)). Compares by identity.
#[derive(Clone, Debug)]
pub struct Trace(pub Arc<std::backtrace::Backtrace>);

impl PartialEq for Trace {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Trace {}

/// One lock instance as a dependency saw it: its lock map's address and name, if it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub instance: usize,
    pub name: Option<&'static str>,
}

/// Where the two ends of one dependency were acquired, and on which instances, captured when
/// the dependency was first seen.
#[derive(Clone, Debug)]
pub(crate) struct EdgeSites {
    pub prev: &'static Location<'static>,
    pub next: &'static Location<'static>,
    pub prev_lock: Seen,
    pub next_lock: Seen,
    /// The stack of the acquisition that created the dependency, if capture is on.
    pub trace: Option<Trace>,
}

impl EdgeSites {
    /// Sites for unit tests of the graph: the caller's line at both ends, instance 0, no
    /// names, no trace.
    #[cfg(test)]
    #[track_caller]
    pub(crate) fn for_tests() -> EdgeSites {
        let seen = Seen {
            instance: 0,
            name: None,
        };
        EdgeSites {
            prev: Location::caller(),
            next: Location::caller(),
            prev_lock: seen,
            next_lock: seen,
            trace: None,
        }
    }
}

/// All the kinds recorded for one ordered pair.
#[derive(Clone, Debug, Default)]
pub(crate) struct Edge {
    /// Bit set of [`Kind::bit`].
    kinds: u16,
    /// The sites of the first dependency recorded: kept inline, as most pairs have only one
    /// kind, so that recording or forgetting a pair allocates and frees nothing.
    first: Option<(Kind, EdgeSites)>,
    /// The sites of the first dependency of each further kind, in the order they were
    /// recorded.
    more: Vec<(Kind, EdgeSites)>,
}

impl Edge {
    /// True if a dependency of this kind is recorded.
    pub fn has(&self, kind: Kind) -> bool {
        self.kinds & kind.bit() != 0
    }

    /// Records a dependency of this kind, with its sites if it is new; returns whether it was.
    pub fn insert(&mut self, kind: Kind, sites: EdgeSites) -> bool {
        if self.has(kind) {
            return false;
        }
        self.kinds |= kind.bit();
        if self.first.is_none() {
            self.first = Some((kind, sites));
        } else {
            self.more.push((kind, sites));
        }
        true
    }

    /// The recorded kinds, in index order.
    pub fn kinds(&self) -> impl Iterator<Item = Kind> {
        Kind::kinds_in(self.kinds)
    }

    /// The number of distinct public kinds ([`DepKind`](crate::DepKind)) recorded: what the
    /// dependency count counts. No allocation (it runs for every pair a zap forgets).
    pub fn count(&self) -> usize {
        let public = self
            .kinds()
            .fold(0u64, |set, k| set | 1 << (k.public() as u32));
        public.count_ones() as usize
    }

    /// Every recorded kind with its sites, in the order recorded.
    fn all_sites(&self) -> impl Iterator<Item = &(Kind, EdgeSites)> {
        self.first.iter().chain(&self.more)
    }

    /// Where the first dependency of this kind was seen.
    pub fn sites(&self, kind: Kind) -> Option<&EdgeSites> {
        self.all_sites().find(|(k, _)| *k == kind).map(|(_, s)| s)
    }

    /// The sites of the first recorded dependency.
    pub fn first_sites(&self) -> Option<&EdgeSites> {
        self.first.as_ref().map(|(_, s)| s)
    }
}
