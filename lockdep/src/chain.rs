//! Chain keys and the chain cache.
//!
//! A chain key is a 64-bit hash of the held-lock stack including the lock being acquired,
//! computed incrementally (the kernel's `iterate_chain_key()`). A chain that was validated
//! once is remembered, so the next identical acquisition skips validation: first in a small
//! per-thread direct-mapped cache (no shared memory touched), then in a global lock-free
//! open-addressing table that is only *read* on the fast path. Inserts happen under the graph
//! lock. Entries are never individually removed: a chain that mentions a zapped class can
//! never match again because class generations never repeat. When the table is full it is
//! flushed (and counted), so it is bounded and never fails.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::types::{ClassId, Mode};

/// Number of slots in the global chain table.
pub const CHAIN_TABLE_SLOTS: usize = 1 << 16;
const PROBE: usize = 16;
/// Number of slots in each thread's chain cache.
pub(crate) const LOCAL_SLOTS: usize = 64;

/// Zero-initialized static (.bss), so lookups need no lazy-initialization check.
static TABLE: [AtomicU64; CHAIN_TABLE_SLOTS] = [const { AtomicU64::new(0) }; CHAIN_TABLE_SLOTS];
static COUNT: AtomicUsize = AtomicUsize::new(0);
static FLUSHES: AtomicUsize = AtomicUsize::new(0);

/// The "folded multiply" of wyhash/foldhash: the 128-bit product's halves xor-ed together.
/// One multiply of latency, and every output bit depends on every input bit.
#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Extends chain key `prev` (0 for the empty stack) with one held lock. Never returns 0.
///
/// The mode and trylock flag are part of the key (locking-selftest `rlock_chaincache_ABBA1`
/// needs the mode; the trylock flag decides which edges the chain produced), and so is
/// `nested` (an acquisition covered by a held nest_lock is validated differently).
#[inline]
pub(crate) fn mix(prev: u64, class: ClassId, mode: Mode, trylock: bool, nested: bool) -> u64 {
    let tag = mode.code() | (u64::from(trylock) << 2) | (u64::from(nested) << 3);
    // The class and tag are spread by one multiply (off the critical path: they do not depend
    // on `prev`), then folded with `prev` by one more.
    let entry = fold_mul(class.0 ^ (tag << 56), 0x9e37_79b9_7f4a_7c15);
    let k = fold_mul(prev.rotate_left(23) ^ entry, 0xa076_1d64_78bd_642f);
    if k == 0 {
        1
    } else {
        k
    }
}

/// True if the global table holds `key`. Lock-free, writes nothing.
pub(crate) fn global_contains(key: u64) -> bool {
    let table = &TABLE;
    let start = key as usize % CHAIN_TABLE_SLOTS;
    for i in 0..PROBE {
        // Relaxed: a chain key is a self-contained value; seeing it means "validated", and the
        // dependencies it stands for are only needed by the slow path, which takes the graph
        // lock (and so synchronizes with the inserter) before reading them.
        match table[(start + i) % CHAIN_TABLE_SLOTS].load(Ordering::Relaxed) {
            0 => return false,
            k if k == key => return true,
            _ => {}
        }
    }
    false
}

/// Inserts `key`; the caller holds the graph lock (the only writer). Flushes the whole table
/// when the probe window is full.
pub(crate) fn global_insert(key: u64) {
    let table = &TABLE;
    let start = key as usize % CHAIN_TABLE_SLOTS;
    for attempt in 0..2 {
        for i in 0..PROBE {
            let slot = &table[(start + i) % CHAIN_TABLE_SLOTS];
            // Relaxed: only the graph-lock holder writes the table.
            match slot.load(Ordering::Relaxed) {
                0 => {
                    // Relaxed: see `global_contains`; the value carries no pointer.
                    slot.store(key, Ordering::Relaxed);
                    // Relaxed: a statistic.
                    COUNT.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                k if k == key => return,
                _ => {}
            }
        }
        if attempt == 0 {
            // Relaxed: a statistic.
            FLUSHES.fetch_add(1, Ordering::Relaxed);
            clear();
        }
    }
}

/// Empties the global table. Caller holds the graph lock.
pub(crate) fn clear() {
    for slot in TABLE.iter() {
        // Relaxed: a concurrent reader that misses just takes the slow path.
        slot.store(0, Ordering::Relaxed);
    }
    // Relaxed: a statistic.
    COUNT.store(0, Ordering::Relaxed);
}

/// Number of chains in the global table.
pub(crate) fn count() -> usize {
    // Relaxed: a statistic.
    COUNT.load(Ordering::Relaxed)
}

/// Number of times the global table was flushed because it was full.
pub(crate) fn flushes() -> usize {
    // Relaxed: a statistic.
    FLUSHES.load(Ordering::Relaxed)
}

/// A thread's direct-mapped cache of validated chain keys.
pub(crate) struct LocalCache {
    slots: [u64; LOCAL_SLOTS],
}

impl LocalCache {
    pub(crate) const fn new() -> LocalCache {
        LocalCache {
            slots: [0; LOCAL_SLOTS],
        }
    }

    #[inline]
    pub(crate) fn contains(&self, key: u64) -> bool {
        self.slots[key as usize % LOCAL_SLOTS] == key
    }

    #[inline]
    pub(crate) fn insert(&mut self, key: u64) {
        self.slots[key as usize % LOCAL_SLOTS] = key;
    }

    pub(crate) fn clear(&mut self) {
        self.slots = [0; LOCAL_SLOTS];
    }
}
