//! Entries that exiting threads left behind while guards are movable: the guard of such a
//! lock may live on another thread, which releases it later ([`crate::release_from`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::held::record::Holder;

/// Whether guards may move between threads ([`crate::set_guards_movable`]).
static MOVABLE: AtomicBool = AtomicBool::new(false);

/// Entries that exited threads left behind while movable guards of them lived on: (the
/// exited holding, instance), until the guard is released. At most [`MAX_ORPHANS`].
static ORPHANS: Mutex<Vec<(Holder, usize)>> = Mutex::new(Vec::new());

/// The most entries kept for exited threads; past it, a thread's exit reports its locks.
pub(crate) const MAX_ORPHANS: usize = 4096;

/// See [`crate::set_guards_movable`].
pub(crate) fn set_movable(on: bool) {
    // Relaxed: a setting read at thread exit; a thread exiting as it changes sees either.
    MOVABLE.store(on, Ordering::Relaxed);
}

/// At the exit of the thread of `holder`, with `instances` still held: if guards are movable
/// and there is room, keeps them for the releases to come from the threads that have the
/// guards now, and returns true (nothing to report).
pub(crate) fn orphan(holder: Holder, instances: impl ExactSizeIterator<Item = usize>) -> bool {
    // Relaxed: see `set_movable`.
    if !MOVABLE.load(Ordering::Relaxed) {
        return false;
    }
    let mut o = ORPHANS.lock().unwrap_or_else(|e| e.into_inner());
    if o.len() + instances.len() > MAX_ORPHANS {
        return false;
    }
    o.extend(instances.map(|i| (holder, i)));
    true
}

/// The release of `instance` by the exited holding `holder` arrived: forgets its entry.
pub(crate) fn forget(holder: Holder, instance: usize) {
    let mut o = ORPHANS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = o.iter().position(|&e| e == (holder, instance)) {
        o.swap_remove(i);
    }
}
