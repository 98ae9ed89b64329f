//! Introspection (counts, the dependency list, Graphviz DOT) and the reset for tests.
//! Kernel counterparts: `/proc/lockdep_stats`, `/proc/lockdep`, and the selftest's
//! `reset_locks()`.

use std::fmt::Write as _;

use crate::chain;
use crate::graph_lock::graph_lock;
use crate::mode::DepKind;
use crate::report::{self, ReportKind, SuppressionId};
use crate::thread::with_state;
use crate::validate;

/// Validator counters, from [`stats`].
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Registered dynamic keys.
    pub keys: usize,
    /// Live lock classes.
    pub classes: usize,
    /// Ordered class pairs with at least one dependency.
    pub edges: usize,
    /// Dependencies counted by kind (a pair with EN and SR counts 2).
    pub dependencies: usize,
    /// Instance-order pairs kept, counted by kind (at most
    /// [`MAX_INSTANCE_PAIRS`](crate::MAX_INSTANCE_PAIRS)).
    pub instance_pairs: usize,
    /// Chains in the global chain cache.
    pub chains: usize,
    /// Chains the global chain cache evicted to make room for a new one (an insert found its
    /// probe window full); each costs only that chain's re-validation. Not reset.
    pub chain_cache_evictions: usize,
    /// Reports made since the process started, repeats included (not reset).
    pub reports: u64,
    /// Reports delivered as the first occurrence of a distinct report (not reset; a report
    /// made again after [`reset`] counts again). See [`summary`](crate::summary).
    pub distinct_reports: u64,
    /// Repeats of a report that were counted but neither printed nor handed to the callback
    /// (rate-limited capacity episodes included; not reset). See
    /// [`set_report_repeats`](crate::set_report_repeats).
    pub repeats_suppressed: u64,
    /// [`repeats_suppressed`](Self::repeats_suppressed) per report kind, for the kinds with
    /// any, in [`ReportKind::ALL`] order.
    pub suppressed_by_kind: Vec<(ReportKind, u64)>,
    /// Reports that report handlers' own lock operations made and that were not handed to the
    /// handler, because one delivery had already handed it its bound of them (not reset).
    pub reports_dropped: u64,
    /// Reports that a declared suppression ([`suppress`](crate::suppress)) matched: made
    /// (counted in [`reports`](Self::reports)) but not delivered, and counted neither as
    /// distinct reports nor as repeats (not reset).
    pub suppression_hits: u64,
    /// The reports each declared suppression matched, in declaration order, zeros included
    /// (a report two suppressions match counts for both; not reset). See
    /// [`suppressions`](crate::suppressions) for what each one is.
    pub hits_by_suppression: Vec<(SuppressionId, u64)>,
    /// Attempts to close a strong cycle, including ones not reported again because the
    /// cycle had been reported before (not reset).
    pub cycles_found: u64,
    /// `hazptr` synchronize calls of the global domain that had to wait (key unregister).
    pub hazptr_waits: u64,
}

/// A snapshot of the validator's counters. Takes the graph lock briefly.
pub fn stats() -> Stats {
    let (keys, classes, edges, dependencies, instance_pairs) = {
        let g = graph_lock();
        let edges = g.graph.classes().map(|c| c.after.len()).sum();
        (
            g.keys,
            g.graph.class_count(),
            edges,
            g.graph.dependency_count(),
            g.graph.instances.pair_count(),
        )
    };
    let summary = report::summary();
    Stats {
        keys,
        classes,
        edges,
        dependencies,
        instance_pairs,
        chains: chain::count(),
        chain_cache_evictions: chain::evictions(),
        reports: report::made(),
        distinct_reports: summary.distinct,
        repeats_suppressed: summary.repeats_suppressed,
        suppressed_by_kind: summary
            .by_kind
            .iter()
            .filter(|k| k.2 > 0)
            .map(|k| (k.0, k.2))
            .collect(),
        reports_dropped: report::dropped(),
        suppression_hits: summary.suppression_hits,
        hits_by_suppression: report::suppression_hits_by_id(),
        cycles_found: validate::cycles_found(),
        hazptr_waits: crate::keys::hazptr_domain().stats().synchronize_waits,
    }
}

/// One recorded dependency between two classes, from [`dependencies`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DependencyInfo {
    /// The held class.
    pub from: String,
    /// The class acquired while `from` was held.
    pub to: String,
    /// The kinds recorded for this pair, in [`DepKind::ALL`] order.
    pub kinds: Vec<DepKind>,
}

/// Every recorded dependency, sorted by class names. Takes the graph lock.
pub fn dependencies() -> Vec<DependencyInfo> {
    let g = graph_lock();
    let mut out = Vec::new();
    for c in g.graph.classes() {
        for (to, e) in &c.after {
            let Some(t) = g.graph.slot(*to) else { continue };
            out.push(DependencyInfo {
                from: c.name.to_string(),
                to: t.name.to_string(),
                kinds: {
                    let mut k: Vec<DepKind> = e.kinds().map(|k| k.public()).collect();
                    k.sort_unstable();
                    k.dedup();
                    k
                },
            });
        }
    }
    out.sort();
    out
}

/// The dependency graph in Graphviz DOT: one node per class, one edge per class pair labelled
/// with its kinds and the sites of its first dependency. Takes the graph lock.
pub fn dot() -> String {
    let g = graph_lock();
    let mut s = String::from("digraph lockdep {\n    node [shape=box];\n");
    for c in g.graph.classes() {
        let _ = writeln!(s, "    c{} [label={:?}];", c.id.index(), &*c.name);
    }
    for c in g.graph.classes() {
        for (to, e) in &c.after {
            let mut kinds: Vec<String> = e.kinds().map(|k| k.public().to_string()).collect();
            kinds.dedup();
            let site = e
                .first_sites()
                .map(|x| format!("\\n{} -> {}", x.prev, x.next))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "    c{} -> c{} [label=\"{}{}\"];",
                c.id.index(),
                to,
                kinds.join(","),
                site.replace('"', "'")
            );
        }
    }
    s.push_str("}\n");
    s
}

/// Test hook: runs `f` while holding the validator's graph lock, so a test can show that an
/// operation (a chain-cache hit, a release) completes without it. `f` must not call into the
/// validator's slow paths (class creation, new chains, key register/unregister, reports),
/// which would wait for the lock forever.
#[doc(hidden)]
pub fn with_graph_lock_held<R>(f: impl FnOnce() -> R) -> R {
    let _g = graph_lock();
    f()
}

/// Resets the validator to a clean state, for tests (the kernel selftest's `reset_locks()`):
/// zaps every class with its dependencies, empties the chain cache, forgets which reports were
/// delivered (each is delivered once more) and restarts the numbering of capacity episodes,
/// and clears *this thread's* held stack and chain cache. Counters ([`stats`],
/// [`summary`](crate::summary)) are not reset. Registered dynamic keys stay registered. Lock maps stay usable: their cached class
/// ids are dead and they get fresh classes on their next acquire.
///
/// Call it only while no other thread holds or acquires validated locks (tests usually
/// serialize on a mutex of their own); other threads' held stacks are not touched.
pub fn reset() {
    {
        let mut g = graph_lock();
        g.graph.zap_all();
        g.classes_exhausted = false;
        g.instance_pairs_exhausted_reported = false;
        chain::clear();
    }
    report::forget_delivered();
    report::recent::clear();
    validate::forget_replays();
    with_state(|st| st.clear());
}
