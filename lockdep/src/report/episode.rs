//! Capacity-exhaustion episodes and their rate limit.
//!
//! Each crossing of a fixed limit is an *episode*, numbered per limit from 1. Episode `n` is
//! delivered if `n` is a power of two (1, 2, 4, 8, ...), so a program that keeps crossing a
//! limit gets a report the first times and then logarithmically fewer, each saying which
//! episode it is; every episode is counted. A count, not a clock: the same run always gives
//! the same reports.

use std::sync::atomic::{AtomicU64, Ordering};

use super::types::Capacity;

/// Episodes so far, per limit: `[held-lock depth, classes, instance pairs]`.
static EPISODES: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];

fn index(what: Capacity) -> usize {
    match what {
        Capacity::HeldLocks => 0,
        Capacity::Classes => 1,
        Capacity::InstancePairs => 2,
    }
}

/// Starts a new episode of `what` and returns its number (from 1). Thread-safe.
pub(crate) fn next(what: Capacity) -> u64 {
    // Relaxed: a counter; each caller gets a distinct number, nothing else is ordered by it.
    EPISODES[index(what)].fetch_add(1, Ordering::Relaxed) + 1
}

/// Whether episode `n` is delivered (the rate limit, see the module docs).
pub(crate) fn is_delivered(n: u64) -> bool {
    n.is_power_of_two()
}

/// Starts counting from 1 again (the validator's reset).
pub(crate) fn clear() {
    for e in &EPISODES {
        // Relaxed: a counter, see `next`.
        e.store(0, Ordering::Relaxed);
    }
}
