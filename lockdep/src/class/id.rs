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

impl ClassId {
    /// "No class": the lock is tracked on the held stack but not validated (for example
    /// because its key is not registered).
    pub const NONE: ClassId = ClassId(0);

    pub(crate) fn new(index: u32, generation: u32) -> ClassId {
        ClassId((u64::from(generation) << 32) | u64::from(index))
    }

    /// The id as one word: the generation in the high 32 bits, the index in the low 32.
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
        self.0 as u32
    }

    /// The slot generation; odd while the class is live, never 0 for a real class.
    pub fn generation(self) -> u32 {
        (self.0 >> 32) as u32
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
