//! The `raw_*` tests' part of the harness: observe the parking lot without timing.

use std::time::Instant;

use parking_lot_core::{FilterOp, DEFAULT_UNPARK_TOKEN};

pub use super::HANG;

/// How many threads are parked on `key` right now (walks the queue, wakes nobody).
pub fn parked_on(key: usize) -> usize {
    let mut n = 0;
    // SAFETY: the filter skips every thread, so nothing is unparked and no lock's state is
    // touched; the closures do not panic or call into parking_lot_core.
    unsafe {
        parking_lot_core::unpark_filter(
            key,
            |_| {
                n += 1;
                FilterOp::Skip
            },
            |_| DEFAULT_UNPARK_TOKEN,
        );
    }
    n
}

/// The parking key of a lock: its address.
pub fn key_of<T>(lock: &T) -> usize {
    lock as *const T as usize
}

/// Yields until `cond` holds; panics (instead of hanging) after [`HANG`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG, "hang guard: never saw {what}");
        std::thread::yield_now();
    }
}

/// Waits until `n` threads are parked on `key`.
pub fn wait_parked(key: usize, n: usize) {
    wait_until(&format!("{n} thread(s) parked on {key:#x}"), || {
        parked_on(key) == n
    });
}

/// A one-shot gate that threads wait on until the test opens it (`Sync`, unlike a channel's
/// receiver). Built on `std::sync` so that it does not depend on the locks under test.
#[derive(Default)]
pub struct Gate {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Gate {
    /// Opens the gate for every waiter, now and later.
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    /// Waits until the gate is open; panics after [`HANG`].
    pub fn wait(&self) {
        let g = self.open.lock().unwrap();
        let (g, timeout) = self.cv.wait_timeout_while(g, HANG, |open| !*open).unwrap();
        assert!(*g && !timeout.timed_out(), "hang guard: gate never opened");
    }
}
