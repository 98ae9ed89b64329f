//! Contended acquisitions: the wrappers say when a thread starts and stops blocking on a lock
//! (the kernel's `lock_contended()` and `lock_acquired()`, the hooks of its lock_stat). The
//! wait is published in the thread's shared record for the watchdog and the dump, and counted
//! by lock_stat when it is on.

use std::panic::Location;

use crate::lock_stat;
use crate::map::LockMap;
use crate::thread::with_state;
use crate::watchdog;

/// Records that this thread is about to block on `map`, whose acquisition it already made
/// (an [`acquire`](crate::acquire) that is not a trylock, whose raw lock's try failed). Call
/// it only on the contended path, then block, then call [`lock_acquired`] (also if the wait
/// gives up). `site` is where the acquisition was called.
///
/// Cost: a write section of the thread's record and a clock read; with lock_stat on, its
/// bookkeeping. The first call reads the watchdog's environment variable
/// ([`WATCHDOG_ENV`](crate::WATCHDOG_ENV)) and starts the watchdog if it is set.
/// Thread-safe.
pub fn lock_contended(map: &LockMap, site: &'static Location<'static>) {
    with_state(|st| {
        if let Some(r) = st.record() {
            r.wait_start(map.instance());
        }
    });
    if lock_stat::on() {
        lock_stat::contended(map, site);
    }
    watchdog::start_from_env_once();
}

/// Records that the wait [`lock_contended`] announced is over (the lock is held, or the wait
/// gave up). Thread-safe.
pub fn lock_acquired(map: &LockMap) {
    with_state(|st| {
        if let Some(r) = st.record() {
            r.wait_done();
        }
    });
    if lock_stat::on() {
        lock_stat::acquired(map);
    }
}
