//! "Is this dynamic key registered?": the lock-free lookup that hazard pointers make safe (the
//! kernel's `is_dynamic_key()`, with the read side of Boqun Feng's shazptr series for lockdep
//! instead of an RCU read section).
//!
//! A lookup enters a read section of its *bucket*: by default it protects the bucket head
//! with a `hazptr` hazard pointer (`Domain::protect_addr`), walks the bucket's links with
//! Acquire loads, and drops the guard. The bucket, not the key looked for, is protected,
//! because a reader may stand on *any* node of the bucket, including one being unlinked.
//!
//! The other side is unregister ([`DynamicKey::unregister`](crate::DynamicKey::unregister)):
//! it unlinks the node under the graph lock, then waits with `hazptr` synchronize on that one
//! bucket head, which returns once every hazard pointer that protected the bucket when the wait
//! began is gone. A reader that protected the bucket later cannot reach the unlinked node, so
//! after the wait the node can be freed. Readers of other buckets are never waited for.
//!
//! The lookup runs when a lock map of a dynamic key needs its class (the chain cache and the
//! lock map's class cache make that rare), and for [`DynamicKey::is_registered`](crate::DynamicKey::is_registered) /
//! [`KeyHandle::is_registered`](crate::KeyHandle::is_registered).

use std::sync::Arc;

use super::sync;
use super::table::{bucket_index, name_locked, nesting_locked, walk};
use crate::graph_lock::Global;
use crate::nesting::Nesting;

/// Is the dynamic key `(addr, serial)` registered? Lock-free: the walk runs inside a read
/// section of the key's bucket, by default a hazard pointer on the bucket head (see the
/// module docs; [`set_key_table_sync`](crate::set_key_table_sync) chooses another strategy).
pub(crate) fn is_registered(addr: usize, serial: u64) -> bool {
    sync::read_section(bucket_index(addr), || walk(addr, serial))
}

/// The same question under the graph lock (`_g` is its guard), where the links cannot change:
/// the answer stays true until the lock is released.
pub(crate) fn is_registered_locked(_g: &Global, addr: usize, serial: u64) -> bool {
    walk(addr, serial)
}

/// The name of a registered dynamic key, under the graph lock.
pub(crate) fn name_of_locked(g: &Global, addr: usize, serial: u64) -> Option<Arc<str>> {
    name_locked(g, addr, serial)
}

/// The nesting rule a registered dynamic key fixes, if any, under the graph lock.
pub(crate) fn nesting_of_locked(g: &Global, addr: usize, serial: u64) -> Option<Nesting> {
    nesting_locked(g, addr, serial)
}

/// Runs `f` inside the read section a lookup of `addr`'s bucket uses (a test hook, see
/// [`DynamicKey::with_bucket_protected`](crate::DynamicKey::with_bucket_protected)).
pub(crate) fn with_bucket_protected<R>(addr: usize, f: impl FnOnce() -> R) -> R {
    sync::read_section(bucket_index(addr), f)
}
