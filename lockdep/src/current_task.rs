//! Which task this thread is polling, if any: the number a report names in place of the
//! thread alone ("task 17 on tokio-runtime-worker/3"). Set and restored by
//! [`task`](crate::task) around each instrumented poll; read when a report is built.

use std::cell::Cell;

thread_local! {
    /// The task being polled (its [`TaskContext::id`](crate::TaskContext::id)), 0 for none.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// The task this thread is polling, or `None` outside an instrumented poll (and while the
/// thread's locals are being destroyed).
pub(crate) fn get() -> Option<u64> {
    CURRENT.try_with(Cell::get).ok().filter(|&t| t != 0)
}

/// Makes `task` (0: none) the task this thread is polling; returns the one it replaces.
pub(crate) fn replace(task: u64) -> u64 {
    CURRENT.try_with(|c| c.replace(task)).unwrap_or(0)
}
