//! Held-lock contexts for tokio tasks that were not instrumented, keyed by tokio's task id.
//!
//! A task spawned with plain `tokio::spawn` has no [`TaskContext`] of its own, and there is
//! no stable hook into its polls. Its async acquisitions and releases can still be made
//! per task: `tokio::task::try_id()` names the task, and each acquisition enters that task's
//! context just for the validation (its held async locks go on the thread's stack, the new
//! lock is validated and pushed, all of them come off again). So orders among the async
//! locks of such tasks are learned and their cycles reported, wherever the tasks run.
//!
//! What it cannot see, for want of the poll boundaries: the task's async locks are not on the
//! thread's stack while it takes *blocking* locks (async → blocking orders are not learned),
//! and a blocking guard held across an `.await` is not reported. Instrument the task
//! ([`crate::task`]) for those.
//!
//! The contexts live in one map of weak references, keyed by task id; each acquisition's
//! guard keeps its task's context alive, so a context lives while its task holds a lock (and
//! while it is the last one a thread looked up: a one-entry cache per thread spares the map's
//! lock to a task taking locks in a row). Dead entries are pruned when the map has doubled.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use lockdep::{LockMap, Mode, TaskContext, TaskHeld};
use tokio::task::Id;

use crate::dep::Site;

/// The contexts of uninstrumented tasks, and the size at which dead ones are pruned.
struct Contexts {
    map: HashMap<Id, Weak<TaskContext>>,
    prune_at: usize,
}

/// A leaf lock: lockdep is called with it released.
static CONTEXTS: Mutex<Option<Contexts>> = Mutex::new(None);

thread_local! {
    /// The context this thread looked up last.
    static LAST: RefCell<Option<(Id, Arc<TaskContext>)>> = const { RefCell::new(None) };
}

/// The running tokio task, if this thread is polling one that is not instrumented.
#[inline]
pub(crate) fn uninstrumented_task() -> Option<Id> {
    if lockdep::current_task().is_some() {
        return None;
    }
    tokio::task::try_id()
}

/// Task `id`'s context, made if it has none.
fn context(id: Id) -> Arc<TaskContext> {
    let cached = LAST
        .try_with(|last| {
            last.borrow()
                .as_ref()
                .filter(|(i, _)| *i == id)
                .map(|(_, c)| Arc::clone(c))
        })
        .ok()
        .flatten();
    if let Some(c) = cached {
        return c;
    }
    let c = {
        let mut all = CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner);
        let all = all.get_or_insert_with(|| Contexts {
            map: HashMap::new(),
            prune_at: 64,
        });
        match all.map.get(&id).and_then(Weak::upgrade) {
            Some(c) => c,
            None => {
                let c = Arc::new(TaskContext::new());
                all.map.insert(id, Arc::downgrade(&c));
                if all.map.len() >= all.prune_at {
                    all.map.retain(|_, w| w.strong_count() > 0);
                    all.prune_at = (2 * all.map.len()).max(64);
                }
                c
            }
        }
    };
    let _ = LAST.try_with(|last| *last.borrow_mut() = Some((id, Arc::clone(&c))));
    c
}

/// An acquisition by tokio task `id` (see the module docs); the context comes back to be
/// kept with the guard.
pub(crate) fn acquire(
    id: Id,
    map: &LockMap,
    mode: Mode,
    trylock: bool,
    site: Site,
) -> (TaskHeld, Arc<TaskContext>) {
    let ctx = context(id);
    let scope = ctx.enter();
    let held = lockdep::task_acquire(map, 0, mode, trylock, site);
    scope.exit(false);
    (held, ctx)
}
