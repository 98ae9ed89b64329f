//! Questions about this thread's held locks that the validator itself asks. (The public ones,
//! which take a [`LockMap`](crate::LockMap), are in [`annotate`](crate::annotate).)

use super::local::with_state;
use crate::graph::table::KeyClassIds;

/// True if this thread holds a lock of one of a key's live classes, `classes` (made by the
/// caller under the graph lock, which it still holds).
pub(crate) fn holds_key(classes: &KeyClassIds) -> bool {
    with_state(|st| st.entries().iter().any(|h| classes.contains(h.class))).unwrap_or(false)
}
