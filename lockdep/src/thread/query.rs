//! Questions about this thread's held locks that the validator itself asks. (The public ones,
//! which take a [`LockMap`](crate::LockMap), are in [`annotate`](crate::annotate).)

use super::local::with_state;
use crate::class::KeyRef;
use crate::graph_lock::graph_lock;

/// True if this thread holds a lock of one of `key`'s classes. Takes the graph lock if it holds
/// anything.
pub(crate) fn holds_key(key: KeyRef) -> bool {
    with_state(|st| {
        if st.entries().is_empty() {
            return false;
        }
        let g = graph_lock();
        st.entries()
            .iter()
            .any(|h| g.graph.class(h.class).is_some_and(|c| c.key == key))
    })
    .unwrap_or(false)
}
