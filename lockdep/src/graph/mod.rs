//! The class table and the dependency graph between classes, both under the graph lock
//! (the kernel's `lock_classes[]` with their `locks_after` / `locks_before` lists, and
//! `check_noncircular()`), plus each class's instance-order pairs.
//!
//! - [`table`]: the live classes (creation, lookup by key, zap) and their dependencies.
//! - [`edges`]: what one ordered pair records: its kinds and where, and on which instances,
//!   each was first seen.
//! - [`instances`]: which instance of a class was taken while which other was held.
//! - [`search`]: would a new dependency (or instance pair) close a strong cycle?
//! - [`shape`](mod@shape): an epoch that moves with every dependency or pair recorded and every zap.
//!
//! Nothing here takes a lock or reports: the caller holds the graph lock
//! ([`graph_lock`](crate::graph_lock)) and turns findings into reports.

pub(crate) mod edges;
pub(crate) mod instances;
pub(crate) mod search;
mod shape;
pub(crate) mod table;

pub use edges::Trace;
pub(crate) use shape::shape;
pub(crate) use table::{lifetime_counts, Graph};
