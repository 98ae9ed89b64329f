//! The strong-path search: would a new dependency close a deadlock cycle?
//!
//! Semantics from the kernel's `check_noncircular()` with the recursive-read rule of
//! `Documentation/locking/lockdep-design.rst`: a cycle is a deadlock only if it is *strong*,
//! that is no dependency ending in a recursive reader (`-(*R)->`) is directly followed by one
//! starting from a shared holder (`-(S*)->`). The search is a BFS over (class, "the edge that
//! got us here ended in R") states, so it is exact for closed walks, not only simple cycles.

use std::collections::VecDeque;

use crate::graph::Graph;
use crate::types::{ClassId, DepKind};

/// One step of a path found by [`strong_path`]: the dependency `from -> to` of kind `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub from: u32,
    pub to: u32,
    pub kind: DepKind,
}

/// Looks for a path `next ->* prev` that, together with the new dependency
/// `prev -(new_kind)-> next`, forms a strong cycle. Returns the path's steps in order
/// (first step leaves `next`, last step enters `prev`), or `None`.
///
/// Cost: O(V + E) over the classes reachable from `next`, under the graph lock.
pub(crate) fn strong_path(
    graph: &Graph,
    prev: ClassId,
    next: ClassId,
    new_kind: DepKind,
) -> Option<Vec<Step>> {
    let (target, start) = (prev.index(), next.index());
    // O(1) exits: nothing depends on `prev` (e.g. a class seen for the first time), or `next`
    // depends on nothing, so no path next ->* prev can exist.
    let no_way_in = !matches!(graph.slot(target), Some(c) if !c.before.is_empty());
    let no_way_out = !matches!(graph.slot(start), Some(c) if !c.after.is_empty());
    if no_way_in || no_way_out {
        return None;
    }
    // State = 2 * slot + (1 if the edge entering the slot ended in R).
    let state = |slot: u32, ended_r: bool| slot as usize * 2 + usize::from(ended_r);
    // Every visited state except the root, with the state and step it was reached from.
    let mut parent: hashbrown::HashMap<usize, (usize, Step)> = Default::default();
    let mut queue = VecDeque::new();
    let s0 = state(start, new_kind.ends_recursive());
    queue.push_back((start, new_kind.ends_recursive()));
    while let Some((slot, ended_r)) = queue.pop_front() {
        let here = state(slot, ended_r);
        if slot == target && slot != start && !(ended_r && new_kind.starts_shared()) {
            return Some(unwind(&parent, here, s0));
        }
        let Some(node) = graph.slot(slot) else {
            continue;
        };
        for (&to, edge) in &node.after {
            for kind in DepKind::kinds_in(edge.kinds) {
                // The strong rule: after an edge ending in R, only an edge from an exclusive
                // holder may follow.
                if ended_r && kind.starts_shared() {
                    continue;
                }
                let s = state(to, kind.ends_recursive());
                if s == s0 {
                    continue;
                }
                if let hashbrown::hash_map::Entry::Vacant(v) = parent.entry(s) {
                    v.insert((
                        here,
                        Step {
                            from: slot,
                            to,
                            kind,
                        },
                    ));
                    queue.push_back((to, kind.ends_recursive()));
                }
            }
        }
    }
    None
}

fn unwind(
    parent: &hashbrown::HashMap<usize, (usize, Step)>,
    mut at: usize,
    root: usize,
) -> Vec<Step> {
    let mut steps = Vec::new();
    while at != root {
        let (up, step) = parent[&at];
        steps.push(step);
        at = up;
    }
    steps.reverse();
    steps
}
