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

/// One generation word per class slot: odd while a class lives in the slot, even while free.
/// A zero-initialized static (in .bss, 64 bytes a slot: pages are only touched when classes
/// use them), so the fast path needs no lazy-initialization check.
static GENERATIONS: [Generation; MAX_CLASSES] =
    [const { Generation(AtomicU64::new(0)) }; MAX_CLASSES];

/// True if `id` names a class that has not been zapped.
#[inline]
pub(crate) fn is_live(id: ClassId) -> bool {
    // Every id's index is below MAX_CLASSES (`make_live` makes them all), so the mask, unlike
    // a bounds check, costs no branch and changes no index.
    let slot = &GENERATIONS[id.index() as usize % MAX_CLASSES].0;
    // Relaxed: the answer is advisory. A class zapped right after this check only means the
    // caller validates against a dying class; the graph lock's slow path re-checks, and the
    // dead id can never match a new class because generations do not repeat (2^43 lives of
    // one slot before they wrap: see `ClassId`).
    slot.load(Ordering::Relaxed) == id.generation() && !id.is_none()
}

/// Marks slot `index` live with a new odd generation and returns its id. Caller holds the
/// graph lock (the only writer).
pub(crate) fn make_live(index: u32) -> ClassId {
    let slot = &GENERATIONS[index as usize].0;
    // Relaxed load: only the graph-lock holder writes this word.
    let mut gen = (slot.load(Ordering::Relaxed) + 1) & GEN_MASK;
    if gen & 1 == 0 {
        gen = (gen + 1) & GEN_MASK;
    }
    // Relaxed: readers only compare this word with an id (`is_live`) and read nothing through
    // it; whatever they then need about the class they read under the graph lock.
    slot.store(gen, Ordering::Relaxed);
    ClassId::new(index, gen)
}

/// Marks slot `index` free (even generation). Caller holds the graph lock.
pub(crate) fn make_dead(index: u32) {
    let slot = &GENERATIONS[index as usize].0;
    // Relaxed load: only the graph-lock holder writes this word.
    let gen = slot.load(Ordering::Relaxed);
    if gen & 1 == 1 {
        // Relaxed: as in `make_live`; a reader that still sees the old value validates against
        // a dying class, which the graph lock's slow path then finds zapped.
        slot.store((gen + 1) & GEN_MASK, Ordering::Relaxed);
    }
}
