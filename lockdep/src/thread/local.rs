//! Each thread's [`ThreadState`] in a thread-local, and the held-at-exit check when the
//! thread ends (the kernel's "lock held when returning to user space").
//!
//! The state's thread-local has no destructor (it is `ManuallyDrop`), so the fast path reaches
//! it with no lazy-initialization or liveness check ([`state_fast`]). The destructor is a
//! second, zero-sized thread-local ([`ExitCheck`]), registered by every slow-path access
//! ([`with_state`]). The fast path can only succeed after one: it never grows the held stack,
//! and the stack starts with no room. At thread exit the check gives the thread's shared
//! record back and frees the state's memory; lock operations in thread-local destructors that
//! run later are still validated (see `with_state_late`). What is still held when the thread
//! is gone is reported then ([`end`]), not when the thread ends the process.

mod end;

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
        // tracked.
        STATE.with(|s| {
            let Ok(mut st) = s.try_borrow_mut() else {
                return;
            };
            // Releases posted by other threads first: a guard this thread took and another
            // dropped is not held here.
            st.settle();
            let holder = st.record().map(|r| r.holder());
            if !st.entries().is_empty() {
                let instances = || st.entries().iter().map(|e| e.instance);
                if holder.is_some_and(|h| super::orphans::orphan(h, instances())) {
                    // Movable guards: the locks left with their guards, released later
                    // elsewhere.
                    st.take_all();
                } else {
                    // Kept: a thread-local destructor that runs after this one may still
                    // release them (a guard stashed in a thread-local), and what it takes
                    // meanwhile depends on them. Reported when the thread is gone, with what
                    // is held then, and not if this thread is ending the process with
                    // `exit()` (see [`end`]); the thread's name is looked up now, while its
                    // thread-locals still live.
                    let _ = st.identity();
                    if !end::defer_report() {
                        report_held(&st);
                    }
                }
            }
            st.give_back_record();
            // Frees the stack (if empty) and claims no record again. Later lock operations of
            // this thread (in thread-local destructors that run after this one) are still
            // tracked, in the late mode of `with_state`.
            st.reset_after_exit();
            st.refresh_room();
        });
    }
}

/// Reports the locks `st` holds (the thread is ending).
fn report_held(st: &ThreadState) {
    let held = st.entries().to_vec();
    let r = build::held_at_exit(&graph_lock().graph, st, &held);
    report::deliver_no_unwind(r);
}

/// The thread is gone (see [`end`]): reports the locks it still holds after all
/// its thread-local destructors ran, and forgets them.
fn report_held_at_end() {
    STATE.with(|s| {
        let Ok(mut st) = s.try_borrow_mut() else {
            return;
        };
        if !st.entries().is_empty() {
            // Borrowed while the report is delivered, so that a lock its delivery takes is
            // not tracked.
            report_held(&st);
            st.take_all();
            st.trim_after_exit();
        }
    });
}

thread_local! {
    static STATE: ManuallyDrop<RefCell<ThreadState>> =
        const { ManuallyDrop::new(RefCell::new(ThreadState::new())) };
    static EXIT: ExitCheck = const { ExitCheck };
}

/// Runs `f` on this thread's state. Returns `None` (and tracks nothing) while the thread's exit
/// check runs, or if the state is already borrowed (the validator never calls out while it
/// holds the borrow, so that would be a signal handler re-entering it). Registers the exit
/// check on the thread's first call.
#[inline]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    if EXIT.try_with(|_| ()).is_ok() {
        return with_state_registered::<false, R>(f);
    }
    with_state_late(f)
}

/// [`with_state`] for a release: the same, but the stack may keep holes (entries released
/// below the top, see `ThreadState::release_leaving_hole`), which `f` must skip: a release's
/// walk, which matches no hole, does.
#[inline]
pub(crate) fn with_state_keeping_holes<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    if EXIT.try_with(|_| ()).is_ok() {
        return with_state_registered::<true, R>(f);
    }
    with_state_late(f)
}

/// [`with_state`] once the exit check is registered. Applies the releases other threads
/// posted first (one relaxed load when there are none), and closes the stack's holes first
/// unless `KEEP_HOLES` (one load when there are none).
#[inline(always)]
fn with_state_registered<const KEEP_HOLES: bool, R>(
    f: impl FnOnce(&mut ThreadState) -> R,
) -> Option<R> {
    STATE.with(|s| {
        s.try_borrow_mut().ok().map(|mut s| {
            if KEEP_HOLES {
                s.settle_keeping_holes();
            } else {
                s.settle();
            }
            let r = f(&mut s);
            s.refresh_room();
            r
        })
    })
}

/// This thread's state for the fast paths, which only read or shrink a stack that a
/// [`with_state`] call gave room before: no exit-check registration, no lazy-initialization
/// check, no borrow-flag store, and no call at all. `None` (as if the state were unavailable)
/// while a [`with_state`] call has it borrowed (a signal handler that interrupted it). The
/// fast paths also give up while other threads' mail waits or lock_stat is on
/// (`ThreadState::is_unusual`, one relaxed load): the slow path they hand over to applies the
/// mail and counts for lock_stat, so the fast paths stay leaves.
///
/// A signal handler that takes validated locks while its thread is inside a fast path would
/// share the state with the code it interrupted: that is outside what the validator supports
/// (as taking a lock in a signal handler is outside what the locks support: the interrupted
/// code may hold it). A handler that interrupts a slow path finds the borrow flag set and
/// goes untracked.
///
/// # Safety
///
/// The caller uses the reference only before it returns, and makes no call that can reach
/// this thread's state while it does (the fast paths are leaves): no other borrow of the
/// state can start meanwhile, so the reference is the only one.
#[inline(always)]
pub(crate) unsafe fn state_fast<'a>() -> Option<&'a mut ThreadState> {
    // The thread-local's address only: a closure small enough to be inlined everywhere.
    let cell: *const RefCell<ThreadState> = STATE.with(|s| std::ptr::from_ref::<RefCell<_>>(s));
    // SAFETY: the thread-local has no destructor (`ManuallyDrop`): it lives as long as the
    // thread, longer than the caller's use.
    let cell = unsafe { &*cell };
    // SAFETY: the shared borrow is dropped at once (only the flag is read): no `with_state`
    // call holds the state.
    if unsafe { cell.try_borrow_unguarded() }.is_err() {
        return None;
    }
    // SAFETY: no borrow is live (just checked) and none starts while the caller uses the
    // reference (the caller's contract), so it is unique.
    Some(unsafe { &mut *cell.as_ptr() })
}

/// [`with_state`] after the exit check ran: lock operations in thread-local destructors that
/// run after it are validated like any other (a lock order seen only there is still
/// reported). The state has no shared record any more, and its stack is kept without spare
/// room, so every operation comes here (the fast path never finds room) and the memory is
/// freed whenever the stack is empty: nothing leaks when the thread is gone. Locks still held
/// when the last destructor ends are not reported.
#[cold]
fn with_state_late<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    STATE.with(|s| {
        s.try_borrow_mut().ok().map(|mut st| {
            let r = f(&mut st);
            st.trim_after_exit();
            r
        })
    })
}

/// The calling thread, for a report that is not about its held locks.
pub(crate) fn current_thread() -> ThreadDesc {
    with_state(|st| build::thread(st)).unwrap_or_else(build::unknown_thread)
}
