//! The atomics, fences and thread-locals the algorithm uses, from `std` normally and from
//! `loom` under `cfg(loom)`, so that the algorithm code is identical under both (the
//! crossbeam-epoch pattern). Only the algorithm's own synchronization goes through here;
//! statistics counters and configuration flags carry no ordering and use `std` directly.

#[cfg(loom)]
pub use loom::sync::atomic::AtomicPtr;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread_local;

#[cfg(not(loom))]
pub use std::sync::atomic::AtomicPtr;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// One step of a busy-wait. Under loom this yields to the model's scheduler, which a
/// spin loop must do for loom to explore the other threads.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
