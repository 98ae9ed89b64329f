//! Each thread's cache of checked instance pairs: the chain cache's companion for chains in
//! which a class is nested in itself.
//!
//! A chain key names classes, not instances, so a cached chain "A then A" says nothing about
//! *which* two instances of A are nested. Such chains are cached with a mark
//! ([`chain::Hit::Nested`](crate::chain::Hit)), and a hit on one is accepted only if every
//! (held instance, new instance) pair of the class is in this cache too; else the acquisition
//! is checked under the graph lock. The cache is set-associative (a set of [`WAYS`] pairs per
//! hash, the oldest replaced first), keyed by a hash of the pair, its class and its kind, so
//! that the few pairs of one program's hot nest do not evict each other by a chance collision
//! of their addresses' hashes (a direct-mapped table of 64 slots gave 8 shards held in order
//! a 28% chance of a pair that missed every round). It is emptied whenever the global pair
//! epoch
//! ([`nesting::pair_epoch`](mod@crate::nesting)) moves: a freed lock that had pairs, a change of
//! the nesting rule, or a reset.
//!
//! Beside the pairs, a few **ordered runs**: for a class whose held instances were taken in an
//! order the instance graph already has (each one's pair from every earlier one, or a path of
//! pairs to it), the run names that set of held instances (by a fingerprint of their
//! addresses) and its most recent member, the top. While the same instances
//! are held, every one of them has a path of exclusive pairs to the top, so a new instance
//! needs only its pair with the top: holding N shards of a sharded map costs one pair check
//! per acquisition, not N. A run is per class, checked under one pair epoch (emptied with the
//! pairs), and trusted only while the fingerprint of the held instances matches. The runs
//! are looked up by class among all [`RUNS`] of them, so two classes nested in themselves at
//! once keep a run each whatever their ids are.
//!
//! A run taken again the same way (the same instances, bottom to top: a sharded map's "lock
//! every shard" in a loop) skips even that: the push of each shard leaves in its slot a
//! nested memo of the check that accepted it, which holds while no slot's shown fields have
//! changed and the cache has not been emptied for a new epoch (`Slot::holds_nested_memo`).
//! Then an acquisition costs the general path's entry, its chain-cache lookup and a few
//! compares, with no walk of the held locks.

use crate::class::ClassId;
use crate::limits::LOCAL_PAIR_SLOTS as SLOTS;
use crate::mode::Kind;

/// The pairs of one set: a pair's tag picks its set, and it may sit in any of them.
pub(crate) const WAYS: usize = 4;

/// The number of sets kept in the thread's state itself.
const SETS: usize = SLOTS / WAYS;

/// The most sets a thread's cache grows to (see [`PairCache::reserve`]): as many pairs as
/// the graph holds at most, 512 KiB.
const MAX_SETS: usize = crate::limits::MAX_INSTANCE_PAIRS / WAYS;

/// The number of ordered runs kept (looked up by class, the oldest replaced first): a few
/// classes nested in themselves at once (shards, and a lock inside each shard) keep theirs.
const RUNS: usize = 4;

/// An ordered run of one class (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Run {
    class: ClassId,
    /// [`fingerprint`] of the held instances of the class, the top included.
    held: u64,
    /// The top's instance.
    top: usize,
}

/// Adds `instance` to the fingerprint `fp` of a set of a class's held instances (0 for the
/// empty set). A sum of per-instance hashes: the same set gives the same fingerprint in any
/// order, and the terms are independent, so a scan of a deep stack is not one long chain of
/// multiplications.
#[inline]
pub(crate) fn fingerprint(fp: u64, instance: usize) -> u64 {
    let x = (instance as u64 ^ (instance as u64 >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    fp.wrapping_add(x ^ (x >> 29))
}

/// A 64-bit hash of `words`: each folded in with a multiply, the sum mixed with MurmurHash3's
/// 64-bit finalizer. For keys that are compared whole (a kept scan's tag, a kept chain's
/// sites), where SipHash cost more than the lookups it keyed.
pub(crate) fn hash_words(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h = 0u64;
    for w in words {
        h = (h.rotate_left(23) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ h >> 33
}

/// A thread's checked instance pairs.
pub(crate) struct PairCache {
    /// The pair epoch the entries were checked under.
    epoch: u64,
    /// [`SETS`] sets of [`WAYS`] tags each (0: empty), the newest first in each.
    slots: [[u64; WAYS]; SETS],
    /// Used instead of `slots` once a thread holds more instances of one class than `slots`
    /// keeps the pairs of (see [`reserve`](Self::reserve)): a power of two of sets, on the
    /// heap, and empty (no allocation) until then.
    big: Vec<[u64; WAYS]>,
    /// The newest first.
    runs: [Option<Run>; RUNS],
    /// A scan of the held stack for a run that the fast path of an acquisition made and the
    /// slow path of the same acquisition reuses: (tag of the acquisition, the scan's result).
    scan: Option<(u64, Option<(u64, usize)>)>,
}

/// What a scan for a run found: the fingerprint of the held instances of the class and the
/// stack index of the most recent one, or `None` (no candidate run).
pub(crate) type Scan = Option<(u64, usize)>;

/// The slot value of a pair: never 0 (an empty slot).
#[inline]
fn tag(from: usize, to: usize, class: ClassId, kind: Kind) -> u64 {
    let mut h = (from as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h = (h.rotate_left(29) ^ to as u64).wrapping_mul(0xa076_1d64_78bd_642f);
    h = (h.rotate_left(31) ^ class.to_bits() ^ ((kind.index() as u64) << 58))
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 32;
    if h == 0 {
        1
    } else {
        h
    }
}

impl PairCache {
    pub(crate) const fn new() -> PairCache {
        PairCache {
            epoch: 0,
            slots: [[0; WAYS]; SETS],
            big: Vec::new(),
            runs: [None; RUNS],
            scan: None,
        }
    }

    /// The sets in use: `big` once it exists, else `slots`.
    #[inline]
    fn sets(&self) -> &[[u64; WAYS]] {
        if self.big.is_empty() {
            &self.slots
        } else {
            &self.big
        }
    }

    #[inline]
    fn sets_mut(&mut self) -> &mut [[u64; WAYS]] {
        if self.big.is_empty() {
            &mut self.slots
        } else {
            &mut self.big
        }
    }

    /// Grows the cache, keeping its pairs, so that it can keep the pairs of a run of `held`
    /// instances of one class held at once (the pair of each with the next) with room to
    /// spare: 16 slots per held instance (at that load, a set overflows its 4 ways in about
    /// one run in 1,000 of 300 shards), up to [`MAX_SETS`] sets. Below that nothing
    /// changes. Without it, a thread that holds more shards at once than the cache keeps
    /// would lose pairs every round and check them again under the graph lock.
    pub(crate) fn reserve(&mut self, held: usize) {
        let want = (held.saturating_mul(16) / WAYS)
            .next_power_of_two()
            .min(MAX_SETS);
        if want <= self.sets().len() {
            return;
        }
        let old = std::mem::replace(&mut self.big, vec![[0; WAYS]; want]);
        let kept: Vec<u64> = if old.is_empty() {
            self.slots.iter().flatten().copied().collect()
        } else {
            old.iter().flatten().copied().collect()
        };
        self.slots = [[0; WAYS]; SETS];
        // Oldest first, so that each set ends newest first again.
        for t in kept.into_iter().rev().filter(|&t| t != 0) {
            self.insert_tag(t);
        }
    }

    /// Gives back the grown cache's memory, if it grew (a thread past its exit check): its
    /// pairs go with it, and the inline sets (emptied when it grew) are used again. Nothing
    /// to do, and nothing cleared, if it never grew.
    pub(crate) fn shrink(&mut self) {
        if !self.big.is_empty() {
            self.big = Vec::new();
        }
    }

    /// Empties the cache if it was filled under another epoch than `epoch`; true if it did
    /// (then the facts checked under the old epoch are gone, and so must be whatever else was
    /// concluded from them: see `ThreadState::sync_pairs`).
    #[inline]
    #[must_use]
    pub(crate) fn sync(&mut self, epoch: u64) -> bool {
        if self.epoch == epoch {
            return false;
        }
        self.sets_mut().fill([0; WAYS]);
        self.runs = [None; RUNS];
        self.epoch = epoch;
        true
    }

    /// True if the cache was filled under `epoch` (see [`sync`](Self::sync)).
    #[inline(always)]
    pub(crate) fn is_synced(&self, epoch: u64) -> bool {
        self.epoch == epoch
    }

    /// True if the held instances of `class` with fingerprint `held` (see [`fingerprint`])
    /// and most recent instance `top` are an ordered run checked under `epoch`: each has a
    /// path of exclusive pairs to `top`.
    #[inline]
    pub(crate) fn is_run(&self, epoch: u64, class: ClassId, held: u64, top: usize) -> bool {
        let run = Some(Run { class, held, top });
        self.epoch == epoch && self.runs.contains(&run)
    }

    /// Keeps `scan`, the scan made for the acquisition `tag`, for its slow path.
    pub(crate) fn keep_scan(&mut self, tag: u64, scan: Scan) {
        self.scan = Some((tag, scan));
    }

    /// The scan kept for the acquisition `tag`, if any; forgets whatever was kept (a scan is
    /// good for one acquisition only).
    pub(crate) fn take_scan(&mut self, tag: u64) -> Option<Scan> {
        match self.scan.take() {
            Some((t, scan)) if t == tag => Some(scan),
            _ => None,
        }
    }

    /// Remembers that the held instances of `class` with fingerprint `held`, the most recent
    /// `top`, are an ordered run; call [`sync`](Self::sync) first.
    pub(crate) fn set_run(&mut self, class: ClassId, held: u64, top: usize) {
        // The class's own run if it has one (a class has one run), else the oldest.
        let at = self
            .runs
            .iter()
            .position(|r| r.is_some_and(|r| r.class == class))
            .unwrap_or(RUNS - 1);
        self.runs[..=at].rotate_right(1);
        self.runs[0] = Some(Run { class, held, top });
    }

    /// True if `from -> to` of class `class` and this kind was checked (in this epoch).
    #[inline]
    pub(crate) fn contains(&self, from: usize, to: usize, class: ClassId, kind: Kind) -> bool {
        let t = tag(from, to, class, kind);
        let sets = self.sets();
        sets[set_of(t, sets.len())].contains(&t)
    }

    /// Remembers `from -> to` as checked; call [`sync`](Self::sync) first.
    pub(crate) fn insert(&mut self, from: usize, to: usize, class: ClassId, kind: Kind) {
        self.insert_tag(tag(from, to, class, kind));
    }

    fn insert_tag(&mut self, t: u64) {
        let sets = self.sets_mut();
        let n = sets.len();
        let set = &mut sets[set_of(t, n)];
        if !set.contains(&t) {
            // The oldest leaves; the new pair goes first.
            set.rotate_right(1);
            set[0] = t;
        }
    }

    pub(crate) fn clear(&mut self) {
        self.sets_mut().fill([0; WAYS]);
        self.runs = [None; RUNS];
        self.scan = None;
    }
}

/// The set of the pair tagged `t` among `sets` sets (a power of two): its top bits (the low
/// ones were mixed less).
#[inline]
fn set_of(t: u64, sets: usize) -> usize {
    debug_assert!(sets.is_power_of_two());
    ((t >> 40) ^ (t >> 16)) as usize & (sets - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mode::Mode;

    #[test]
    fn pairs_are_told_apart_by_order_class_and_kind_and_the_epoch_empties_it() {
        let mut c = PairCache::new();
        let (class, kind) = (
            ClassId::new(3, 1),
            Kind::of(Mode::Exclusive, Mode::Exclusive),
        );
        assert!(c.sync(5), "a new epoch");
        c.insert(0x10, 0x20, class, kind);
        assert!(c.contains(0x10, 0x20, class, kind));
        assert!(!c.contains(0x20, 0x10, class, kind));
        assert!(!c.contains(0x10, 0x20, ClassId::new(4, 1), kind));
        assert!(!c.contains(0x10, 0x20, class, Kind::of(Mode::Read, Mode::Exclusive)));
        assert!(!c.sync(5), "the same epoch");
        assert!(c.contains(0x10, 0x20, class, kind));
        assert!(c.sync(6));
        assert!(!c.contains(0x10, 0x20, class, kind));
        c.insert(0x10, 0x20, class, kind);
        c.clear();
        assert!(!c.contains(0x10, 0x20, class, kind));
    }

    /// Pairs whose tags share a set are all kept up to [`WAYS`]; one more replaces the one
    /// inserted first, and a pair inserted again does not take a second way.
    #[test]
    fn a_set_keeps_its_ways_and_replaces_the_oldest() {
        let mut c = PairCache::new();
        let (class, kind) = (
            ClassId::new(3, 1),
            Kind::of(Mode::Exclusive, Mode::Exclusive),
        );
        assert!(c.sync(1));
        let set = set_of(tag(0x10, 0x1000, class, kind), SETS);
        let same_set: Vec<usize> = (0x1000..)
            .step_by(64)
            .filter(|&to| set_of(tag(0x10, to, class, kind), SETS) == set)
            .take(WAYS + 1)
            .collect();
        for &to in &same_set[..WAYS] {
            c.insert(0x10, to, class, kind);
            c.insert(0x10, to, class, kind);
        }
        assert!(same_set[..WAYS]
            .iter()
            .all(|&to| c.contains(0x10, to, class, kind)));
        c.insert(0x10, same_set[WAYS], class, kind);
        assert!(
            !c.contains(0x10, same_set[0], class, kind),
            "the oldest left"
        );
        assert!(same_set[1..]
            .iter()
            .all(|&to| c.contains(0x10, to, class, kind)));
    }

    /// Growing keeps every pair (and the run), the grown cache empties on a new epoch like
    /// the inline one, and shrinking gives the memory back, empty.
    #[test]
    fn a_grown_cache_keeps_its_pairs() {
        let mut c = PairCache::new();
        let (class, kind) = (
            ClassId::new(3, 1),
            Kind::of(Mode::Exclusive, Mode::Exclusive),
        );
        assert!(c.sync(1));
        for to in 1..=40 {
            c.insert(0x10, to * 64, class, kind);
        }
        let kept: Vec<usize> = (1..=40)
            .filter(|&to| c.contains(0x10, to * 64, class, kind))
            .collect();
        c.set_run(class, 5, 0x40);
        c.reserve(1_000);
        assert!(c.big.len() >= 4_000 / WAYS && c.big.len().is_power_of_two());
        assert!(kept
            .iter()
            .all(|&to| c.contains(0x10, to * 64, class, kind)));
        assert!(c.is_run(1, class, 5, 0x40));
        c.reserve(10);
        assert!(!c.big.is_empty(), "never shrinks on its own");
        assert!(c.sync(2));
        assert!(!c.contains(0x10, 64, class, kind));
        c.insert(0x10, 64, class, kind);
        c.shrink();
        assert!(c.big.is_empty());
        assert!(!c.contains(0x10, 64, class, kind));
    }

    /// Each class keeps its own run whatever its id, a class's new run replaces its old one,
    /// and past [`RUNS`] classes the one set longest ago leaves.
    #[test]
    fn runs_are_kept_per_class_and_the_oldest_class_leaves() {
        let mut c = PairCache::new();
        assert!(c.sync(1));
        // Ids congruent modulo RUNS: a table indexed by id would keep one of them.
        let classes: Vec<ClassId> = (0..=RUNS as u32)
            .map(|i| ClassId::new(i * RUNS as u32, 1))
            .collect();
        for (i, &class) in classes[..RUNS].iter().enumerate() {
            c.set_run(class, 7, 0x100 + i);
        }
        for (i, &class) in classes[..RUNS].iter().enumerate() {
            assert!(c.is_run(1, class, 7, 0x100 + i));
        }
        c.set_run(classes[0], 8, 0x200);
        assert!(
            !c.is_run(1, classes[0], 7, 0x100),
            "replaced by its new run"
        );
        assert!(c.is_run(1, classes[0], 8, 0x200));
        c.set_run(classes[RUNS], 9, 0x300);
        assert!(!c.is_run(1, classes[1], 7, 0x101), "the oldest class left");
        assert!(c.is_run(1, classes[0], 8, 0x200));
        assert!(c.is_run(1, classes[RUNS], 9, 0x300));
        assert!(!c.is_run(2, classes[0], 8, 0x200), "another epoch");
    }
}
