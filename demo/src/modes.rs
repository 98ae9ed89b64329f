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
            WaitMode::Rwlock => {
                static TABLE: OnceLock<ShardedRwLock> = OnceLock::new();
                KeyTableSync::External(TABLE.get_or_init(ShardedRwLock::new))
            }
            WaitMode::Rcu => {
                static RCU: OnceLock<rcu::Rcu> = OnceLock::new();
                KeyTableSync::External(RCU.get_or_init(rcu::Rcu::new))
            }
        };
        lockdep::set_key_table_sync(sync);
    }
}

/// The message printed for a mode this binary cannot run.
pub fn rcu_unavailable_note() -> &'static str {
    "rcu: unavailable (build with `--features rcu`; needs liburcu-dev)"
}
