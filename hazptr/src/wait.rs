//! Waiting for a blocking slot: spin first, then sleep with exponential backoff.
//!
//! No fixed tick. A reader that releases within about 20 µs is noticed while we spin
//! (the first sleep costs about 50–60 µs on Linux whatever is asked for, because of timer
//! slack, so sleeping earlier would make short holds expensive). A longer holder costs us
//! sleeps that double from 1 µs up to 1 ms, so the delay after its release is at most
//! about the time it had already held the slot, or 1 ms.

#[cfg(not(loom))]
use std::time::{Duration, Instant};

use crate::primitive::spin_hint;

/// How long to spin before the first sleep (the anchors' advice: about one barrier or
/// handoff time).
#[cfg(not(loom))]
const SPIN_FOR: Duration = Duration::from_micros(20);
/// How long a combiner waits for a slot that does not block its own request before it
/// hands the batch on (see `scan.rs`).
#[cfg(not(loom))]
const LONG_WAIT: Duration = Duration::from_millis(1);
#[cfg(not(loom))]
const MAX_SLEEP: Duration = Duration::from_millis(1);

pub(crate) struct Backoff {
    #[cfg(not(loom))]
    start: Option<Instant>,
    round: u32,
    #[cfg(not(loom))]
    sleep: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            #[cfg(not(loom))]
            start: None,
            round: 0,
            #[cfg(not(loom))]
            sleep: Duration::from_micros(1),
        }
    }

    /// Wait a little before the next poll.
    pub(crate) fn wait(&mut self) {
        self.round += 1;
        #[cfg(loom)]
        {
            // Under loom a spin is a yield to the model's scheduler; one is enough.
            spin_hint();
        }
        #[cfg(not(loom))]
        {
            let start = *self.start.get_or_insert_with(Instant::now);
            if start.elapsed() < SPIN_FOR {
                for _ in 0..1u32 << self.round.min(10) {
                    spin_hint();
                }
            } else {
                std::thread::sleep(self.sleep);
                self.sleep = (self.sleep * 2).min(MAX_SLEEP);
            }
        }
    }

    /// Whether this wait has gone on long enough for a combiner to hand off (about 1 ms;
    /// under loom, after the first poll, so the models explore handoffs).
    pub(crate) fn waited_long(&self) -> bool {
        #[cfg(loom)]
        return self.round >= 1;
        #[cfg(not(loom))]
        self.start.is_some_and(|s| s.elapsed() >= LONG_WAIT)
    }
}
