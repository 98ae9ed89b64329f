//! One hazard-pointer slot: the protected value plus a release sequence.
//!
//! The value word is `0` (free), an even address (protects that address), or an odd
//! *wildcard* `(generation << 1) | 1` that a reader publishes while it loads the pointer it
//! is about to protect. A wildcard blocks every synchronizer whose generation is newer than
//! the wildcard's: such a reader may still be about to publish any address.
//!
//! The release sequence `seq` counts the slot's releases. The owner bumps it before each
//! clear, so a synchronizer that once saw the slot blocking with sequence `s` knows the
//! protection it saw has ended as soon as it reads any other sequence, even if the reader
//! has meanwhile protected the same (permanent) address again. This is what keeps readers
//! that keep re-taking a bucket head from starving `synchronize`.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::primitive::AtomicUsize;

/// A wildcard for `generation`. Odd, so it can never equal a protected address (which
/// [`crate::Domain`] requires to be at least 2-aligned).
#[inline(always)]
pub(crate) fn wildcard(generation: usize) -> usize {
    (generation << 1) | 1
}

/// A slot's value and release sequence as one synchronizer observation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Observation {
    pub(crate) value: usize,
    pub(crate) seq: usize,
}

/// A hazard-pointer slot: 16 bytes, four to a cache line.
#[derive(Debug)]
pub(crate) struct Slot {
    value: AtomicUsize,
    seq: AtomicUsize,
}

impl Slot {
    pub(crate) fn new() -> Self {
        Slot {
            value: AtomicUsize::new(0),
            seq: AtomicUsize::new(0),
        }
    }

    /// Owner only: publish `value` (a wildcard or an address).
    ///
    /// Release: a synchronizer that reads this value with Acquire must then read a release
    /// sequence at least as new as this protection's (the owner's previous `release` bumped
    /// `seq` before this store), or it could take a stale sequence for a release. On x86 a
    /// Release store is a plain `mov`.
    #[inline(always)]
    pub(crate) fn publish(&self, value: usize) {
        self.value.store(value, Release);
    }

    /// Owner only: end the current protection. Bumps the release sequence, then clears.
    #[inline(always)]
    pub(crate) fn release(&self) {
        // Relaxed: only the owner writes `seq`, so it reads its own last store.
        let s = self.seq.load(Relaxed);
        // Release: the read-side critical section happens-before any synchronizer that
        // reads the new sequence with Acquire (in `observe`) and concludes "released".
        self.seq.store(s.wrapping_add(1), Release);
        // Release: the same for a synchronizer that reads the cleared value.
        self.value.store(0, Release);
    }

    /// Owner only (or a thread that owns the slot through a detached guard): the value it
    /// published last. Relaxed: the owner reads its own store.
    #[inline]
    pub(crate) fn owner_value(&self) -> usize {
        self.value.load(Relaxed)
    }

    /// Synchronizer: the value alone, for a one-pass scan that waits for nothing (the
    /// release sequence only matters to a scan that waits). Acquire: as in `observe`.
    #[inline]
    pub(crate) fn load_value(&self) -> usize {
        self.value.load(Acquire)
    }

    /// Synchronizer: read value, then sequence.
    ///
    /// Both Acquire. Value first: if it shows a protection of generation `j`, the Acquire
    /// makes the `seq` store that preceded it visible, so the sequence read next is at
    /// least `j`'s; a later different sequence therefore proves protection `j` ended.
    /// Acquire on both also makes a reader's critical section, which precedes its
    /// Release clear or Release bump, happen-before whatever the synchronizer's caller
    /// does after `synchronize` returns (the "no access after free" half).
    #[inline]
    pub(crate) fn observe(&self) -> Observation {
        let value = self.value.load(Acquire);
        let seq = self.seq.load(Acquire);
        Observation { value, seq }
    }
}
