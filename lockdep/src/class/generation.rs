//! Lock-free liveness check for class ids (the generation table).
//!
//! The class metadata (name, key, edges) lives in the class table
//! ([`Graph`](crate::graph::Graph)) under the graph lock. The fast path only needs to know whether a class id cached in a lock map still
//! names a live class; it reads one generation word per check and writes nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use super::id::GEN_MASK;
use super::ClassId;
use crate::limits::MAX_CLASSES;

/// One generation word, alone on its cache line: a class created and zapped over and over
/// (a churned dynamic key, whose slot the class table reuses at once) writes only its own
/// line, never one that an acquisition of another class reads.
#[repr(align(64))]
struct Generation(AtomicU64);

/// One word per class slot: the id ([`ClassId::to_bits`]) of the slot's class while it lives
/// (an odd generation); while the slot is free, its index with an even generation, which no
/// class id has. So the fast path's liveness check is one compare of a
/// cached id with this word. A zero-initialized static (in .bss, 64 bytes a slot: pages are
/// only touched when classes use them), so the fast path needs no lazy-initialization check.
static GENERATIONS: [Generation; MAX_CLASSES] =
    [const { Generation(AtomicU64::new(0)) }; MAX_CLASSES];

/// Slot 0's word once [`seal`] ran and before its first class: an even generation, so no id.
const SEALED: u64 = 2 << ClassId::GEN_SHIFT;

/// The word of slot `index`.
#[inline(always)]
fn word(index: u32) -> &'static AtomicU64 {
    // Every id's index is below MAX_CLASSES (`make_live` makes them all), so the mask, unlike
    // a bounds check, costs no branch and changes no index.
    &GENERATIONS[index as usize % MAX_CLASSES].0
}

/// True if `id` names a class that has not been zapped ([`ClassId::NONE`] is never live).
#[inline]
pub(crate) fn is_live(id: ClassId) -> bool {
    !id.is_none() && is_live_sealed(id)
}

/// [`is_live`] for a thread that holds a held-lock record, which [`seal`] ran before it got:
/// then [`ClassId::NONE`] (the bits 0, slot 0's initial word) matches no word, and one compare
/// answers.
#[inline(always)]
pub(crate) fn is_live_sealed(id: ClassId) -> bool {
    // Relaxed: the answer is advisory. A class zapped right after this check only means the
    // caller validates against a dying class; the graph lock's slow path re-checks, and the
    // dead id can never match a new class because generations do not repeat (2^43 lives of
    // one slot before they wrap: see `ClassId`).
    word(id.index()).load(Ordering::Relaxed) == id.to_bits()
}

/// Makes slot 0's word differ from [`ClassId::NONE`]'s bits from now on, if no class made it
/// so already (see [`is_live_sealed`]). Called before a thread gets its held-lock record;
/// cheap after the first call.
pub(crate) fn seal() {
    // Relaxed (all three): a value nothing is read through. A thread that runs this sees its
    // own store or a later one (coherence of one word), and every store makes the word
    // non-zero: `make_live` and `make_dead` never store 0.
    let w = word(0);
    if w.load(Ordering::Relaxed) == 0 {
        let _ = w.compare_exchange(0, SEALED, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The next generation after `gen` of parity `odd`, in 44 bits, never 0.
fn next(gen: u64, odd: bool) -> u64 {
    let mut g = (gen + 1) & GEN_MASK;
    if (g & 1 == 1) != odd {
        g = (g + 1) & GEN_MASK;
    }
    if g == 0 {
        // After 2^44 steps: 0 is slot 0's unsealed word (and `NONE`'s bits).
        g = 2;
    }
    g
}

/// Marks slot `index` live with a new odd generation and returns its id. Caller holds the
/// graph lock (the only writer but [`seal`], whose store this load may see or overwrite:
/// either way the word ends non-zero).
pub(crate) fn make_live(index: u32) -> ClassId {
    let slot = word(index);
    // Relaxed load: only the graph-lock holder writes this word (and `seal`, once, from 0).
    let gen = ClassId::from_bits(slot.load(Ordering::Relaxed)).generation();
    let id = ClassId::new(index, next(gen, true));
    // Relaxed: readers only compare this word with an id (`is_live`) and read nothing through
    // it; whatever they then need about the class they read under the graph lock.
    slot.store(id.to_bits(), Ordering::Relaxed);
    id
}

/// Asks for slot `index`'s word with write intent, ahead of a [`make_dead`] (see
/// [`prefetch`](crate::prefetch)): the word is read by every acquisition of the class, so
/// another CPU usually has the line.
pub(crate) fn prefetch_for_write(index: u32) {
    crate::prefetch::for_write(word(index));
}

/// Marks slot `index` free (even generation). Caller holds the graph lock.
pub(crate) fn make_dead(index: u32) {
    let slot = word(index);
    // Relaxed load: only the graph-lock holder writes this word.
    let gen = ClassId::from_bits(slot.load(Ordering::Relaxed)).generation();
    if gen & 1 == 1 {
        // Relaxed: as in `make_live`; a reader that still sees the old value validates against
        // a dying class, which the graph lock's slow path then finds zapped.
        slot.store(
            ClassId::new(index, next(gen, false)).to_bits(),
            Ordering::Relaxed,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_alternate_and_never_come_back_to_zero() {
        assert_eq!(next(0, true), 1);
        assert_eq!(next(1, false), 2);
        assert_eq!(next(2, true), 3);
        // At the wrap: the next odd one is 1, the next even one skips 0.
        assert_eq!(next(GEN_MASK, true), 1);
        assert_eq!(next(GEN_MASK - 1, false), 2);
        assert_eq!(next(GEN_MASK, false), 2);
    }

    #[test]
    fn a_slot_word_is_the_live_id_and_no_id_when_free() {
        // The last slot: no other test of this crate makes 2^16 classes.
        let index = (MAX_CLASSES - 1) as u32;
        let a = make_live(index);
        assert!(is_live(a) && is_live_sealed(a));
        make_dead(index);
        assert!(!is_live(a) && !is_live_sealed(a));
        let b = make_live(index);
        assert_ne!(a, b);
        assert!(is_live(b) && !is_live(a));
        make_dead(index);
        // Near the wrap: the word never becomes 0 or an old id. Relaxed (here and below): this
        // test is the slot's only user.
        word(index).store(
            ClassId::new(index, GEN_MASK - 1).to_bits(),
            Ordering::Relaxed,
        );
        let c = make_live(index);
        assert_eq!(c.generation(), GEN_MASK);
        make_dead(index);
        assert_ne!(word(index).load(Ordering::Relaxed), 0);
        assert_eq!(
            ClassId::from_bits(word(index).load(Ordering::Relaxed)).generation(),
            2
        );
        assert!(!is_live(c));
    }

    #[test]
    fn none_is_never_live_once_sealed() {
        assert!(!is_live(ClassId::NONE));
        seal();
        // Relaxed: this thread's own seal (or a later store) is what it reads.
        assert_ne!(word(0).load(Ordering::Relaxed), 0);
        assert!(!is_live_sealed(ClassId::NONE));
    }
}
