//! One ordered pair of classes in the dependency graph: which kinds of dependency it has and
//! where each kind was first seen.

use std::panic::Location;
use std::sync::Arc;

use crate::mode::DepKind;

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

/// Where the two ends of one dependency were acquired, captured when the dependency was first
/// seen.
#[derive(Clone, Debug)]
pub(crate) struct EdgeSites {
    pub prev: &'static Location<'static>,
    pub next: &'static Location<'static>,
    /// The stack of the acquisition that created the dependency, if capture is on.
    pub trace: Option<Trace>,
}

/// All the kinds recorded for one ordered pair of classes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Edge {
    /// Bit set of [`DepKind::bit`].
    kinds: u8,
    /// The sites of the first dependency of each kind, indexed by [`DepKind::index`].
    sites: [Option<EdgeSites>; 4],
}

impl Edge {
    /// True if a dependency of this kind is recorded.
    pub fn has(&self, kind: DepKind) -> bool {
        self.kinds & kind.bit() != 0
    }

    /// Records a dependency of this kind, with its sites if it is new; returns whether it was.
    pub fn insert(&mut self, kind: DepKind, sites: EdgeSites) -> bool {
        if self.has(kind) {
            return false;
        }
        self.kinds |= kind.bit();
        self.sites[kind.index()] = Some(sites);
        true
    }

    /// The recorded kinds, in EN, SN, ER, SR order.
    pub fn kinds(&self) -> impl Iterator<Item = DepKind> {
        DepKind::kinds_in(self.kinds)
    }

    /// The number of recorded kinds.
    pub fn count(&self) -> usize {
        self.kinds.count_ones() as usize
    }

    /// Where the first dependency of this kind was seen.
    pub fn sites(&self, kind: DepKind) -> Option<&EdgeSites> {
        self.sites[kind.index()].as_ref()
    }

    /// The sites of the first recorded kind (in EN, SN, ER, SR order).
    pub fn first_sites(&self) -> Option<&EdgeSites> {
        self.sites.iter().flatten().next()
    }
}
