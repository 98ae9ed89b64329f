//! Each thread's [`ThreadState`] in a thread-local, and the held-at-exit check when the
//! thread ends (the kernel's "lock held when returning to user space").

use std::cell::RefCell;

use crate::graph_lock::graph_lock;
use crate::held::ThreadState;
use crate::report::{self, build, ThreadDesc};

/// What the thread-local owns: the state, plus the exit check on drop.
struct Slot {
    state: ThreadState,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let st = &mut self.state;
        // Releases posted by other threads first: a guard this thread took and another
        // dropped is not held here.
        st.settle();
        if st.entries().is_empty() {
            st.give_back_record();
            return;
        }
        let holder = st.record().map(|r| r.holder());
        let held = st.take_all();
        st.give_back_record();
        if holder.is_some_and(|h| super::orphans::orphan(h, held.iter().map(|e| e.instance))) {
            // Movable guards: the locks left with their guards, released later elsewhere.
            return;
        }
        let r = build::held_at_exit(&graph_lock().graph, st, &held);
        report::deliver_no_unwind(r);
    }
}

thread_local! {
    static STATE: RefCell<Slot> = const {
        RefCell::new(Slot {
            state: ThreadState::new(),
        })
    };
}

/// Runs `f` on this thread's state. Returns `None` (and tracks nothing) while the thread's
/// validator state is being destroyed at thread exit, or if the state is already borrowed
/// (the validator never calls out while it holds the borrow, so that would be a signal
/// handler re-entering it).
#[inline]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    STATE
        .try_with(|s| {
            s.try_borrow_mut().ok().map(|mut s| {
                s.state.settle();
                f(&mut s.state)
            })
        })
        .ok()
        .flatten()
}

/// The calling thread, for a report that is not about its held locks.
pub(crate) fn current_thread() -> ThreadDesc {
    with_state(|st| build::thread(st)).unwrap_or_else(build::unknown_thread)
}
