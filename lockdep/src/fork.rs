//! `fork()` safety: `pthread_atfork` handlers that take every validator-internal lock before a
//! fork and release it after, in the parent and in the child.
//!
//! The child of a multi-threaded process has one thread, the one that called `fork()`, and a
//! copy of the parent's memory: a lock another thread held at that moment stays locked in the
//! child forever, and the child's first lock operation that needs it hangs. The usual cure
//! (POSIX `pthread_atfork`, glibc's own `malloc` does the same) is a *prepare* handler that
//! takes the locks, so no other thread is inside one of them at the fork, and *parent* and
//! *child* handlers that release them again.
//!
//! The locks live in the modules that use them, above this one; each registers itself here as
//! a [`Participant`] when its lock is first used, at the [`Rank`] that is its place in the
//! validator's lock order. The prepare handler takes them in rank order (the order in which
//! the validator nests them, so it cannot deadlock with a thread that nests two), and the
//! parent and child handlers release them in reverse. A participant's child handler may also
//! repair state that threads of the parent left behind (the key table's participant makes
//! `hazptr` forget the hazard pointers of threads that do not exist in the child).
//!
//! The handlers are registered with `pthread_atfork` once, by the first participant. On
//! targets without `fork()` nothing is registered.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, PoisonError};

/// A lock's place in the validator's lock order: a lock of a lower rank may be held while one
/// of a higher rank is taken, never the reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rank {
    /// The key table's strategy switch (`keys::sync`): held around an unregister's unlink
    /// (which takes the graph lock) and its grace-period wait.
    KeySwitch,
    /// The graph lock (`graph_lock`).
    Graph,
    /// The shared held-lock records' table, and the forking thread's own record
    /// (`held::record`): its mailbox is posted to under the graph lock.
    Records,
    /// The reporting policy (`report::policy`).
    Policy,
    /// The table of reports already delivered (`report::dedup`).
    Dedup,
    /// The reports recorded for test scopes (`report::scope`).
    Scopes,
    /// The declared suppressions (`report::suppress`): taken under the graph lock when a
    /// class of a marked static key is created; writes to standard error under it.
    Suppressions,
    /// Writes to standard error (`report::output`).
    Output,
}

const RANKS: usize = 8;

/// What a lock's module does around a fork. Each function runs on the forking thread (or, for
/// `child`, on the child's only thread, which is its copy).
pub(crate) struct Participant {
    /// Takes the lock before the fork and returns its guard, which this module keeps (in a
    /// thread-local of the forking thread) and drops after the fork, in the parent and in the
    /// child.
    pub prepare: fn() -> Box<dyn Any>,
    /// Runs in the child while every participant's lock is still held: repairs what the
    /// parent's other threads, which do not exist in the child, left behind.
    pub child: fn(),
}

/// A participant with no repair to make in the child.
pub(crate) fn nothing() {}

static PARTICIPANTS: [AtomicPtr<Participant>; RANKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; RANKS];
static REGISTERED: AtomicBool = AtomicBool::new(false);
/// Held by a first [`join`] of a participant while it stores the participant, and by the
/// forking thread from the prepare handler to the parent or child handler: so the set of
/// participants cannot change during a fork (a participant that joined after the prepare
/// handler had passed its rank would otherwise get a child handler without its prepare, and
/// run it on state that another thread was changing at the fork). It guards no data, so
/// poisoning is ignored.
static JOINING: Mutex<()> = Mutex::new(());

thread_local! {
    /// The guards the prepare handler took, in rank order, until the parent or child handler
    /// drops them.
    static KEPT: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Makes `p` take part in every later fork at rank `rank`. Call it before the participant's
/// lock is first taken (it is cheap enough to call before every use: one load when already
/// registered). Thread-safe.
#[inline]
pub(crate) fn join(rank: Rank, p: &'static Participant) {
    let slot = &PARTICIPANTS[rank as usize];
    let p = p as *const Participant as *mut Participant;
    // Relaxed: the pointer is compared only; a stale null just stores the same value again.
    if slot.load(Ordering::Relaxed) != p {
        join_slow(slot, p);
    }
}

#[cold]
fn join_slow(slot: &AtomicPtr<Participant>, p: *mut Participant) {
    let _joining = JOINING.lock().unwrap_or_else(PoisonError::into_inner);
    // Release: pairs with the Acquire loads in the handlers, which call through the pointer.
    slot.store(p, Ordering::Release);
    // Relaxed: only the first caller registers; a fork that races with the very first
    // registration is not covered (the handlers did not exist yet when it began).
    if !REGISTERED.swap(true, Ordering::Relaxed) {
        register();
    }
}

#[cfg(unix)]
fn register() {
    // SAFETY: the three handlers are `extern "C"` functions with the signature
    // `pthread_atfork` expects, and they stay valid for the life of the process. The only
    // error is ENOMEM, after which the process runs without the handlers, as before.
    let _ = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}

#[cfg(not(unix))]
fn register() {}

/// Calls `f` on every registered participant, in rank order.
fn each(f: impl Fn(&Participant)) {
    for slot in &PARTICIPANTS {
        // Acquire: pairs with the Release store in `join_slow`.
        let p = slot.load(Ordering::Acquire);
        // SAFETY: non-null values are `&'static Participant`s stored by `join`.
        if let Some(p) = unsafe { p.as_ref() } {
            f(p);
        }
    }
}

/// Drops the kept guards, the last taken first.
fn release_kept() {
    let _ = KEPT.try_with(|k| {
        let mut k = k.borrow_mut();
        while let Some(g) = k.pop() {
            drop(g);
        }
    });
}

// A panic must not unwind into the C code that calls a handler; participants do not panic
// (their locks' poisoning is ignored), so the `catch_unwind`s only guard against a validator
// bug. If the thread-local is gone (a fork from a thread-local destructor), nothing is taken.

#[cfg(unix)]
extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(|| {
        let _ = KEPT.try_with(|k| {
            // Kept first, so dropped last: no participant joins until the fork is over.
            let joining = JOINING.lock().unwrap_or_else(PoisonError::into_inner);
            k.borrow_mut().push(Box::new(joining));
            each(|p| {
                let g = (p.prepare)();
                k.borrow_mut().push(g);
            })
        });
    });
}

#[cfg(unix)]
extern "C" fn parent() {
    let _ = std::panic::catch_unwind(release_kept);
}

#[cfg(unix)]
extern "C" fn child() {
    let _ = std::panic::catch_unwind(|| {
        each(|p| (p.child)());
        release_kept();
    });
}
