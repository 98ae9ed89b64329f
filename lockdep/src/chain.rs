//! Chain keys and the chain cache.
//!
//! A chain key is a 64-bit hash of the held-lock stack including the lock being acquired,
//! computed incrementally (the kernel's `iterate_chain_key()`): [`extend`] adds one held lock,
//! and `HeldLock::chain_key_on` (its only caller) decides which fields of a held lock are part
//! of the chain. A chain that was validated
//! once is remembered, so the next identical acquisition skips validation: first in a small
//! per-thread four-way set-associative cache (no shared memory touched), then in a global lock-free
//! open-addressing table that is only *read* on the fast path. Inserts happen under the graph
//! lock. Entries are never removed on purpose: a chain that mentions a zapped class can
//! never match again because its class id does not come back (a slot's generation, 44 bits of
//! the id, repeats only after 2^43 classes in that slot), and the id and the acquisition's
//! tag occupy different bits of the word that is hashed. When an insert finds its probe
//! window full, one chain of the window is evicted (and counted), so the table is bounded,
//! never fails, and never stalls the graph lock with a whole-table flush.
//!
//! A chain whose last lock is of a class already held below it ("A then A", two instances of
//! one class) is cached with a mark: the top bit of the stored key, which a computed key never
//! has. So is a chain whose held locks may include the last lock's own instance under another
//! class (a held class of the same key under another subclass, a held class that is no longer
//! live, or a held lock with no class): the chain key names classes, so the same chain with another instance on top
//! says nothing about re-locking a held instance. A hit on a marked chain ([`Hit::Nested`])
//! only says that the *classes* were validated; the instances must still be checked (the
//! held locks for the new lock's instance, and [`pair_cache`](crate::pair_cache) for the
//! other instances of its class). An unmarked hit costs exactly one comparison, as before.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::class::ClassId;
use crate::limits::{
    CHAIN_TABLE_PROBE as PROBE, CHAIN_TABLE_SLOTS, LOCAL_CHAIN_SETS as LOCAL_SETS,
};
use crate::mode::Mode;

/// Zero-initialized static (.bss), so lookups need no lazy-initialization check.
static TABLE: [AtomicU64; CHAIN_TABLE_SLOTS] = [const { AtomicU64::new(0) }; CHAIN_TABLE_SLOTS];
static COUNT: AtomicUsize = AtomicUsize::new(0);
static EVICTIONS: AtomicUsize = AtomicUsize::new(0);

/// The mark of a chain with same-class nesting in a cache slot: a bit no computed key has.
const NESTED: u64 = 1 << 63;

/// What a cache knows about a chain key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hit {
    /// Not cached.
    Miss,
    /// Validated; nothing more to check.
    Plain,
    /// Validated as classes; its last lock nests in its own class, or its instance may be
    /// held under another class, so the instances must be checked too.
    Nested,
}

/// The value a cache slot holds for `key`.
#[inline]
fn stored(key: u64, nested: bool) -> u64 {
    if nested {
        key | NESTED
    } else {
        key
    }
}

/// What slot value `s` says about `key`.
#[inline]
fn hit(s: u64, key: u64) -> Hit {
    if s == key {
        Hit::Plain
    } else if s == key | NESTED {
        Hit::Nested
    } else {
        Hit::Miss
    }
}

/// The "folded multiply" of wyhash/foldhash: the 128-bit product's halves xor-ed together.
/// One multiply of latency, and every output bit depends on every input bit.
#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Extends chain key `prev` (0 for the empty stack) with one held lock. Never returns 0, and
/// never sets the top bit (the cache's mark of a nested chain).
///
/// The mode and trylock flag are part of the key (the kernel's locking selftest
/// `rlock_chaincache_ABBA1` needs the mode; the trylock flag decides which dependencies the
/// chain produced), and so is `nested` (an acquisition covered by a held nest_lock is validated
/// differently).
#[inline]
pub(crate) fn extend(prev: u64, class: ClassId, mode: Mode, trylock: bool, nested: bool) -> u64 {
    let tag = mode.code() | (u64::from(trylock) << 2) | (u64::from(nested) << 3);
    // The class and tag are spread by a folded multiply (off the critical path: they do not
    // depend on `prev`). On the path from one key to the next there is only a rotation, an xor
    // and a plain multiply by an odd constant: a bijection of the xor, so two chains collide
    // only if the xors do, and every bit of the well-mixed `entry` still reaches the key.
    // The tag goes in the id's bits that are always 0 (see `ClassId::to_bits`): distinct
    // (class, tag) pairs make distinct words, whatever the generation.
    let entry = fold_mul(class.to_bits() | (tag << 16), 0x9e37_79b9_7f4a_7c15);
    let k = (prev.rotate_left(23) ^ entry).wrapping_mul(0xa076_1d64_78bd_642f);
    // Bit 63 cleared for the mark, bit 62 set so the key is never 0; the low bits (the cache
    // indexes) keep the hash's.
    (k >> 1) | (1 << 62)
}

/// The chain key of an upgrade's entry, from the key `key` of a plain write of the same lock
/// on the same stack: an upgrade is validated with weaker dependencies than a write (see
/// `HeldLock::acquired_as`), so a write must not find its chain valid because an upgrade's
/// was. The mask keeps a key's marks (bit 63 clear, bit 62 set).
#[inline]
pub(crate) fn upgrade_key(key: u64) -> u64 {
    key ^ (0x1d8e_4e27_c47d_124f & !(3 << 62))
}

/// The chain key of an entry whose acquisition did not record its dependencies (see
/// `Slot::set_unrecorded`), from the key `key` it would have: the dependency walk of a later
/// acquisition goes on past such an entry and records more, so a chain over it must not be
/// found valid because the same chain over a recorded entry was. The mask keeps a key's marks,
/// as in [`upgrade_key`].
#[inline]
pub(crate) fn unrecorded_key(key: u64) -> u64 {
    key ^ (0x6c8e_9cf5_7093_2bd1 & !(3 << 62))
}

/// What the global table holds for `key`. Lock-free, writes nothing.
pub(crate) fn global_lookup(key: u64) -> Hit {
    let table = &TABLE;
    let start = key as usize % CHAIN_TABLE_SLOTS;
    for i in 0..PROBE {
        // Relaxed: a chain key is a self-contained value; seeing it means "validated", and the
        // dependencies it stands for are only needed by the slow path, which takes the graph
        // lock (and so synchronizes with the inserter) before reading them.
        match table[(start + i) % CHAIN_TABLE_SLOTS].load(Ordering::Relaxed) {
            0 => return Hit::Miss,
            s => match hit(s, key) {
                Hit::Miss => {}
                h => return h,
            },
        }
    }
    Hit::Miss
}

/// Inserts `key`, marked if `nested`; the caller holds the graph lock (the only writer).
/// When its probe window is full, one chain of the window gives up its slot (the victim taken
/// in turn, by a hand that moves on at every eviction): an eviction costs O(1) and only the
/// victim's re-validation, where flushing the whole table would re-validate every chain.
pub(crate) fn global_insert(key: u64, nested: bool) {
    let value = stored(key, nested);
    let table = &TABLE;
    let start = key as usize % CHAIN_TABLE_SLOTS;
    for i in 0..PROBE {
        let slot = &table[(start + i) % CHAIN_TABLE_SLOTS];
        // Relaxed: only the graph-lock holder writes the table.
        match slot.load(Ordering::Relaxed) {
            0 => {
                // Relaxed: see `global_lookup`; the value carries no pointer.
                slot.store(value, Ordering::Relaxed);
                // Relaxed: a statistic.
                COUNT.fetch_add(1, Ordering::Relaxed);
                return;
            }
            s if hit(s, key) != Hit::Miss => {
                // Relaxed: as above; the mark may change (a nested chain validated again).
                slot.store(value, Ordering::Relaxed);
                return;
            }
            _ => {}
        }
    }
    // Relaxed: a statistic, and the hand only spreads the victims (the graph lock orders the
    // inserters anyway).
    let victim = EVICTIONS.fetch_add(1, Ordering::Relaxed) % PROBE;
    // Relaxed: as above. A reader racing with the store sees the old chain or the new one,
    // both valid answers; a lookup of the victim now misses, which costs its re-validation.
    table[(start + victim) % CHAIN_TABLE_SLOTS].store(value, Ordering::Relaxed);
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

/// Number of chains the global table evicted for a new one (a full probe window).
pub(crate) fn evictions() -> usize {
    // Relaxed: a statistic.
    EVICTIONS.load(Ordering::Relaxed)
}

/// A thread's four-way set-associative cache of validated chain keys: a key may sit in any way
/// of its set, so the chains of one thread whose keys share a set (likely among the dozens of
/// chains of every shard of a map held at once) do not evict each other on every acquisition.
pub(crate) struct LocalCache {
    /// Per set: the most recently inserted key first.
    sets: [Set; LOCAL_SETS],
}

/// One set of [`LocalCache`], on one 32-byte-aligned half of a cache line.
#[derive(Clone, Copy)]
#[repr(align(32))]
struct Set([u64; WAYS]);

/// The ways of a [`LocalCache`] set.
const WAYS: usize = 4;

impl LocalCache {
    pub(crate) const fn new() -> LocalCache {
        LocalCache {
            sets: [Set([0; WAYS]); LOCAL_SETS],
        }
    }

    /// What the cache holds for `key`: an unmarked hit is four comparisons of one 32-byte set,
    /// without a branch between them.
    #[inline]
    pub(crate) fn lookup(&self, key: u64) -> Hit {
        let Set([a, b, c, d]) = self.sets[key as usize % LOCAL_SETS];
        let marked = key | NESTED;
        if (a == key) | (b == key) | (c == key) | (d == key) {
            Hit::Plain
        } else if (a == marked) | (b == marked) | (c == marked) | (d == marked) {
            Hit::Nested
        } else {
            Hit::Miss
        }
    }

    /// Caches `key`, marked if `nested`: in place if its set holds it, else in the first way,
    /// the others moving one way down (the oldest, in the last way, is evicted).
    #[inline]
    pub(crate) fn insert(&mut self, key: u64, nested: bool) {
        let value = stored(key, nested);
        let Set(set) = &mut self.sets[key as usize % LOCAL_SETS];
        if let Some(way) = set.iter_mut().find(|w| hit(**w, key) != Hit::Miss) {
            *way = value;
        } else {
            set.rotate_right(1);
            set[0] = value;
        }
    }

    pub(crate) fn clear(&mut self) {
        self.sets = [Set([0; WAYS]); LOCAL_SETS];
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
            extend(base, class(2), Mode::Upgradable, false, false),
            extend(base, class(2), Mode::Exclusive, true, false),
            extend(base, class(2), Mode::Exclusive, false, true),
            extend(0, class(2), Mode::Exclusive, false, false),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(*v, ab, "variant {i}");
        }
    }

    /// A class id and an acquisition's tag never alias: two classes of one slot whose
    /// generations differ in any one bit, taken in every mode, trylock and nested
    /// combination, make as many distinct chain keys (over the empty stack and over
    /// another key). An earlier layout put the tag over the generation's top bits, so a
    /// class re-created 2^24 times in its slot, taken for reading, had the chain key of
    /// its old class taken exclusively.
    #[test]
    fn no_generation_aliases_a_mode_or_flag() {
        let modes = [
            Mode::Exclusive,
            Mode::Read,
            Mode::RecursiveRead,
            Mode::Upgradable,
        ];
        let below = extend(0, class(9), Mode::Exclusive, false, false);
        for prev in [0, below] {
            let mut keys = std::collections::HashSet::new();
            let mut n = 0;
            for bit in 0..43 {
                // Odd (live) generations that differ from 1 in one bit.
                let generation = 1 | (1u64 << (bit + 1));
                for class in [ClassId::new(0xffff, generation), ClassId::new(0xffff, 1)] {
                    for mode in modes {
                        for (trylock, nested) in [(false, false), (true, false), (false, true)] {
                            keys.insert(extend(prev, class, mode, trylock, nested));
                            n += 1;
                        }
                    }
                }
            }
            // The generation-1 class repeats for every bit: count it once.
            let distinct = n - 42 * 12;
            assert_eq!(keys.len(), distinct, "over {prev:#x}");
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
    fn chain_key_never_has_the_nested_mark() {
        let mut k = 0;
        for i in 0..10_000u32 {
            k = extend(k, class(i), Mode::Upgradable, false, i % 2 == 0);
            assert_eq!(k & NESTED, 0);
        }
    }

    #[test]
    fn local_cache_keeps_four_keys_per_set_and_the_mark() {
        let mut c = LocalCache::new();
        let set = LOCAL_SETS as u64;
        let k: Vec<u64> = (0..5).map(|i| 5 + i * set).collect();
        assert_eq!(c.lookup(k[0]), Hit::Miss);
        c.insert(k[0], false);
        assert_eq!(c.lookup(k[0]), Hit::Plain);
        c.insert(k[1], true);
        assert_eq!(c.lookup(k[1]), Hit::Nested);
        assert_eq!(c.lookup(k[0]), Hit::Plain, "same set, another way");
        c.insert(k[0], true);
        assert_eq!(c.lookup(k[0]), Hit::Nested, "updated in place");
        c.insert(k[2], false);
        c.insert(k[3], false);
        assert_eq!(
            [k[0], k[1], k[2], k[3]].map(|k| c.lookup(k)),
            [Hit::Nested, Hit::Nested, Hit::Plain, Hit::Plain],
            "four keys of one set"
        );
        c.insert(k[4], false);
        assert_eq!(c.lookup(k[4]), Hit::Plain);
        assert_eq!(c.lookup(k[0]), Hit::Miss, "the oldest insert was evicted");
        assert_eq!(c.lookup(k[1]), Hit::Nested, "the others moved one way down");
        c.clear();
        assert_eq!(c.lookup(k[1]), Hit::Miss);
        assert_eq!(c.lookup(k[4]), Hit::Miss);
    }

    /// Every shard of a 64-shard map held at once, in order: the 64 chains of one class
    /// nested in itself stay in the thread's cache together, for nearly every class id (with
    /// 64 two-way sets, for none of these).
    #[test]
    fn local_cache_keeps_every_chain_of_a_64_deep_run() {
        let kept = (1..=100u32)
            .filter(|&id| {
                let mut c = LocalCache::new();
                let mut key = 0;
                let keys: Vec<u64> = (0..64)
                    .map(|_| {
                        key = extend(key, class(id), Mode::Exclusive, false, false);
                        key
                    })
                    .collect();
                for &k in &keys {
                    c.insert(k, true);
                }
                keys.iter().all(|&k| c.lookup(k) == Hit::Nested)
            })
            .count();
        assert!(kept >= 95, "{kept} of 100 runs kept whole");
    }

    /// The global table is process-wide, so this is the only unit test that touches it.
    #[test]
    fn global_table_evicts_one_chain_when_a_probe_window_is_full() {
        // Keys that all start probing at the same slot.
        let keys: Vec<u64> = (1..=PROBE as u64 + 1)
            .map(|i| i * CHAIN_TABLE_SLOTS as u64 + 12_345)
            .collect();
        let before = evictions();
        for (i, &k) in keys[..PROBE].iter().enumerate() {
            global_insert(k, i % 2 == 0);
        }
        for (i, &k) in keys[..PROBE].iter().enumerate() {
            let want = if i % 2 == 0 { Hit::Nested } else { Hit::Plain };
            assert_eq!(global_lookup(k), want);
        }
        assert_eq!(global_lookup(keys[PROBE]), Hit::Miss);
        global_insert(keys[PROBE], false);
        assert_eq!(evictions(), before + 1);
        assert_eq!(global_lookup(keys[PROBE]), Hit::Plain);
        let lost = keys[..PROBE]
            .iter()
            .filter(|&&k| global_lookup(k) == Hit::Miss)
            .count();
        assert_eq!(lost, 1, "exactly one chain of the window was evicted");
        // Re-inserting a cached chain changes its mark in place, evicting nothing.
        let kept = *keys[..PROBE]
            .iter()
            .find(|&&k| global_lookup(k) != Hit::Miss)
            .unwrap();
        global_insert(kept, true);
        assert_eq!(global_lookup(kept), Hit::Nested);
        assert_eq!(evictions(), before + 1);
        clear();
        assert_eq!(count(), 0);
        assert_eq!(global_lookup(keys[PROBE]), Hit::Miss);
    }
}
