//! [`RawFairMutex`]: [`RawMutex`] whose every unlock is fair.

use std::time::{Duration, Instant};

use lock_api::RawMutexFair as _;

use super::RawMutex;

/// A raw mutex for [`lock_api::Mutex`] whose `unlock` always hands the mutex to the
/// longest-parked thread when there is one (parking_lot 0.12's `RawFairMutex`).
///
/// Same byte and protocol as [`RawMutex`]; only `unlock` differs (it is
/// [`unlock_fair`](lock_api::RawMutexFair::unlock_fair)). Lock order is then FIFO among
/// parked threads, at the price of a context switch per contended hand-over. A thread that
/// has not parked yet (spinning or just arriving) may still take a free mutex first.
/// `Send + Sync`; guards are `!Send`.
pub struct RawFairMutex(RawMutex);

// SAFETY: every method forwards to `RawMutex`, which is a correct raw mutex; `unlock` forwards
// to `RawMutex::unlock_fair`, which is a correct unlock.
unsafe impl lock_api::RawMutex for RawFairMutex {
    const INIT: RawFairMutex = RawFairMutex(RawMutex::INIT);

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock(&self) {
        self.0.lock();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: forwarded; our caller owns the mutex, as `unlock_fair` requires.
        unsafe { self.0.unlock_fair() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

// SAFETY: forwards to `RawMutex`'s fair unlock and bump.
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: forwarded; our caller owns the mutex.
        unsafe { self.0.unlock_fair() }
    }

    #[inline]
    unsafe fn bump(&self) {
        // SAFETY: forwarded; our caller owns the mutex.
        unsafe { self.0.bump() }
    }
}

// SAFETY: forwards to `RawMutex`'s timed locks.
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.0.try_lock_for(timeout)
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        self.0.try_lock_until(timeout)
    }
}
