//! Waiting for a blocking slot: spin first, then sleep with exponential backoff.
//!
//! No fixed tick. A reader that releases within [`SPIN_FOR`] is noticed while we spin:
//! a first sleep costs far more than it asks for (timer slack; BENCHMARKS.md has the
//! figure for the machine measured), so sleeping earlier would make short holds expensive.
//! A longer holder costs us sleeps that double from 1 µs up to [`MAX_SLEEP`], so the delay
//! after its release is at most about the time it had already held the slot, or
//! `MAX_SLEEP`.
//!
//! In the loom build time does not exist: each wait is one yield to the model's scheduler.

use std::time::{Duration, Instant};

use crate::primitive::{spin_hint, MODEL_CHECKED};

/// How long to spin before the first sleep: about one `membarrier` with IPIs, or one
/// handoff between threads, so short holds never pay for a sleep.
const SPIN_FOR: Duration = Duration::from_micros(20);
/// The longest sleep between two polls.
const MAX_SLEEP: Duration = Duration::from_millis(1);
/// The longest spinning pause is `2^MAX_SPIN_DOUBLINGS` pause instructions, a small
/// fraction of [`SPIN_FOR`]. Spinning waiters are few by design (one poller in the shared
/// scan), so polling often costs little, while a pause that kept doubling would notice a
/// release up to a whole pause late: as late as the wait had already lasted, and on CPUs
/// with a slow pause instruction longer than `SPIN_FOR` itself (BENCHMARKS.md has the
/// figure measured).
const MAX_SPIN_DOUBLINGS: u32 = 5;

/// The state of one wait (one blocking slot, or one shared barrier).
pub(crate) struct Backoff {
    start: Option<Instant>,
    round: u32,
    sleep: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            start: None,
            round: 0,
            sleep: Duration::from_micros(1),
        }
    }

    /// Wait a little before the next poll.
    pub(crate) fn wait(&mut self) {
        match self.next_pause() {
            Some(sleep) => std::thread::sleep(sleep),
            None => self.spin(),
        }
    }

    /// Start the next pause: `None` while spinning (call [`Backoff::spin`]), else how
    /// long to sleep (a waiter that others may wake sleeps on its condition variable).
    pub(crate) fn next_pause(&mut self) -> Option<Duration> {
        self.round += 1;
        if MODEL_CHECKED {
            return None;
        }
        let start = *self.start.get_or_insert_with(Instant::now);
        if start.elapsed() < SPIN_FOR {
            return None;
        }
        let sleep = self.sleep;
        self.sleep = (self.sleep * 2).min(MAX_SLEEP);
        Some(sleep)
    }

    /// One spinning pause: a spin loop that doubles each round up to
    /// `2^MAX_SPIN_DOUBLINGS` pause instructions; in the loom build one yield to the
    /// model's scheduler.
    pub(crate) fn spin(&self) {
        if MODEL_CHECKED {
            spin_hint();
            return;
        }
        for _ in 0..1u32 << self.round.min(MAX_SPIN_DOUBLINGS) {
            spin_hint();
        }
    }
}
