//! Waiting for a blocking slot: spin first, then sleep with exponential backoff.
//!
//! No fixed tick: a reader that releases within a few microseconds is noticed while we
//! spin; a long holder costs us sleeps that double from 1 µs up to 1 ms, so the delay
//! after its release is at most about the time it had already held the slot (or 1 ms).

use std::time::Duration;

use crate::primitive::spin_hint;

pub(crate) const SPIN_ROUNDS: u32 = 8; // 2^0 + ... + 2^7 = 255 spin hints, a few µs
const MAX_SLEEP: Duration = Duration::from_millis(1);

pub(crate) struct Backoff {
    round: u32,
    sleep: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff {
            round: 0,
            sleep: Duration::from_micros(1),
        }
    }

    pub(crate) fn wait(&mut self) {
        if cfg!(loom) {
            // Under loom a spin is a yield to the model's scheduler; one is enough.
            spin_hint();
        } else if self.round < SPIN_ROUNDS {
            for _ in 0..1u32 << self.round {
                spin_hint();
            }
            self.round += 1;
        } else {
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(MAX_SLEEP);
        }
    }
}
