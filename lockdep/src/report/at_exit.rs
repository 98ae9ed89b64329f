//! Work done when the process exits: the exit line, the report summary and the list of
//! stale suppressions each arrange for one function to run then.
//!
//! One C `atexit` handler (registered by the first [`run_at_exit`]) runs every function
//! given, the last given first (as `atexit` itself orders handlers), each under
//! `catch_unwind`, since a panic must not unwind into the C runtime's `exit`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How many functions may be given: one per caller in this crate, with room to spare.
const CAPACITY: usize = 8;

/// The functions given, in the order given; an unset entry is free.
static HANDLERS: [OnceLock<fn()>; CAPACITY] = [const { OnceLock::new() }; CAPACITY];

/// How many entries of [`HANDLERS`] have been claimed.
static CLAIMED: AtomicUsize = AtomicUsize::new(0);

/// Arranges for `f` to run once when the process exits normally (`exit`, or a return from
/// `main`), not when it is killed or ends with `_exit`. Each call adds `f` again: callers
/// guard with their own once-flag. Thread-safe and lock-free.
///
/// Nothing is arranged (silently) past 8 functions, or where `atexit` has no slot left, or
/// on a target without `atexit`; what `f` would print is then not printed.
pub(crate) fn run_at_exit(f: fn()) {
    // Relaxed: the claim only picks an index (each index is claimed once); the `OnceLock`
    // publishes the function to the handler.
    let index = CLAIMED.fetch_add(1, Ordering::Relaxed);
    let Some(slot) = HANDLERS.get(index) else {
        return;
    };
    let _ = slot.set(f);
    if index == 0 {
        register();
    }
}

/// Runs every function given, the last first.
fn run_all() {
    for f in HANDLERS.iter().rev().filter_map(OnceLock::get) {
        // A panic must not unwind into the C runtime's exit.
        let _ = std::panic::catch_unwind(*f);
    }
}

#[cfg(unix)]
fn register() {
    extern "C" fn at_exit() {
        run_all();
    }
    // SAFETY: `at_exit` is an `extern "C" fn()` valid for the life of the process. The only
    // error is running out of `atexit` slots, after which nothing given here runs at exit.
    let _ = unsafe { libc::atexit(at_exit) };
}

#[cfg(not(unix))]
fn register() {}
