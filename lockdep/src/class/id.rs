//! The identity of one lock class.

use std::fmt;

/// The identity of one lock class: a slot index plus the slot's generation.
///
/// A class slot is reused after its class is zapped (its key was unregistered, or the
/// validator was [`reset`](crate::reset)), but the generation changes every time, so an old
/// id never names the new class. Idea: Abseil's versioned `GraphId` (`absl/synchronization/
/// internal/graphcycles.h`), and the generation-tagged class index proposed for a userspace
/// lockdep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassId(u64);

/// Bits of a [`ClassId`] below the generation: the index (16 bits, as `MAX_CLASSES` is
/// 2^16), then 4 bits that are always 0, which a chain key's tag occupies
/// (`chain::extend`), so that no generation can alias a mode.
const GEN_SHIFT: u32 = 20;

impl ClassId {
    /// Where the generation starts in [`to_bits`](Self::to_bits).
    pub(crate) const GEN_SHIFT: u32 = GEN_SHIFT;
}
/// The index's bits.
const INDEX_MASK: u64 = 0xffff;
/// The most generations a slot goes through before its numbers repeat: 44 bits (2^43 lives,
/// years of a class created and zapped every microsecond).
pub(crate) const GEN_MASK: u64 = (1 << (64 - GEN_SHIFT)) - 1;
const _: () = assert!(crate::limits::MAX_CLASSES as u64 == INDEX_MASK + 1);

impl ClassId {
    /// "No class": the lock is tracked on the held stack but not validated (for example
    /// because its key is not registered).
    pub const NONE: ClassId = ClassId(0);

    /// Panics if `index` is not below `MAX_CLASSES` or `generation` has more than 44 bits.
    pub(crate) fn new(index: u32, generation: u64) -> ClassId {
        assert!(u64::from(index) <= INDEX_MASK && generation <= GEN_MASK);
        ClassId((generation << GEN_SHIFT) | u64::from(index))
    }

    /// The id as one word: the generation in the high 44 bits, the index in the low 16, and
    /// bits 16..20 zero.
    #[inline]
    pub(crate) fn to_bits(self) -> u64 {
        self.0
    }

    /// The inverse of [`to_bits`](Self::to_bits).
    #[inline]
    pub(crate) fn from_bits(bits: u64) -> ClassId {
        ClassId(bits)
    }

    /// The class slot index.
    pub fn index(self) -> u32 {
        (self.0 & INDEX_MASK) as u32
    }

    /// The slot generation (44 bits); odd while the class is live, never 0 for a real class.
    pub fn generation(self) -> u64 {
        self.0 >> GEN_SHIFT
    }

    /// True for [`ClassId::NONE`].
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for ClassId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.index(), self.generation())
    }
}
