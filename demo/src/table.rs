//! The design a Rust user might pick instead of hazard pointers: the key table's buckets
//! guarded by a sharded reader-writer lock (`parking_lot`). A lookup read-locks its bucket's
//! shard for one walk; unregister write-locks and unlocks that shard once, which waits for
//! the lookups inside it.

use std::sync::atomic::{AtomicU64, Ordering};

use lock_api::RawRwLock as _;

/// Number of shards; bucket `b` belongs to shard `b % SHARDS`.
pub const SHARDS: usize = 64;

/// One shard's lock, alone on its cache line.
#[repr(align(64))]
struct Shard(parking_lot::RawRwLock);

/// A sharded reader-writer lock as a [`lockdep::KeySyncStrategy`].
pub struct ShardedRwLock {
    shards: Box<[Shard]>,
    waits: AtomicU64,
}

impl ShardedRwLock {
    /// A table with [`SHARDS`] unlocked shards.
    pub fn new() -> ShardedRwLock {
        ShardedRwLock {
            shards: (0..SHARDS)
                .map(|_| Shard(parking_lot::RawRwLock::INIT))
                .collect(),
            waits: AtomicU64::new(0),
        }
    }

    /// `synchronize` calls so far that found their shard locked (by a lookup in one of the
    /// shard's buckets, or by another unregister) and so had to wait.
    pub fn waits(&self) -> u64 {
        // Relaxed: a statistic; it orders nothing.
        self.waits.load(Ordering::Relaxed)
    }
}

impl Default for ShardedRwLock {
    fn default() -> Self {
        ShardedRwLock::new()
    }
}

impl lockdep::KeySyncStrategy for ShardedRwLock {
    fn read_enter(&self, bucket: usize) -> usize {
        let shard = bucket % SHARDS;
        // Acquire semantics come with the lock (the strategy contract asks for them).
        self.shards[shard].0.lock_shared();
        shard
    }

    fn read_exit(&self, token: usize) {
        // SAFETY: `token` is the shard that `read_enter` read-locked on this thread, and
        // each section is exited exactly once (lockdep's contract for the strategy).
        unsafe { self.shards[token].0.unlock_shared() };
    }

    fn synchronize(&self, bucket: usize) {
        let shard = &self.shards[bucket % SHARDS].0;
        // Taking the write side waits out every reader inside the shard. Try first, so that
        // a call that finds a reader is counted.
        if !shard.try_lock_exclusive() {
            // Relaxed: a statistic; it orders nothing.
            self.waits.fetch_add(1, Ordering::Relaxed);
            shard.lock_exclusive();
        }
        // SAFETY: locked exclusively just above by this thread.
        unsafe { shard.unlock_exclusive() };
    }

    fn synchronize_all(&self) {
        for shard in self.shards.iter() {
            shard.0.lock_exclusive();
            // SAFETY: locked exclusively just above by this thread.
            unsafe { shard.0.unlock_exclusive() };
        }
    }
}
