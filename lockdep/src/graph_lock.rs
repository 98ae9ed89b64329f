//! The graph lock and everything it guards (the kernel's `graph_lock()` / `lockdep_lock`).
//!
//! The validator takes it only on slow paths: a new chain, class creation, key register and
//! unregister, and the class names of reports. It never calls out (no handler, no user code)
//! while holding it, so it cannot deadlock with the application's locks. It is a
//! `std::sync::Mutex`, and a poisoned lock is used as is: a panic under it can only be a
//! validator bug, and the validator must never turn itself off. It is taken around every
//! `fork()` ([`fork`]), so a child never inherits it locked by a thread it does
//! not have.

use std::any::Any;
use std::cell::Cell;
use std::ptr;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::fork::{self, Participant, Rank};
use crate::graph::Graph;

/// Everything guarded by the graph lock.
#[derive(Default)]
pub(crate) struct Global {
    /// The class table and the dependencies.
    pub graph: Graph,
    /// Classes ran out and none was created since: an exhaustion episode is in progress
    /// (reported when it began).
    pub classes_exhausted: bool,
    /// Whether reaching the cap on instance pairs was reported (in the current episode).
    pub instance_pairs_exhausted_reported: bool,
    /// Number of registered dynamic keys (the key table's links change only under this lock).
    pub keys: usize,
}

/// The graph lock's guard, as the slow paths pass it on (one section spanning two steps).
pub(crate) type GraphGuard = MutexGuard<'static, Global>;

static GLOBAL: LazyLock<Mutex<Global>> = LazyLock::new(Default::default);

thread_local! {
    /// Graph-lock sections this thread has entered ([`graph_lock_sections`]).
    static SECTIONS: Cell<u64> = const { Cell::new(0) };
}

/// Taken around `fork()`, so that no other thread is inside it when the child is made.
static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork::nothing,
};

fn fork_prepare() -> Box<dyn Any> {
    Box::new(lock())
}

fn lock() -> MutexGuard<'static, Global> {
    GLOBAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the graph lock. Poisoning is ignored (see the module docs).
pub(crate) fn graph_lock() -> GraphGuard {
    fork::join(Rank::Graph, &FORK);
    // A thread past its locals' destruction is simply not counted.
    let _ = SECTIONS.try_with(|n| n.set(n.get() + 1));
    lock()
}

/// Asks for every cache line of the graph lock and of what it guards in place (the lock
/// word, the class table's and the key table's headers and counters: about four lines), with
/// write intent, ahead of a section that will write them (see [`prefetch`](crate::prefetch)).
/// Another thread's section usually wrote them last, and without this each one is a
/// transfer of its own, one after another. A hint: takes no lock and changes nothing.
pub(crate) fn prefetch_for_write() {
    let start = ptr::from_ref(&GLOBAL).cast::<u8>();
    for offset in (0..size_of_val(&GLOBAL)).step_by(64) {
        // `wrapping_add`: an address inside the static (offset < its size), only hinted at.
        crate::prefetch::for_write(start.wrapping_add(offset));
    }
}

/// Graph-lock sections the calling thread has entered since it started (the fork handler's
/// section is not counted). Each one is a moment every other thread's slow path (class
/// creation, a new chain, key register and unregister) may wait for; a new lock's first
/// acquisition takes one, whether it creates a class, validates a new chain, or both.
/// Thread-local: other threads' sections do not count, so tests can read it while other
/// tests run. For tests and diagnostics.
pub fn graph_lock_sections() -> u64 {
    SECTIONS.try_with(Cell::get).unwrap_or(0)
}
