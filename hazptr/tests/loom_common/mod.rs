//! Pieces shared by the loom models (`loom.rs`, `loom_shared.rs`).
#![allow(dead_code)] // each model file uses a subset

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use hazptr::{AtomicPtr, Domain};
use loom::cell::UnsafeCell;
use loom::thread;

const POISON: u64 = 0xdead;

/// A heap object whose every access loom checks for causality: a read by a reader that
/// is not ordered before the writer's poisoning write is reported as a data race.
pub struct Obj(UnsafeCell<u64>);

/// A fresh object holding `v`.
pub fn obj(v: u64) -> *mut Obj {
    Box::into_raw(Box::new(Obj(UnsafeCell::new(v))))
}

/// Read `p`'s cell; loom reports a race if a poisoning write is not ordered after it.
pub fn read(p: *mut Obj) {
    // SAFETY: objects live until the model ends (`free`); loom checks the ordering.
    unsafe { (*p).0.with(|v| assert_ne!(*v, POISON)) }
}

/// Poison `p`'s cell, as a free would.
pub fn poison(p: *mut Obj) {
    // SAFETY: as in `read`; callers poison only after synchronize returned.
    unsafe { (*p).0.with_mut(|v| *v = POISON) }
}

/// Re-initialize `p`'s cell as a new object holding `v` (an allocation that landed at a
/// freed address); callers do so only after the old object was poisoned.
pub fn reinit(p: *mut Obj, v: u64) {
    // SAFETY: as in `read`; loom checks the ordering against every reader.
    unsafe { (*p).0.with_mut(|c| *c = v) }
}

/// Free objects made by `obj`, once, after every thread of the model joined.
pub fn free(objs: &[*mut Obj]) {
    for &p in objs {
        // SAFETY: allocated by `obj`, freed once here.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// A model builder with the given preemption bound unless `LOOM_MAX_PREEMPTIONS` is set.
pub fn builder(preemptions: usize) -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(preemptions);
    }
    b
}

/// The model must fail (its fault must be caught).
pub fn must_fail(what: &str, model: impl FnOnce()) {
    let result = catch_unwind(AssertUnwindSafe(model));
    assert!(
        result.is_err(),
        "the model did not catch the injected fault: {what}"
    );
}

/// A writer thread: publish `y` in place of `x`, synchronize on `x`, poison `x`.
pub fn spawn_writer(
    d: &Arc<Domain>,
    src: &Arc<AtomicPtr<Obj>>,
    x: *mut Obj,
    y: *mut Obj,
) -> thread::JoinHandle<()> {
    let (d, src) = (d.clone(), src.clone());
    let (xa, ya) = (x as usize, y as usize);
    thread::spawn(move || {
        // Release: a reader that loads `y` sees its initialization.
        src.store(ya as *mut Obj, Ordering::Release);
        d.synchronize(xa as *const Obj).unwrap();
        poison(xa as *mut Obj);
    })
}
