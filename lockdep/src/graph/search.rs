//! The strong-path search: would a new dependency close a deadlock cycle?
//!
//! Semantics from the kernel's `check_noncircular()` with the recursive-read rule of
//! `Documentation/locking/lockdep-design.rst`, generalized to upgradable reads: a cycle is a
//! deadlock only if it is *strong*, that is, at every lock on it the acquisition that ends
//! one dependency can wait for the holding that starts the next ([`Kind::may_follow`]; for the
//! kernel's kinds, no `-(*R)->` directly followed by `-(S*)->`). The search is a BFS over
//! (node, how the edge that got us here acquired the node) states, so it is exact for closed
//! walks, not only simple cycles. It runs on any graph with the [`Deps`] shape: the class
//! graph, and one class's instance-order graph.

use std::collections::VecDeque;
use std::hash::Hash;

use super::edges::Edge;
use crate::mode::{Kind, Mode};

/// A dependency graph the search can walk.
pub(crate) trait Deps {
    /// A node: a class slot, or a lock instance (ordered: the search visits a node's
    /// successors in this order).
    type Node: Copy + Eq + Hash + Ord;
    /// True if some dependency enters `n`.
    fn has_way_in(&self, n: Self::Node) -> bool;
    /// True if some dependency leaves `n`.
    fn has_way_out(&self, n: Self::Node) -> bool;
    /// Calls `f` for every recorded pair `n -> to`.
    fn for_each_after(&self, n: Self::Node, f: &mut dyn FnMut(Self::Node, &Edge));
}

/// One step of a path found by [`strong_path`]: the dependency `from -> to` of kind `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step<N> {
    pub from: N,
    pub to: N,
    pub kind: Kind,
}

/// A search state: a node and the class of acquisition that reached it (see `waits_like`).
type State<N> = (N, u8);

/// Every visited state except the root, with the state and step it was reached from.
type Parents<N> = hashbrown::HashMap<State<N>, (State<N>, Step<N>)>;

/// The acquisitions that wait for the same holders, as one state of the search: writers and
/// upgradable reads (0), plain readers (1), recursive readers (2).
fn waits_like(m: Mode) -> (u8, Mode) {
    match m {
        Mode::Exclusive | Mode::Upgradable => (0, Mode::Exclusive),
        Mode::Read => (1, Mode::Read),
        Mode::RecursiveRead => (2, Mode::RecursiveRead),
    }
}

/// Looks for a path `next ->* prev` that, together with the new dependency
/// `prev -(new_kind)-> next`, forms a strong cycle. Returns the path's steps in order
/// (first step leaves `next`, last step enters `prev`), or `None`. Of several shortest
/// paths, always the same one for the same graph: a node's successors are visited in node
/// order, not in the order of the hash map that holds them.
///
/// Cost: O(V + E log E) over the nodes reachable from `next`, under the graph lock.
pub(crate) fn strong_path<G: Deps>(
    graph: &G,
    prev: G::Node,
    next: G::Node,
    new_kind: Kind,
) -> Option<Vec<Step<G::Node>>> {
    let (target, start) = (prev, next);
    // O(1) exits: nothing depends on `prev` (e.g. a class seen for the first time), or `next`
    // depends on nothing, so no path next ->* prev can exist.
    if !graph.has_way_in(target) || !graph.has_way_out(start) {
        return None;
    }
    let mut parent: Parents<G::Node> = Default::default();
    let mut queue = VecDeque::new();
    // A node's successors and the kinds of its dependency on each (one buffer for the search).
    let mut after: Vec<(G::Node, u16)> = Vec::new();
    let (c0, m0) = waits_like(new_kind.acquirer);
    let s0 = (start, c0);
    queue.push_back((start, m0));
    while let Some((node, entered)) = queue.pop_front() {
        let here = (node, waits_like(entered).0);
        // Closing: the last step's acquisition of `prev` must wait for `prev`'s holding on
        // the new dependency.
        if node == target && node != start && new_kind.may_follow(entered) {
            return Some(unwind(&parent, here, s0));
        }
        after.clear();
        graph.for_each_after(node, &mut |to, edge| {
            after.push((to, edge.kinds().fold(0, |bits, k| bits | k.bit())));
        });
        after.sort_unstable_by_key(|&(to, _)| to);
        for &(to, bits) in &after {
            for kind in Kind::kinds_in(bits) {
                if !kind.may_follow(entered) {
                    continue;
                }
                let (c, m) = waits_like(kind.acquirer);
                let s = (to, c);
                if s == s0 {
                    continue;
                }
                if let hashbrown::hash_map::Entry::Vacant(v) = parent.entry(s) {
                    v.insert((
                        here,
                        Step {
                            from: node,
                            to,
                            kind,
                        },
                    ));
                    queue.push_back((to, m));
                }
            }
        }
    }
    None
}

fn unwind<N: Copy + Eq + Hash>(
    parent: &Parents<N>,
    mut at: State<N>,
    root: State<N>,
) -> Vec<Step<N>> {
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
    use crate::graph::edges::{EdgeSites, Seen};
    use hashbrown::HashMap;
    use std::panic::Location;
    use Mode::*;

    /// A private graph of nodes 0..n with the given dependencies.
    #[derive(Default)]
    struct G(HashMap<usize, HashMap<usize, Edge>>);

    impl Deps for G {
        type Node = usize;
        fn has_way_in(&self, n: usize) -> bool {
            self.0.values().any(|a| a.contains_key(&n))
        }
        fn has_way_out(&self, n: usize) -> bool {
            self.0.get(&n).is_some_and(|a| !a.is_empty())
        }
        fn for_each_after(&self, n: usize, f: &mut dyn FnMut(usize, &Edge)) {
            for (&to, e) in self.0.get(&n).into_iter().flatten() {
                f(to, e);
            }
        }
    }

    fn graph(deps: &[(usize, usize, Kind)]) -> G {
        let mut g = G::default();
        for &(from, to, kind) in deps {
            let seen = Seen {
                instance: 0,
                name: None,
            };
            let sites = EdgeSites {
                prev: Location::caller(),
                next: Location::caller(),
                prev_lock: seen,
                next_lock: seen,
                trace: None,
            };
            g.0.entry(from)
                .or_default()
                .entry(to)
                .or_default()
                .insert(kind, sites);
        }
        g
    }

    fn steps(path: &[Step<usize>]) -> Vec<(usize, usize, Kind)> {
        path.iter().map(|s| (s.from, s.to, s.kind)).collect()
    }

    // The kernel's kinds, with a writer for N and a plain reader for S.
    const EN: Kind = Kind {
        holder: crate::mode::Hold::E,
        acquirer: Exclusive,
    };
    const SN: Kind = Kind {
        holder: crate::mode::Hold::S,
        acquirer: Exclusive,
    };
    const ER: Kind = Kind {
        holder: crate::mode::Hold::E,
        acquirer: RecursiveRead,
    };
    const SR: Kind = Kind {
        holder: crate::mode::Hold::S,
        acquirer: RecursiveRead,
    };

    #[test]
    fn finds_the_path_that_closes_a_cycle_in_order() {
        // 1 -> 2 -> 0 recorded; the new dependency 0 -> 1 closes 0 -> 1 -> 2 -> 0.
        let g = graph(&[(1, 2, EN), (2, 0, EN)]);
        let path = strong_path(&g, 0, 1, EN).expect("a cycle");
        assert_eq!(steps(&path), [(1, 2, EN), (2, 0, EN)]);
    }

    #[test]
    fn no_path_back_means_no_cycle() {
        let g = graph(&[(0, 1, EN), (1, 2, EN)]);
        assert_eq!(strong_path(&g, 0, 2, EN), None);
        // A node seen for the first time has no way in or out.
        let g = graph(&[]);
        assert_eq!(strong_path(&g, 0, 1, EN), None);
    }

    #[test]
    fn a_recursive_read_followed_by_a_shared_holder_is_not_a_deadlock() {
        // Recorded 1 -SR-> 0; new 0 -ER-> 1. The new dependency ends in R and the recorded one
        // starts from a shared holder: the cycle is not strong.
        let g = graph(&[(1, 0, SR)]);
        assert_eq!(strong_path(&g, 0, 1, ER), None);
        // With an exclusive holder after the R edge, it is.
        let g = graph(&[(1, 0, EN)]);
        assert!(strong_path(&g, 0, 1, ER).is_some());
        // And the closing step counts too: recorded 1 -ER-> 0, new 0 -SN-> 1.
        let g = graph(&[(1, 0, ER)]);
        assert_eq!(strong_path(&g, 0, 1, SN), None);
    }

    #[test]
    fn the_strong_rule_applies_inside_the_path() {
        // New 0 -EN-> 1; recorded 1 -ER-> 2 -SN-> 0: an R edge followed by an S edge.
        let g = graph(&[(1, 2, ER), (2, 0, SN)]);
        assert_eq!(strong_path(&g, 0, 1, EN), None);
        // A second kind on 2 -> 0, from an exclusive holder, makes the walk strong.
        let g = graph(&[(1, 2, ER), (2, 0, SN), (2, 0, EN)]);
        let path = strong_path(&g, 0, 1, EN).expect("strong via EN");
        assert_eq!(steps(&path), [(1, 2, ER), (2, 0, EN)]);
    }

    #[test]
    fn a_closed_walk_that_visits_a_node_twice_is_found() {
        // New 0 -ER-> 1 ends in R, so 1's own 1 -SN-> 0 may not follow it directly. Going
        // round 1 -EN-> 2 -EN-> 1 first arrives at 1 after an N edge, and then 1 -SN-> 0 may
        // follow: a strong closed walk that a search over nodes alone (1 already visited)
        // would miss.
        let g = graph(&[(1, 2, EN), (2, 1, EN), (1, 0, SN)]);
        let path = strong_path(&g, 0, 1, ER).expect("a strong closed walk");
        assert_eq!(steps(&path), [(1, 2, EN), (2, 1, EN), (1, 0, SN)]);
    }

    #[test]
    fn an_upgradable_holder_blocks_a_writer_but_not_a_plain_reader() {
        // Node 0 = A, 1 = B. Recorded B -(E, read)-> A; new A -(held upgradable, B taken
        // exclusively)-> B: the read of A cannot wait for A's upgradable holder.
        let ua = Kind::of(Upgradable, Exclusive);
        let g = graph(&[(1, 0, Kind::of(Exclusive, Read))]);
        assert_eq!(strong_path(&g, 0, 1, ua), None);
        // A write of A (or a second upgradable read) can.
        let g = graph(&[(1, 0, Kind::of(Exclusive, Exclusive))]);
        assert!(strong_path(&g, 0, 1, ua).is_some());
        let g = graph(&[(1, 0, Kind::of(Exclusive, Upgradable))]);
        assert!(strong_path(&g, 0, 1, ua).is_some());
        // An upgradable acquisition waits behind a reader (a writer queues between them).
        let g = graph(&[(1, 0, Kind::of(Read, Exclusive))]);
        assert!(strong_path(&g, 0, 1, Kind::of(Exclusive, Upgradable)).is_some());
    }
}
