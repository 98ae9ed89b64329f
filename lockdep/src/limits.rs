//! Every fixed size in the validator, with the reason for its value.
//!
//! Reaching a limit is never silent and never turns the validator off: classes and the
//! held-lock depth are reported once ([`Report::CapacityExhausted`](crate::Report)), a full
//! chain-table window evicts one chain (counted), and the key table and per-thread cache only get slower.

/// The maximum number of live lock classes (the kernel's `MAX_LOCKDEP_KEYS` is 8191).
///
/// Why this value: the generation table (one 32-bit word per class slot, each on its own
/// 64-byte cache line) is a zeroed static, 4 MiB of `.bss` touched only where classes live
/// (one 4 KiB page per 64 class slots in use), so the fast path needs no lazy
/// initialization; and a lock map caches a class id with its subclass tagged into bits 16..20,
/// above every class index (see `class::cached`). Beyond it, new classes are reported once
/// ([`Report::CapacityExhausted`](crate::Report::CapacityExhausted)) and their locks are tracked
/// without validation until classes are freed (keys unregistered, or [`reset`](crate::reset)).
pub const MAX_CLASSES: usize = 1 << 16;

/// The number of subclasses per key (the kernel's `MAX_LOCKDEP_SUBCLASSES`): the nesting
/// levels `*_lock_nested()` can name. A larger subclass is reported
/// ([`KeyMisuse::InvalidSubclass`](crate::KeyMisuse::InvalidSubclass)) and the lock is tracked
/// unvalidated. It must fit the 4-bit subclass tag of a lock map's class cache.
pub const MAX_SUBCLASSES: u8 = 8;

/// log2 of [`KEY_BUCKETS`].
pub(crate) const KEY_BUCKET_BITS: u32 = 16;

/// The number of buckets of the dynamic-key table.
///
/// The kernel's `KEYHASH_BITS` is 12; we use more buckets (512 KiB of zeroed `.bss`, touched
/// only where keys land) so that a million live keys still give short buckets (a bucket walk
/// is a chain of cache misses), and an unregister shares its bucket, and so its wait for
/// lookups, with fewer readers.
pub const KEY_BUCKETS: usize = 1 << KEY_BUCKET_BITS;

/// The number of slots of the global chain table (the kernel's `MAX_LOCKDEP_CHAINS`).
///
/// 8-byte slots in a zeroed static (512 KiB of `.bss`), so a lookup needs no lazy
/// initialization. When a probe window is full one chain of it is evicted, which costs only
/// that chain's re-validation the next time it is seen.
pub(crate) const CHAIN_TABLE_SLOTS: usize = 1 << 16;

/// How many consecutive slots a chain-table lookup or insert probes: it bounds a miss on the
/// fast path to two cache lines.
pub(crate) const CHAIN_TABLE_PROBE: usize = 16;

/// The number of sets of each thread's four-way set-associative chain cache: 4 KiB of
/// thread-local storage (512 chain keys), enough for the chains a thread repeats; a conflict
/// costs a probe of the global table and the general path. With random keys, every chain of a
/// 64-deep run (each shard of a 64-shard map held at once) stays cached for 99 runs in 100
/// (with the 64 two-way sets before, 3 runs in 5 of 32 deep lost chains on every round).
/// Cleared whole only when the thread holds a lock of an unregistered key.
pub(crate) const LOCAL_CHAIN_SETS: usize = 128;

/// The default held-lock depth limit (the kernel's `MAX_LOCK_DEPTH`), changed with
/// [`set_max_depth`](crate::set_max_depth). Locks above it are still tracked and validated; the
/// first crossing is reported once per thread.
pub const DEFAULT_MAX_DEPTH: usize = 48;

/// The most instance-order pairs kept at a time, counted by kind (see
/// [`Nesting::InstanceOrder`](crate::Nesting::InstanceOrder)).
///
/// Why this value: a pair costs about a hundred bytes, so the cap bounds the instance graph to
/// a few MiB, while a program that nests thousands of instances of its classes in a fixed
/// order (every bucket of a table, every node of a tree path) stays well below it. A freed lock
/// gives its pairs back. Reaching the cap is reported
/// ([`Capacity::InstancePairs`](crate::Capacity::InstancePairs)); pairs past it are not
/// recorded (their order is not validated) until pairs are freed.
pub const MAX_INSTANCE_PAIRS: usize = 1 << 16;

/// The number of slots of each thread's cache of checked instance pairs (4-way
/// set-associative): 2 KiB of thread-local storage; a miss costs a check under the graph
/// lock.
pub(crate) const LOCAL_PAIR_SLOTS: usize = 256;
/// The number of distinct reports remembered for deduplication (see
/// [`set_report_repeats`](crate::set_report_repeats)): one 8-byte hash each, so at most
/// 32 KiB plus the set's overhead. A program with more distinct problems than this has bigger
/// troubles than repeated output; beyond it, new distinct reports are delivered every time
/// (never dropped) and only the first ones stay deduplicated.
pub(crate) const MAX_DISTINCT_REPORTS: usize = 4096;

/// How many reports that report handlers caused (lock operations made while a report was
/// being delivered) one delivery hands to the handler after it returns; more are counted in
/// [`Stats::reports_dropped`](crate::Stats::reports_dropped). Deduplication ends the usual
/// loops (a handler that causes the same report again) long before; the bound ends the others
/// (every repeat delivered, [`set_report_repeats`](crate::set_report_repeats)).
pub(crate) const MAX_NESTED_REPORTS: usize = 64;
