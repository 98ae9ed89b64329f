//! Chain keys and the chain cache.
//!
//! A chain key is a 64-bit hash of the held-lock stack including the lock being acquired,
//! computed incrementally (the kernel's `iterate_chain_key()`): [`extend`] adds one held lock,
//! and `HeldLock::chain_key_on` (its only caller) decides which fields of a held lock are part
//! of the chain. A chain that was validated
//! once is remembered, so the next identical acquisition skips validation: first in a small
//! per-thread direct-mapped cache (no shared memory touched), then in a global lock-free
//! open-addressing table that is only *read* on the fast path. Inserts happen under the graph
//! lock. Entries are never individually removed: a chain that mentions a zapped class can
//! never match again because class generations never repeat. When the table is full it is
//! flushed (and counted), so it is bounded and never fails.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::class::ClassId;
use crate::limits::{
    CHAIN_TABLE_PROBE as PROBE, CHAIN_TABLE_SLOTS, LOCAL_CHAIN_SLOTS as LOCAL_SLOTS,
};
use crate::mode::Mode;

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
/// The mode and trylock flag are part of the key (the kernel's locking selftest
/// `rlock_chaincache_ABBA1` needs the mode; the trylock flag decides which dependencies the
/// chain produced), and so is `nested` (an acquisition covered by a held nest_lock is validated
/// differently).
#[inline]
pub(crate) fn extend(prev: u64, class: ClassId, mode: Mode, trylock: bool, nested: bool) -> u64 {
    let tag = mode.code() | (u64::from(trylock) << 2) | (u64::from(nested) << 3);
    // The class and tag are spread by one multiply (off the critical path: they do not depend
    // on `prev`), then folded with `prev` by one more.
    let entry = fold_mul(class.to_bits() ^ (tag << 56), 0x9e37_79b9_7f4a_7c15);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn class(i: u32) -> ClassId {
        ClassId::new(i, 1)
    }

    #[test]
    fn chain_key_depends_on_order_and_on_every_field() {
        let base = extend(0, class(1), Mode::Exclusive, false, false);
        let ab = extend(base, class(2), Mode::Exclusive, false, false);
        let ba = extend(
            extend(0, class(2), Mode::Exclusive, false, false),
            class(1),
            Mode::Exclusive,
            false,
            false,
        );
        assert_ne!(ab, ba, "A then B is another chain than B then A");
        assert_eq!(ab, extend(base, class(2), Mode::Exclusive, false, false));
        let variants = [
            extend(base, class(3), Mode::Exclusive, false, false),
            extend(base, ClassId::new(2, 3), Mode::Exclusive, false, false),
            extend(base, class(2), Mode::Read, false, false),
            extend(base, class(2), Mode::RecursiveRead, false, false),
            extend(base, class(2), Mode::Exclusive, true, false),
            extend(base, class(2), Mode::Exclusive, false, true),
            extend(0, class(2), Mode::Exclusive, false, false),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(*v, ab, "variant {i}");
        }
    }

    #[test]
    fn chain_key_is_never_zero() {
        // 0 means "empty stack" and "empty slot"; spot-check many inputs, the unvalidated
        // class included.
        let mut k = 0;
        for i in 0..10_000u32 {
            k = extend(
                k,
                if i % 7 == 0 { ClassId::NONE } else { class(i) },
                Mode::Exclusive,
                i % 3 == 0,
                false,
            );
            assert_ne!(k, 0);
        }
    }

    #[test]
    fn local_cache_is_direct_mapped() {
        let mut c = LocalCache::new();
        let (k1, k2) = (5, 5 + LOCAL_SLOTS as u64);
        assert!(!c.contains(k1));
        c.insert(k1);
        assert!(c.contains(k1));
        c.insert(k2);
        assert!(c.contains(k2));
        assert!(!c.contains(k1), "same slot: the newer key evicts the older");
        c.clear();
        assert!(!c.contains(k2));
    }

    /// The global table is process-wide, so this is the only unit test that touches it.
    #[test]
    fn global_table_flushes_when_a_probe_window_is_full() {
        // Keys that all start probing at the same slot.
        let keys: Vec<u64> = (1..=PROBE as u64 + 1)
            .map(|i| i * CHAIN_TABLE_SLOTS as u64 + 12_345)
            .collect();
        let before = flushes();
        for &k in &keys[..PROBE] {
            global_insert(k);
        }
        assert!(keys[..PROBE].iter().all(|&k| global_contains(k)));
        assert!(!global_contains(keys[PROBE]));
        global_insert(keys[PROBE]);
        assert_eq!(flushes(), before + 1);
        assert!(global_contains(keys[PROBE]));
        assert!(!global_contains(keys[0]), "the flush emptied the table");
        clear();
        assert_eq!(count(), 0);
    }
}
