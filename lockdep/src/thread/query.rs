//! Questions about this thread's held locks that the validator itself asks. (The public ones,
//! which take a [`LockMap`](crate::LockMap), are in [`annotate`](crate::annotate).)

use super::local::with_state;
use crate::class::KeyRef;
use crate::graph::Graph;

/// True if this thread holds a lock of one of `key`'s classes, decided with the graph `g`
/// (held by the caller).
pub(crate) fn holds_key(g: &Graph, key: KeyRef) -> bool {
    with_state(|st| {
        st.entries()
            .iter()
            .any(|h| g.class(h.class).is_some_and(|c| c.key == key))
    })
    .unwrap_or(false)
}
