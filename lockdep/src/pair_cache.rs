//! Each thread's cache of checked instance pairs: the chain cache's companion for chains in
//! which a class is nested in itself.
//!
//! A chain key names classes, not instances, so a cached chain "A then A" says nothing about
//! *which* two instances of A are nested. Such chains are cached with a mark
//! ([`chain::Hit::Nested`](crate::chain::Hit)), and a hit on one is accepted only if every
//! (held instance, new instance) pair of the class is in this cache too; else the acquisition
//! is checked under the graph lock. The cache is direct-mapped, keyed by a hash of the pair,
//! its class and its kind, and emptied whenever the global pair epoch
//! ([`nesting::pair_epoch`](crate::nesting)) moves: a freed lock that had pairs, a change of
//! the nesting rule, or a reset.

use crate::class::ClassId;
use crate::limits::LOCAL_PAIR_SLOTS as SLOTS;
use crate::mode::Kind;

/// A thread's checked instance pairs.
pub(crate) struct PairCache {
    /// The pair epoch the entries were checked under.
    epoch: u64,
    slots: [u64; SLOTS],
}

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
            slots: [0; SLOTS],
        }
    }

    /// Empties the cache if it was filled under another epoch than `epoch`.
    #[inline]
    pub(crate) fn sync(&mut self, epoch: u64) {
        if self.epoch != epoch {
            self.slots = [0; SLOTS];
            self.epoch = epoch;
        }
    }

    /// True if `from -> to` of class `class` and this kind was checked (in this epoch).
    #[inline]
    pub(crate) fn contains(&self, from: usize, to: usize, class: ClassId, kind: Kind) -> bool {
        let t = tag(from, to, class, kind);
        self.slots[t as usize % SLOTS] == t
    }

    /// Remembers `from -> to` as checked; call [`sync`](Self::sync) first.
    pub(crate) fn insert(&mut self, from: usize, to: usize, class: ClassId, kind: Kind) {
        let t = tag(from, to, class, kind);
        self.slots[t as usize % SLOTS] = t;
    }

    pub(crate) fn clear(&mut self) {
        self.slots = [0; SLOTS];
    }
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
        c.sync(5);
        c.insert(0x10, 0x20, class, kind);
        assert!(c.contains(0x10, 0x20, class, kind));
        assert!(!c.contains(0x20, 0x10, class, kind));
        assert!(!c.contains(0x10, 0x20, ClassId::new(4, 1), kind));
        assert!(!c.contains(0x10, 0x20, class, Kind::of(Mode::Read, Mode::Exclusive)));
        c.sync(5);
        assert!(c.contains(0x10, 0x20, class, kind));
        c.sync(6);
        assert!(!c.contains(0x10, 0x20, class, kind));
        c.insert(0x10, 0x20, class, kind);
        c.clear();
        assert!(!c.contains(0x10, 0x20, class, kind));
    }
}
