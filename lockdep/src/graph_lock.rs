//! The graph lock and everything it guards (the kernel's `graph_lock()` / `lockdep_lock`).
//!
//! The validator takes it only on slow paths: a new chain, class creation, key register and
//! unregister, and the class names of reports. It never calls out (no handler, no user code)
//! while holding it, so it cannot deadlock with the application's locks. It is a
//! `std::sync::Mutex`, and a poisoned lock is used as is: a panic under it can only be a
//! validator bug, and the validator must never turn itself off.

use hashbrown::HashSet;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::graph::Graph;
use crate::report::KeyMisuse;

/// Everything guarded by the graph lock.
#[derive(Default)]
pub(crate) struct Global {
    /// The class table and the dependencies.
    pub graph: Graph,
    /// Signatures of cycles already reported (each distinct cycle is reported once).
    pub reported_cycles: HashSet<u64>,
    /// (key serial, misuse) pairs already reported.
    pub reported_misuse: HashSet<(u64, KeyMisuse)>,
    /// Whether running out of classes was already reported.
    pub classes_exhausted_reported: bool,
    /// Whether reaching the cap on instance pairs was reported (in the current episode).
    pub instance_pairs_exhausted_reported: bool,
    /// Number of registered dynamic keys (the key table's links change only under this lock).
    pub keys: usize,
}

static GLOBAL: LazyLock<Mutex<Global>> = LazyLock::new(Default::default);

/// Takes the graph lock. Poisoning is ignored (see the module docs).
pub(crate) fn graph_lock() -> MutexGuard<'static, Global> {
    GLOBAL.lock().unwrap_or_else(PoisonError::into_inner)
}
