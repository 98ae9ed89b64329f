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
//! The contexts live in one map, each removed when its task holds nothing any more.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use lockdep::{LockMap, Mode, TaskContext, TaskHeld};
use tokio::task::Id;

use crate::dep::Site;

/// The contexts of uninstrumented tasks that hold async locks. A leaf lock: lockdep is
/// called with it released.
static CONTEXTS: Mutex<Option<HashMap<Id, Arc<TaskContext>>>> = Mutex::new(None);

fn contexts() -> std::sync::MutexGuard<'static, Option<HashMap<Id, Arc<TaskContext>>>> {
    CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The running tokio task, if this thread is polling one that is not instrumented.
#[inline]
pub(crate) fn uninstrumented_task() -> Option<Id> {
    if lockdep::current_task().is_some() {
        return None;
    }
    tokio::task::try_id()
}

/// An acquisition by tokio task `id` (see the module docs).
pub(crate) fn acquire(id: Id, map: &LockMap, mode: Mode, trylock: bool, site: Site) -> TaskHeld {
    let ctx = Arc::clone(
        contexts()
            .get_or_insert_with(HashMap::new)
            .entry(id)
            .or_insert_with(|| Arc::new(TaskContext::new())),
    );
    let scope = ctx.enter();
    let held = lockdep::task_acquire(map, 0, mode, trylock, site);
    scope.exit(false);
    held
}

/// The release of a lock tokio task `id` acquired; forgets the task's context once it holds
/// nothing.
pub(crate) fn release(id: Id, held: &mut TaskHeld, map: &LockMap) {
    lockdep::task_release(held, map);
    let mut all = contexts();
    if let Some(map) = all.as_mut() {
        if map.get(&id).is_some_and(|ctx| ctx.is_idle()) {
            map.remove(&id);
        }
    }
}
