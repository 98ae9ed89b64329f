//! The wait modes compared by `qdisc-churn`: how unregistering a dynamic key waits for the
//! lookups in its bucket, installed into lockdep with `lockdep::set_key_table_sync`.

use std::sync::OnceLock;

use lockdep::KeyTableSync;

use crate::rcu;
use crate::table::ShardedRwLock;

/// How key unregistration waits (and how lookups are protected).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitMode {
    /// Hazard pointer on the bucket head; `synchronize` (self-scan, then the shared scan).
    Hazptr,
    /// Hazard pointer on the bucket head; `synchronize_direct` (self-scan only).
    HazptrDirect,
    /// A sharded `parking_lot` reader-writer lock over the buckets (64 shards).
    Rwlock,
    /// liburcu memb `synchronize_rcu` (needs the `rcu` cargo feature).
    Rcu,
}

impl WaitMode {
    /// Every mode, in table order.
    pub const ALL: [WaitMode; 4] = [
        WaitMode::Hazptr,
        WaitMode::HazptrDirect,
        WaitMode::Rwlock,
        WaitMode::Rcu,
    ];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            WaitMode::Hazptr => "hazptr",
            WaitMode::HazptrDirect => "hazptr-direct",
            WaitMode::Rwlock => "rwlock",
            WaitMode::Rcu => "rcu",
        }
    }

    /// Whether this binary can run the mode.
    pub fn available(self) -> bool {
        self != WaitMode::Rcu || rcu::AVAILABLE
    }

    /// Makes lockdep's dynamic-key table use this mode (waits for lookups under the previous
    /// one; see `lockdep::set_key_table_sync`).
    pub fn install(self) {
        assert!(self.available(), "{} is not available", self.name());
        let sync = match self {
            WaitMode::Hazptr => KeyTableSync::Hazptr,
            WaitMode::HazptrDirect => KeyTableSync::HazptrDirect,
            WaitMode::Rwlock => KeyTableSync::External(sharded_table()),
            WaitMode::Rcu => {
                static RCU: OnceLock<rcu::Rcu> = OnceLock::new();
                KeyTableSync::External(RCU.get_or_init(rcu::Rcu::new))
            }
        };
        lockdep::set_key_table_sync(sync);
    }

    /// Key unregistrations in this mode so far (all threads) whose wait found a lookup in
    /// progress and had to wait for it, or `None` where the mode cannot tell:
    ///
    /// - hazptr modes: `hazptr::Stats::synchronize_waits` of the global domain (lockdep's
    ///   key table is its only user): the self-scan found the bucket head protected.
    /// - rwlock: [`ShardedRwLock::waits`], the shard's write lock was not free at once.
    /// - rcu: `None`; `synchronize_rcu` waits for a grace period every time, for the
    ///   readers of every bucket, and does not say whether a reader held it up.
    pub fn waits_so_far(self) -> Option<u64> {
        match self {
            WaitMode::Hazptr | WaitMode::HazptrDirect => {
                Some(hazptr::Domain::global().stats().synchronize_waits)
            }
            WaitMode::Rwlock => Some(sharded_table().waits()),
            WaitMode::Rcu => None,
        }
    }
}

/// The one sharded-lock key table of the process (installed by [`WaitMode::Rwlock`]).
fn sharded_table() -> &'static ShardedRwLock {
    static TABLE: OnceLock<ShardedRwLock> = OnceLock::new();
    TABLE.get_or_init(ShardedRwLock::new)
}

/// The message printed for a mode this binary cannot run.
pub fn rcu_unavailable_note() -> &'static str {
    "rcu: unavailable (build with `--features rcu`; needs liburcu-dev)"
}

/// Serializes the tests of this crate that switch lockdep's key-table mode (a process-wide
/// setting) or read its process-wide wait counters.
#[cfg(test)]
pub static TEST_MODE_LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use lockdep::DynamicKey;

    use super::*;
    use crate::table::SHARDS;

    /// A key whose bucket (and rwlock shard) differs from `other`'s.
    fn key_elsewhere(other: &DynamicKey) -> DynamicKey {
        loop {
            let k = DynamicKey::new("elsewhere");
            if k.bucket() % SHARDS != other.bucket() % SHARDS {
                return k;
            }
        }
    }

    /// In every mode that can tell, an unregister counts as a wait exactly when a lookup is
    /// in progress in its bucket: a reader parked in X's bucket does not hold up Y (other
    /// bucket, other shard) and is counted once when X is unregistered.
    #[test]
    fn waits_are_counted_when_a_lookup_is_in_progress() {
        let _serial = TEST_MODE_LOCK.lock();
        for mode in WaitMode::ALL.into_iter().filter(|m| m.available()) {
            mode.install();
            let Some(start) = mode.waits_so_far() else {
                assert_eq!(mode, WaitMode::Rcu);
                continue;
            };
            let x = Arc::new(DynamicKey::new("X"));
            let y = key_elsewhere(&x);
            let (parked_tx, parked_rx) = mpsc::channel();
            let (release_tx, release_rx) = mpsc::channel::<()>();
            let reader = {
                let x = x.clone();
                std::thread::spawn(move || {
                    x.with_bucket_protected(|| {
                        parked_tx.send(()).unwrap();
                        release_rx.recv().unwrap();
                    })
                })
            };
            parked_rx.recv().unwrap();
            // Y's unregister must not wait for the reader in X's bucket: bounded, so a wait
            // fails the test instead of hanging it.
            let (done_tx, done_rx) = mpsc::channel();
            let y_thread = std::thread::spawn(move || {
                y.unregister();
                done_tx.send(()).unwrap();
            });
            done_rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("{mode:?}: Y waited for a reader in X's bucket"));
            y_thread.join().unwrap();
            assert_eq!(
                mode.waits_so_far(),
                Some(start),
                "{mode:?}: Y counted a wait"
            );
            // X's unregister has to wait: see it start waiting (its counter, or hazptr's
            // slot polls for the direct scan, which counts when the wait ends), release the
            // reader, and find exactly one wait counted.
            let polls = hazptr::Domain::global().stats().slot_polls;
            let x_thread = {
                let x = x.clone();
                std::thread::spawn(move || x.unregister())
            };
            let deadline = Instant::now() + Duration::from_secs(30);
            while mode.waits_so_far() == Some(start)
                && hazptr::Domain::global().stats().slot_polls == polls
            {
                assert!(Instant::now() < deadline, "{mode:?}: X never waited");
                std::thread::yield_now();
            }
            release_tx.send(()).unwrap();
            x_thread.join().unwrap();
            reader.join().unwrap();
            assert!(!x.is_registered());
            assert_eq!(mode.waits_so_far(), Some(start + 1), "{mode:?}");
        }
        WaitMode::Hazptr.install();
    }
}
