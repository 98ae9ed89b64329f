//! The strong-path search: would a new dependency close a deadlock cycle?
//!
//! Semantics from the kernel's `check_noncircular()` with the recursive-read rule of
//! `Documentation/locking/lockdep-design.rst`: a cycle is a deadlock only if it is *strong*,
//! that is no dependency ending in a recursive reader (`-(*R)->`) is directly followed by one
//! starting from a shared holder (`-(S*)->`). The search is a BFS over (class, "the edge that
//! got us here ended in R") states, so it is exact for closed walks, not only simple cycles.

use std::collections::VecDeque;

use super::Graph;
use crate::class::ClassId;
use crate::mode::DepKind;

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
            for kind in edge.kinds() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::KeyRef;
    use crate::graph::edges::EdgeSites;
    use std::panic::Location;
    use DepKind::*;

    /// A private graph with classes 0..n and the given dependencies.
    fn graph(n: usize, deps: &[(usize, usize, DepKind)]) -> (Graph, Vec<ClassId>) {
        let mut g = Graph::default();
        let ids: Vec<ClassId> = (0..n)
            .map(|i| g.create(KeyRef::Static(i + 1), 0, "C").unwrap())
            .collect();
        for &(from, to, kind) in deps {
            let sites = EdgeSites {
                prev: Location::caller(),
                next: Location::caller(),
                trace: None,
            };
            g.add(ids[from], ids[to], kind, sites);
        }
        (g, ids)
    }

    fn steps(path: &[Step], ids: &[ClassId]) -> Vec<(usize, usize, DepKind)> {
        let at = |slot: u32| ids.iter().position(|c| c.index() == slot).unwrap();
        path.iter()
            .map(|s| (at(s.from), at(s.to), s.kind))
            .collect()
    }

    #[test]
    fn finds_the_path_that_closes_a_cycle_in_order() {
        // 1 -> 2 -> 0 recorded; the new dependency 0 -> 1 closes 0 -> 1 -> 2 -> 0.
        let (g, ids) = graph(3, &[(1, 2, EN), (2, 0, EN)]);
        let path = strong_path(&g, ids[0], ids[1], EN).expect("a cycle");
        assert_eq!(steps(&path, &ids), [(1, 2, EN), (2, 0, EN)]);
    }

    #[test]
    fn no_path_back_means_no_cycle() {
        let (g, ids) = graph(3, &[(0, 1, EN), (1, 2, EN)]);
        assert_eq!(strong_path(&g, ids[0], ids[2], EN), None);
        // A class seen for the first time has no way in or out.
        let (g, ids) = graph(2, &[]);
        assert_eq!(strong_path(&g, ids[0], ids[1], EN), None);
    }

    #[test]
    fn a_recursive_read_followed_by_a_shared_holder_is_not_a_deadlock() {
        // Recorded 1 -SR-> 0; new 0 -ER-> 1. The new dependency ends in R and the recorded one
        // starts from a shared holder: the cycle is not strong.
        let (g, ids) = graph(2, &[(1, 0, SR)]);
        assert_eq!(strong_path(&g, ids[0], ids[1], ER), None);
        // With an exclusive holder after the R edge, it is.
        let (g, ids) = graph(2, &[(1, 0, EN)]);
        assert!(strong_path(&g, ids[0], ids[1], ER).is_some());
        // And the closing step counts too: recorded 1 -ER-> 0, new 0 -SN-> 1.
        let (g, ids) = graph(2, &[(1, 0, ER)]);
        assert_eq!(strong_path(&g, ids[0], ids[1], SN), None);
    }

    #[test]
    fn the_strong_rule_applies_inside_the_path() {
        // New 0 -EN-> 1; recorded 1 -ER-> 2 -SN-> 0: an R edge followed by an S edge.
        let (g, ids) = graph(3, &[(1, 2, ER), (2, 0, SN)]);
        assert_eq!(strong_path(&g, ids[0], ids[1], EN), None);
        // A second kind on 2 -> 0, from an exclusive holder, makes the walk strong.
        let (g, ids) = graph(3, &[(1, 2, ER), (2, 0, SN), (2, 0, EN)]);
        let path = strong_path(&g, ids[0], ids[1], EN).expect("strong via EN");
        assert_eq!(steps(&path, &ids), [(1, 2, ER), (2, 0, EN)]);
    }

    #[test]
    fn a_closed_walk_that_visits_a_class_twice_is_found() {
        // New 0 -ER-> 1 ends in R, so 1's own 1 -SN-> 0 may not follow it directly. Going
        // round 1 -EN-> 2 -EN-> 1 first arrives at 1 after an N edge, and then 1 -SN-> 0 may
        // follow: a strong closed walk that a search over classes alone (1 already visited)
        // would miss.
        let (g, ids) = graph(3, &[(1, 2, EN), (2, 1, EN), (1, 0, SN)]);
        let path = strong_path(&g, ids[0], ids[1], ER).expect("a strong closed walk");
        assert_eq!(steps(&path, &ids), [(1, 2, EN), (2, 1, EN), (1, 0, SN)]);
    }
}
