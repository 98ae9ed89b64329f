//! The class ids a lock map caches, so that an acquisition on a known class takes no lock (the
//! kernel's `lockdep_map::class_cache[]`, two entries).
//!
//! Slot 0 holds the class of subclass 0. Slot 1 holds the class of the most recently used other
//! subclass, *tagged* with that subclass in bits 16..20 of the id, between the index and the
//! generation: class indexes are below 2^16 ([`MAX_CLASSES`]) and the generation starts at
//! bit 20 (`ClassId::to_bits`), so those bits are free, and one atomic word carries both
//! the class and the subclass it belongs to. A word that does not match is a miss, never a
//! wrong class; a stale class is caught by the generation check (`generation::is_live`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::ClassId;
use crate::limits::{MAX_CLASSES, MAX_SUBCLASSES};

/// Where the subclass tag starts in a tagged id.
const TAG_SHIFT: u32 = 16;
/// The tag's bits.
const TAG_MASK: u64 = 0xf << TAG_SHIFT;

// The tag must sit above every class index and below the generation, and hold every subclass.
const _: () = assert!(MAX_CLASSES <= 1 << TAG_SHIFT);
const _: () = assert!(TAG_MASK >> 20 == 0);
const _: () = assert!(MAX_SUBCLASSES as u64 <= (TAG_MASK >> TAG_SHIFT) + 1);

/// A class id of a non-zero subclass with that subclass in its tag bits: the word of slot 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tagged(u64);

impl Tagged {
    /// Tags `id` (a class of `subclass`, 1..[`MAX_SUBCLASSES`]).
    fn new(id: ClassId, subclass: u8) -> Tagged {
        debug_assert!(u64::from(id.index()) < 1 << TAG_SHIFT && subclass < MAX_SUBCLASSES);
        Tagged(id.to_bits() | (u64::from(subclass) << TAG_SHIFT))
    }

    /// The class, if this word was tagged with `subclass`; else [`ClassId::NONE`]. An empty
    /// word (0) matches no non-zero subclass.
    #[inline]
    fn class_for(self, subclass: u8) -> ClassId {
        if (self.0 & TAG_MASK) >> TAG_SHIFT == u64::from(subclass) {
            ClassId::from_bits(self.0 & !TAG_MASK)
        } else {
            ClassId::NONE
        }
    }
}

/// A lock map's two cached class ids (16 bytes).
///
/// Thread-safe: any thread may read and replace an entry at any time; every value is a
/// self-checking id, so a lost or stale update costs a lookup under the graph lock, nothing
/// more.
pub(crate) struct ClassCache {
    /// Slot 0: the class of subclass 0. Slot 1: a [`Tagged`] class of another subclass. 0 when
    /// empty.
    slots: [AtomicU64; 2],
}

impl ClassCache {
    pub(crate) const fn new() -> ClassCache {
        ClassCache {
            slots: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// The cached class for `subclass`, or [`ClassId::NONE`].
    #[inline]
    pub(crate) fn get(&self, subclass: u8) -> ClassId {
        // Relaxed (both loads): the value is a self-validating class id (checked against the
        // class generation table before use), and nothing is read through it.
        if subclass == 0 {
            return ClassId::from_bits(self.slots[0].load(Ordering::Relaxed));
        }
        Tagged(self.slots[1].load(Ordering::Relaxed)).class_for(subclass)
    }

    /// Remembers `id` as the class of `subclass` (0..[`MAX_SUBCLASSES`]).
    pub(crate) fn set(&self, subclass: u8, id: ClassId) {
        // Relaxed (both stores): see `get`.
        if subclass == 0 {
            self.slots[0].store(id.to_bits(), Ordering::Relaxed);
        } else {
            self.slots[1].store(Tagged::new(id, subclass).0, Ordering::Relaxed);
        }
    }

    /// Forgets both entries.
    pub(crate) fn clear(&mut self) {
        for slot in &mut self.slots {
            *slot.get_mut() = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subclass_zero_is_cached_untagged() {
        let c = ClassCache::new();
        let id = ClassId::new(7, 3);
        c.set(0, id);
        assert_eq!(c.get(0), id);
        assert_eq!(c.slots[0].load(Ordering::Relaxed), id.to_bits());
        assert_eq!(c.get(1), ClassId::NONE, "slot 1 is still empty");
    }

    #[test]
    fn other_subclass_round_trips_with_its_tag_stripped() {
        let c = ClassCache::new();
        // The largest index and an odd generation with high bits set: the tag must touch
        // neither.
        let id = ClassId::new((MAX_CLASSES - 1) as u32, 0xfff_ffff_fff1);
        for sub in 1..MAX_SUBCLASSES {
            c.set(sub, id);
            assert_eq!(c.get(sub), id, "subclass {sub}");
            assert_eq!(c.get(0), ClassId::NONE);
        }
    }

    #[test]
    fn a_different_subclass_misses() {
        let c = ClassCache::new();
        c.set(3, ClassId::new(5, 1));
        assert_eq!(c.get(3), ClassId::new(5, 1));
        for sub in [1, 2, 4, MAX_SUBCLASSES - 1, MAX_SUBCLASSES, 16, 19, 255] {
            assert_eq!(c.get(sub), ClassId::NONE, "subclass {sub}");
        }
        // The last non-zero subclass used replaces the previous one.
        c.set(2, ClassId::new(6, 1));
        assert_eq!(c.get(3), ClassId::NONE);
        assert_eq!(c.get(2), ClassId::new(6, 1));
    }

    #[test]
    fn tag_sits_in_bits_16_to_20() {
        let t = Tagged::new(ClassId::new(1, 1), 5);
        assert_eq!(t.0, (1 << 20) | (5 << 16) | 1);
    }

    #[test]
    fn clear_forgets_both_entries() {
        let mut c = ClassCache::new();
        c.set(0, ClassId::new(1, 1));
        c.set(4, ClassId::new(2, 1));
        c.clear();
        assert_eq!(c.get(0), ClassId::NONE);
        assert_eq!(c.get(4), ClassId::NONE);
    }
}
