//! Helpers shared by the parity tests: hold a lock on another thread while the test checks
//! what the lock refuses or grants meanwhile. Interleavings are fixed by channels, never by
//! sleeping.

#![allow(dead_code)]

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A timeout for timed lock attempts that must fail (the lock is held elsewhere for the whole
/// attempt): short, so the suite stays fast; its length does not decide any verdict.
pub const SHORT: Duration = Duration::from_millis(2);

/// A deadline [`SHORT`] from now.
pub fn soon() -> Instant {
    Instant::now() + SHORT
}

/// A timeout for timed lock attempts that must succeed at once (the lock is free): long, so a
/// slow machine cannot turn the success into a timeout.
pub const LONG: Duration = Duration::from_secs(60);

/// A deadline [`LONG`] from now.
pub fn later() -> Instant {
    Instant::now() + LONG
}

/// Runs `acquire` on a new thread, waits until it has returned (the lock it takes is then
/// held), runs `body` here, and only then lets that thread drop what `acquire` returned.
///
/// Returns what `body` returns. Panics if `acquire` panics. If `body` panics, the holder is
/// released first, so the panic is not turned into a hang.
pub fn while_held_elsewhere<G, A, B, R>(acquire: A, body: B) -> R
where
    A: FnOnce() -> G + Send,
    B: FnOnce() -> R,
{
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let holder = s.spawn(move || {
            let guard = acquire();
            held_tx.send(()).expect("the test thread is gone");
            // Err(RecvError) when `release_tx` is dropped: that is the release signal.
            let _ = release_rx.recv();
            drop(guard);
        });
        if held_rx.recv().is_err() {
            // The holder panicked before it held the lock: report its panic.
            std::panic::resume_unwind(holder.join().expect_err("holder ended without holding"));
        }
        let result = body();
        drop(release_tx);
        result
    })
}
