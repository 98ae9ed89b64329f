//! Instance-order pairs: for each lock class, which of its instances was taken while which
//! other instance of the same class was held, with the kinds and sites of each pair (the
//! [`Nesting::InstanceOrder`](crate::Nesting::InstanceOrder) rule).
//!
//! A class graph cannot order two instances of one class; this graph can, per class, so that
//! consistently ordered nesting (parent -> child, lower -> higher, any fixed order) is silent
//! and a cycle among instances is found by the same strong-path search as a cycle among
//! classes. Bounded: a freed lock forgets its pairs, a zapped class forgets all of its, and
//! at most [`MAX_INSTANCE_PAIRS`] (pair, kind) entries are kept at a time.

use hashbrown::{HashMap, HashSet};

use super::edges::{Edge, EdgeSites};
use super::search::Deps;
use super::shape::reshaped;
use crate::limits::MAX_INSTANCE_PAIRS;
use crate::mode::Kind;
use crate::nesting::bump_pair_epoch;

/// One lock instance in its class's instance graph.
#[derive(Debug, Default)]
struct Node {
    /// Pairs `self -> other`: `other` was taken while `self` was held.
    after: HashMap<usize, Edge>,
    /// Instances with a pair into `self`.
    before: HashSet<usize>,
}

/// The instance graph of one class.
#[derive(Debug, Default)]
pub(crate) struct ClassInstances {
    nodes: HashMap<usize, Node>,
}

impl ClassInstances {
    /// The recorded pair `from -> to`, if any.
    pub fn pair(&self, from: usize, to: usize) -> Option<&Edge> {
        self.nodes.get(&from)?.after.get(&to)
    }
}

/// The instance graph of one class, as the strong-path search sees it.
impl Deps for ClassInstances {
    type Node = usize;

    fn has_way_in(&self, n: usize) -> bool {
        self.nodes.get(&n).is_some_and(|c| !c.before.is_empty())
    }

    fn has_way_out(&self, n: usize) -> bool {
        self.nodes.get(&n).is_some_and(|c| !c.after.is_empty())
    }

    fn for_each_after(&self, n: usize, f: &mut dyn FnMut(usize, &Edge)) {
        if let Some(c) = self.nodes.get(&n) {
            for (&to, e) in &c.after {
                f(to, e);
            }
        }
    }
}

/// All classes' instance graphs.
#[derive(Debug, Default)]
pub(crate) struct Instances {
    /// By class slot index.
    classes: HashMap<u32, ClassInstances>,
    /// The classes in which each instance has a node, so a freed lock is found at once.
    of_instance: HashMap<usize, Vec<u32>>,
    /// The instances of `of_instance` by their [`hint`]: a lock map dropped somewhere else
    /// than where its pairs were recorded (it moved) finds their instance by it.
    by_hint: HashMap<u64, Vec<usize>>,
    /// Recorded (pair, kind) entries, against [`MAX_INSTANCE_PAIRS`].
    pairs: usize,
}

/// Bits of an instance's address (from bit 3) that a [`hint`] keeps.
pub(crate) const HINT_ADDRESS_BITS: u32 = 27;

/// What a lock map keeps of the instance key its pairs were recorded under (see
/// `LockMap::pair_key`): its pair tag and bits 3 to 29 of the address it had then, all that
/// fits in the map's spare bits. Two instances share a hint only if their maps' tags agree and
/// their addresses agree in those bits.
pub(crate) const fn hint(tag: u16, address_bits: u32) -> u64 {
    (tag as u64) << HINT_ADDRESS_BITS | (address_bits as u64 & ((1 << HINT_ADDRESS_BITS) - 1))
}

/// The [`hint`] of the instance key `key` (an address with the tag in its top 16 bits).
pub(crate) const fn hint_of_key(key: usize) -> u64 {
    hint(
        (key >> 48) as u16,
        ((key >> 3) & ((1 << HINT_ADDRESS_BITS) - 1)) as u32,
    )
}

/// Takes `instance` (no longer in `of_instance`) out of `by_hint`.
fn unhint(by_hint: &mut HashMap<u64, Vec<usize>>, instance: usize) {
    let h = hint_of_key(instance);
    if let Some(v) = by_hint.get_mut(&h) {
        v.retain(|&i| i != instance);
        if v.is_empty() {
            by_hint.remove(&h);
        }
    }
}

/// [`MAX_INSTANCE_PAIRS`] entries are recorded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PairsFull;

impl Instances {
    /// The instance graph of class slot `class`, if it has pairs.
    pub fn class(&self, class: u32) -> Option<&ClassInstances> {
        self.classes.get(&class)
    }

    /// True if the pair `from -> to` of this kind is recorded for class slot `class`.
    pub fn has(&self, class: u32, from: usize, to: usize, kind: Kind) -> bool {
        self.class(class)
            .and_then(|c| c.pair(from, to))
            .is_some_and(|e| e.has(kind))
    }

    /// The number of recorded (pair, kind) entries.
    pub fn pair_count(&self) -> usize {
        self.pairs
    }

    /// Records the pair `from -> to` of this kind in class slot `class`; returns whether it
    /// is new. Fails, recording nothing, when [`MAX_INSTANCE_PAIRS`] entries are kept.
    pub fn add(
        &mut self,
        class: u32,
        from: usize,
        to: usize,
        kind: Kind,
        sites: EdgeSites,
    ) -> Result<bool, PairsFull> {
        if self.has(class, from, to, kind) {
            return Ok(false);
        }
        if self.pairs >= MAX_INSTANCE_PAIRS {
            return Err(PairsFull);
        }
        let ci = self.classes.entry(class).or_default();
        for n in [from, to] {
            if !ci.nodes.contains_key(&n) {
                ci.nodes.insert(n, Node::default());
                let classes = self.of_instance.entry(n).or_default();
                if classes.is_empty() {
                    self.by_hint.entry(hint_of_key(n)).or_default().push(n);
                }
                classes.push(class);
            }
        }
        ci.nodes
            .get_mut(&from)
            .expect("inserted above")
            .after
            .entry(to)
            .or_default()
            .insert(kind, sites);
        ci.nodes
            .get_mut(&to)
            .expect("inserted above")
            .before
            .insert(from);
        self.pairs += 1;
        reshaped();
        Ok(true)
    }

    /// Forgets every pair into or out of `instance`, in every class (its lock is freed or
    /// re-initialised), and invalidates the threads' caches of checked pairs.
    ///
    /// The order the instance stood for between others stays: for each pair `a -> instance`
    /// and `instance -> b` that make a strong path, `a -> b` is recorded in their place (a
    /// thread that held `a`, `instance` and `b` in an ordered run recorded only the pairs
    /// with the run's top, so `a -> b` may have been known only through `instance`).
    pub fn forget(&mut self, instance: usize) {
        let Some(classes) = self.of_instance.remove(&instance) else {
            return;
        };
        unhint(&mut self.by_hint, instance);
        for class in classes {
            let Some(ci) = self.classes.get_mut(&class) else {
                continue;
            };
            let Some(node) = ci.nodes.remove(&instance) else {
                continue;
            };
            let mut touched = Vec::new();
            let mut outs = Vec::new();
            for (to, edge) in node.after {
                self.pairs -= edge.kinds().count();
                if let Some(t) = ci.nodes.get_mut(&to) {
                    t.before.remove(&instance);
                    touched.push(to);
                    outs.push((to, edge));
                }
            }
            let mut ins = Vec::new();
            for from in node.before {
                if let Some(f) = ci.nodes.get_mut(&from) {
                    if let Some(edge) = f.after.remove(&instance) {
                        self.pairs -= edge.kinds().count();
                        ins.push((from, edge));
                    }
                    touched.push(from);
                }
            }
            self.bypass(class, &ins, &outs);
            let Some(ci) = self.classes.get_mut(&class) else {
                continue;
            };
            // Nodes left with no pair go too, so memory follows the pairs.
            for n in touched {
                if ci
                    .nodes
                    .get(&n)
                    .is_some_and(|x| x.after.is_empty() && x.before.is_empty())
                {
                    ci.nodes.remove(&n);
                    if let Some(v) = self.of_instance.get_mut(&n) {
                        v.retain(|&c| c != class);
                        if v.is_empty() {
                            self.of_instance.remove(&n);
                            unhint(&mut self.by_hint, n);
                        }
                    }
                }
            }
            if ci.nodes.is_empty() {
                self.classes.remove(&class);
            }
        }
        bump_pair_epoch();
    }

    /// Records `a -> b` in class slot `class` for each pair `a -> x` in `ins` and `x -> b` in
    /// `outs` (the pairs of a forgotten instance `x`) whose kinds make a strong path, with the
    /// kind of that path (`a`'s holding, `b`'s acquisition) and the sites of its two ends.
    /// Past [`MAX_INSTANCE_PAIRS`] the rest is dropped, as any new pair is.
    fn bypass(&mut self, class: u32, ins: &[(usize, Edge)], outs: &[(usize, Edge)]) {
        for (a, e_in) in ins {
            for (b, e_out) in outs {
                if a == b {
                    continue;
                }
                for k1 in e_in.kinds() {
                    for k2 in e_out.kinds() {
                        if !k2.may_follow(k1.acquirer) {
                            continue;
                        }
                        let (Some(s1), Some(s2)) = (e_in.sites(k1), e_out.sites(k2)) else {
                            continue;
                        };
                        let kind = Kind {
                            holder: k1.holder,
                            acquirer: k2.acquirer,
                        };
                        let sites = EdgeSites {
                            prev: s1.prev,
                            next: s2.next,
                            prev_lock: s1.prev_lock,
                            next_lock: s2.next_lock,
                            trace: s1.trace.clone(),
                        };
                        if self.add(class, *a, *b, kind, sites).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Forgets the pairs of class slot `class` (the class is zapped).
    pub fn drop_class(&mut self, class: u32) {
        let Some(ci) = self.classes.remove(&class) else {
            return;
        };
        for (n, node) in ci.nodes {
            self.pairs -= node
                .after
                .values()
                .map(|e| e.kinds().count())
                .sum::<usize>();
            if let Some(v) = self.of_instance.get_mut(&n) {
                v.retain(|&c| c != class);
                if v.is_empty() {
                    self.of_instance.remove(&n);
                    unhint(&mut self.by_hint, n);
                }
            }
        }
        bump_pair_epoch();
    }

    /// Forgets, as [`forget`](Self::forget) does, every instance whose [`hint`] is `hint`:
    /// normally the one instance a dropped map's pairs were recorded under, wherever the map
    /// was dropped.
    pub fn forget_hinted(&mut self, hint: u64) {
        let Some(instances) = self.by_hint.get(&hint).cloned() else {
            return;
        };
        for instance in instances {
            self.forget(instance);
        }
    }

    /// Forgets every pair.
    pub fn clear(&mut self) {
        *self = Instances::default();
        bump_pair_epoch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::search::strong_path;
    use crate::mode::Mode;

    fn sites() -> EdgeSites {
        EdgeSites::for_tests()
    }

    const EN: Kind = Kind {
        holder: crate::mode::Hold::E,
        acquirer: Mode::Exclusive,
    };

    #[test]
    fn pairs_are_per_class_and_a_cycle_is_found_among_them() {
        let mut i = Instances::default();
        assert_eq!(i.add(7, 0x10, 0x20, EN, sites()), Ok(true));
        assert_eq!(i.add(7, 0x10, 0x20, EN, sites()), Ok(false));
        assert_eq!(i.add(7, 0x20, 0x30, EN, sites()), Ok(true));
        assert!(i.has(7, 0x10, 0x20, EN));
        assert!(!i.has(8, 0x10, 0x20, EN), "another class");
        assert_eq!(i.pair_count(), 2);
        // 0x30 -> 0x10 would close 0x10 -> 0x20 -> 0x30 -> 0x10.
        let path = strong_path(i.class(7).unwrap(), 0x30, 0x10, EN).expect("a cycle");
        assert_eq!(path.len(), 2);
        assert_eq!((path[0].from, path[1].to), (0x10, 0x30));
    }

    #[test]
    fn a_forgotten_instance_takes_its_pairs_and_lonely_nodes_with_it() {
        let mut i = Instances::default();
        i.add(1, 0x10, 0x20, EN, sites()).unwrap();
        i.add(2, 0x20, 0x40, EN, sites()).unwrap();
        i.add(3, 0x50, 0x20, EN, sites()).unwrap();
        i.forget(0x20);
        assert_eq!(i.pair_count(), 0);
        assert!(i.class(1).is_none() && i.class(2).is_none() && i.class(3).is_none());
        assert!(i.of_instance.is_empty());
        // A new lock at 0x20 starts clean: no path through it.
        i.add(1, 0x30, 0x20, EN, sites()).unwrap();
        assert!(strong_path(i.class(1).unwrap(), 0x20, 0x10, EN).is_none());
    }

    #[test]
    fn a_forgotten_instance_leaves_the_order_it_stood_between() {
        let mut i = Instances::default();
        i.add(1, 0x10, 0x20, EN, sites()).unwrap();
        i.add(1, 0x20, 0x30, EN, sites()).unwrap();
        i.forget(0x20);
        assert_eq!(i.pair_count(), 1);
        assert!(i.has(1, 0x10, 0x30, EN));
        assert!(!i.of_instance.contains_key(&0x20));
        // 0x30 -> 0x10 still closes a cycle.
        assert!(strong_path(i.class(1).unwrap(), 0x30, 0x10, EN).is_some());
        // A path that is not strong leaves no pair: a recursive read acquired, then held
        // shared before the next lock.
        let sr = Kind {
            holder: crate::mode::Hold::E,
            acquirer: Mode::RecursiveRead,
        };
        let sn = Kind {
            holder: crate::mode::Hold::S,
            acquirer: Mode::Exclusive,
        };
        i.add(2, 0x10, 0x20, sr, sites()).unwrap();
        i.add(2, 0x20, 0x30, sn, sites()).unwrap();
        i.forget(0x20);
        assert!(i.class(2).is_none());
    }

    #[test]
    fn dropping_a_class_forgets_its_pairs_only() {
        let mut i = Instances::default();
        i.add(1, 0x10, 0x20, EN, sites()).unwrap();
        i.add(2, 0x10, 0x20, EN, sites()).unwrap();
        i.drop_class(1);
        assert_eq!(i.pair_count(), 1);
        assert!(i.has(2, 0x10, 0x20, EN));
        assert_eq!(i.of_instance[&0x10], [2]);
    }
}
