//! The graph's shape epoch: bumped (under the graph lock) whenever a dependency or an
//! instance pair is recorded, or a class goes with its dependencies. A verdict about a chain
//! that was reached without the graph lock (a cycle that was found before, see
//! `validate::replays`) holds only while the shape it was found in does. (A forgotten instance
//! pair moves the pair epoch, `nesting::pair_epoch`, instead.)

use std::sync::atomic::{AtomicU64, Ordering};

static SHAPE: AtomicU64 = AtomicU64::new(0);

/// The graph's shape epoch. Lock-free.
#[inline]
pub(crate) fn shape() -> u64 {
    // Acquire: pairs with the Release bump, made after the change it announces. A thread that
    // reads the epoch a verdict was stamped with has seen no announced change since; a change
    // whose bump it does not see yet is concurrent with its acquisition, which may be ordered
    // before it.
    SHAPE.load(Ordering::Acquire)
}

/// Announces a change of the graph's shape (call it under the graph lock, after the change).
pub(super) fn reshaped() {
    // Release: see `shape`. Under the graph lock, so the bumps are ordered with the changes.
    SHAPE.fetch_add(1, Ordering::Release);
}
