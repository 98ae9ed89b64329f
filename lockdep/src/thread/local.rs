//! Each thread's [`ThreadState`] in a thread-local, and the held-at-exit check when the
//! thread ends (the kernel's "lock held when returning to user space").
//!
//! The state's thread-local has no destructor (it is `ManuallyDrop`), so the fast path reaches
//! it with no lazy-initialization or liveness check ([`with_state_fast`]). The destructor is a
//! second, zero-sized thread-local ([`ExitCheck`]), registered by every slow-path access
//! ([`with_state`]). The fast path can only succeed after one: it never grows the held stack,
//! and the stack starts with no room. At thread exit the check reports what is still held and
//! frees the state's memory; from then on [`with_state`] answers `None` and nothing more is
//! tracked on the thread.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use crate::graph_lock::graph_lock;
use crate::held::ThreadState;
use crate::report::{self, build, ThreadDesc};

/// The held-at-exit check, run by the thread-local destructor of [`EXIT`].
struct ExitCheck;

impl Drop for ExitCheck {
    fn drop(&mut self) {
        // Borrowed for the whole check, so that a lock taken by the report's delivery is not
        // tracked (`with_state` answers `None` from here on anyway: `EXIT` is destroyed).
        STATE.with(|s| {
            let Ok(mut st) = s.try_borrow_mut() else {
                return;
            };
            if !st.entries().is_empty() {
                let held = st.take_all();
                let r = build::held_at_exit(&graph_lock().graph, &st, &held);
                report::deliver_no_unwind(r);
            }
            // Frees the stack and the thread's name; nothing is pushed again on this thread.
            drop(std::mem::replace(&mut *st, ThreadState::new()));
        });
    }
}

thread_local! {
    static STATE: ManuallyDrop<RefCell<ThreadState>> =
        const { ManuallyDrop::new(RefCell::new(ThreadState::new())) };
    static EXIT: ExitCheck = const { ExitCheck };
}

/// Runs `f` on this thread's state. Returns `None` (and tracks nothing) once the thread's
/// exit check has started, or if the state is already borrowed (the validator never calls out
/// while it holds the borrow, so that would be a signal handler re-entering it). Registers
/// the exit check on the thread's first call.
#[inline]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    EXIT.try_with(|_| ()).ok()?;
    with_state_fast(f)
}

/// [`with_state`] without the exit check's registration: for the fast path, which only reads
/// or shrinks a stack that a [`with_state`] call gave room before. No lazy-initialization
/// check, no call.
#[inline(always)]
pub(crate) fn with_state_fast<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    STATE.with(|s| s.try_borrow_mut().ok().map(|mut s| f(&mut s)))
}

/// The calling thread, for a report that is not about its held locks.
pub(crate) fn current_thread() -> ThreadDesc {
    with_state(|st| build::thread(st)).unwrap_or_else(build::unknown_thread)
}
