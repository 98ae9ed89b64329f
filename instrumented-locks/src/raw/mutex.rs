//! [`RawMutex`]: a one-byte mutex that spins briefly, then parks on its own address.
//!
//! # State byte
//!
//! | bit | name     | meaning                                                        |
//! | --- | -------- | -------------------------------------------------------------- |
//! | 0   | `LOCKED` | some thread owns the mutex                                     |
//! | 1   | `PARKED` | threads may be parked on key `addr` (the mutex's address)     |
//!
//! Transitions:
//!
//! - `lock` fast path: `0 -> LOCKED` (one CAS). `unlock` fast path: `LOCKED -> 0` (one CAS).
//!   Both fail as soon as `PARKED` is set, which sends the caller to the slow path.
//! - A locker that finds `LOCKED` spins with [`SpinWait`] while `PARKED` is clear, then sets
//!   `PARKED` and parks on `addr`; its validation (run under the queue's bucket lock) re-checks
//!   `LOCKED | PARKED`, so it never sleeps on a mutex that was released in between.
//! - A locker takes a free mutex even when `PARKED` is set (barging): `PARKED -> LOCKED|PARKED`.
//! - `unlock` with `PARKED` set wakes one parked thread through `unpark_one`. Inside the
//!   callback (bucket lock held) it either releases (`PARKED` kept if more threads are queued)
//!   and sends [`TOKEN_RETRY`], or, for a fair unlock, keeps `LOCKED` and sends
//!   [`TOKEN_HANDOFF`]: the woken thread then owns the mutex without touching the byte.
//! - A timed-out parked thread that was the last one on `addr` clears `PARKED` from its
//!   `timed_out` callback (bucket lock held, so no thread can enqueue meanwhile).
//!
//! [`Condvar`](super::Condvar) also requeues its waiters onto `addr` and sets `PARKED` for
//! them ([`RawMutex::mark_parked_if_locked`], [`RawMutex::mark_parked`]); the waiters treat
//! the two tokens as every parked locker does.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use parking_lot_core::{ParkResult, SpinWait, UnparkResult, UnparkToken, DEFAULT_PARK_TOKEN};

use super::{deadline_after, deadlock_acquire, deadlock_release};

const LOCKED: u8 = 0b01;
const PARKED: u8 = 0b10;

/// Unpark token: the mutex was released; the woken thread competes for it again.
pub(super) const TOKEN_RETRY: UnparkToken = UnparkToken(0);
/// Unpark token: the unlocking thread kept `LOCKED` set for the woken thread, which now owns
/// the mutex.
pub(super) const TOKEN_HANDOFF: UnparkToken = UnparkToken(1);

/// A raw mutex for [`lock_api::Mutex`], with parking_lot 0.12's `RawMutex` semantics: one
/// byte, one CAS to lock and one to unlock when nobody is parked, a short spin and then
/// parking in the process-wide parking lot (`parking_lot_core`) on the mutex's address.
///
/// Unfair by default (a running thread may take the mutex ahead of parked ones, which keeps
/// throughput high); [`unlock_fair`](lock_api::RawMutexFair::unlock_fair) hands the mutex
/// directly to a parked thread, and parking_lot_core asks for such a fair unlock on average
/// every 0.5 ms per queue (`UnparkResult::be_fair`), which bounds starvation.
///
/// `Send + Sync`; guards are `!Send` unless the `send_guard` feature is on
/// ([`GuardMarker`](crate::GuardMarker)). Not reentrant: locking it
/// twice on one thread deadlocks. Use `lock_api::Mutex<RawMutex, T>` rather than this type
/// directly.
pub struct RawMutex {
    state: AtomicU8,
}

// SAFETY: `lock`/`try_lock` succeed only by setting `LOCKED` (with a CAS that saw it clear) or
// by receiving `TOKEN_HANDOFF`, which an unlocker sends only while it keeps `LOCKED` set on the
// new owner's behalf; `LOCKED` is cleared only by `unlock` (the owner). So at most one thread
// owns the mutex, and Acquire/Release (or the handoff through the parking lot) orders each
// critical section after the previous one.
unsafe impl lock_api::RawMutex for RawMutex {
    const INIT: RawMutex = RawMutex {
        state: AtomicU8::new(0),
    };

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock(&self) {
        // Acquire: pairs with the Release of the previous unlock, so its critical section
        // happens-before ours. Relaxed on failure: the slow path reloads.
        if self
            .state
            .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow(None);
        }
        deadlock_acquire(self.key());
    }

    #[inline]
    fn try_lock(&self) -> bool {
        // Acquire on success: as in `lock`. Relaxed on failure: we only test the bit.
        let locked =
            match self
                .state
                .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => true,
                // Free but with threads parked (they are being woken): take it anyway, as `lock`
                // would.
                Err(state) if state & LOCKED == 0 => self.try_lock_parked(),
                Err(_) => false,
            };
        self.deadlock_acquired(locked)
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.release(false);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot; the answer may be stale by the time the caller looks at it.
        self.state.load(Ordering::Relaxed) & LOCKED != 0
    }
}

// SAFETY: `unlock_fair` keeps exclusion (it either releases like `unlock` or hands `LOCKED`
// to exactly one woken thread); `bump` is an `unlock_fair` followed by `lock`.
unsafe impl lock_api::RawMutexFair for RawMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        self.release(true);
    }

    #[inline]
    unsafe fn bump(&self) {
        // Relaxed: a hint; a stale answer only skips or adds one yield.
        if self.state.load(Ordering::Relaxed) & PARKED != 0 {
            self.bump_slow();
        }
    }
}

// SAFETY: the timed variants run the same protocol as `lock` and only add a deadline to the
// park; a timed-out park leaves the mutex untouched (apart from `PARKED` bookkeeping).
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.lock_until(deadline_after(timeout))
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        self.lock_until(Some(timeout))
    }
}

impl RawMutex {
    /// The parking key of this mutex: its address.
    #[inline]
    fn key(&self) -> usize {
        self as *const RawMutex as usize
    }

    /// The timed locks: the fast path, else the slow path with `deadline` (`None`: none).
    #[inline]
    fn lock_until(&self, deadline: Option<Instant>) -> bool {
        // Acquire/Relaxed: as in `lock`.
        let locked = self
            .state
            .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            || self.lock_slow(deadline);
        self.deadlock_acquired(locked)
    }

    /// `unlock` (`fair`: `unlock_fair`): the fast path `LOCKED -> 0`, else the slow path.
    /// The caller owns the mutex.
    #[inline]
    fn release(&self, fair: bool) {
        deadlock_release(self.key());
        // Release: publishes our critical section to the next locker's Acquire.
        if self
            .state
            .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow(fair);
        }
    }

    /// `locked`, after telling the deadlock detector of the acquisition if it succeeded.
    #[inline(always)]
    fn deadlock_acquired(&self, locked: bool) -> bool {
        if locked {
            deadlock_acquire(self.key());
        }
        locked
    }

    /// For a condvar wait that received the mutex by handoff (without calling `lock`).
    #[inline]
    pub(super) fn deadlock_handed_over(&self) {
        deadlock_acquire(self.key());
    }

    /// `try_lock` after the first CAS saw the mutex free with `PARKED` set.
    #[cold]
    fn try_lock_parked(&self) -> bool {
        // Relaxed: only a starting value for the CAS loop.
        let mut state = self.state.load(Ordering::Relaxed);
        while state & LOCKED == 0 {
            // Acquire on success: as in `lock`.
            match self.state.compare_exchange_weak(
                state,
                state | LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
        false
    }

    /// Blocks until the mutex is ours or `deadline` passes; returns whether it is ours.
    #[cold]
    fn lock_slow(&self, deadline: Option<Instant>) -> bool {
        let mut spin = SpinWait::new();
        // Relaxed: every decision below is confirmed by a CAS or by `park`'s validation.
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & LOCKED == 0 {
                // Acquire on success: pairs with the Release of the unlock that freed it.
                match self.state.compare_exchange_weak(
                    state,
                    state | LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return true,
                    Err(now) => state = now,
                }
                continue;
            }
            // Held. Nobody queued yet: the holder may be about to leave, spin a little.
            if state & PARKED == 0 && spin.spin() {
                // Relaxed: re-read for the next round.
                state = self.state.load(Ordering::Relaxed);
                continue;
            }
            if state & PARKED == 0 {
                // Relaxed: `PARKED` only routes the unlocker to the slow path; the park's
                // validation re-checks it under the bucket lock.
                if let Err(now) = self.state.compare_exchange_weak(
                    state,
                    state | PARKED,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    state = now;
                    continue;
                }
            }
            // SAFETY: the key is the address of this mutex, which only this module parks on
            // (and `Condvar`, which requeues onto it with the same token protocol); the
            // callbacks neither panic nor call into parking_lot_core.
            let result = unsafe {
                parking_lot_core::park(
                    self.key(),
                    // Relaxed: the bucket lock orders this read against the unlocker's
                    // callback, which changes the byte only while holding it.
                    || self.state.load(Ordering::Relaxed) == LOCKED | PARKED,
                    || {},
                    |_, was_last_thread| {
                        if was_last_thread {
                            // Relaxed: bookkeeping under the bucket lock; nobody else is
                            // queued on this key, so no unlocker needs the slow path for us.
                            self.state.fetch_and(!PARKED, Ordering::Relaxed);
                        }
                    },
                    DEFAULT_PARK_TOKEN,
                    deadline,
                )
            };
            match result {
                // The unlocker kept `LOCKED` for us. Everything it did before the callback
                // happens-before our return from `park` (parking_lot_core hands the token
                // over through the parked thread's own synchronisation), so no load is needed.
                ParkResult::Unparked(TOKEN_HANDOFF) => return true,
                ParkResult::TimedOut => return false,
                ParkResult::Unparked(_) | ParkResult::Invalid => {}
            }
            spin.reset();
            // Relaxed: as above.
            state = self.state.load(Ordering::Relaxed);
        }
    }

    /// Unlock with `PARKED` set: wake one parked thread, handing it the mutex if `fair` (or
    /// if parking_lot_core says it is time for a fair unlock).
    #[cold]
    fn unlock_slow(&self, fair: bool) {
        let callback = |result: UnparkResult| {
            // Runs under the bucket lock. The byte is `LOCKED | PARKED` and nothing else can
            // change it now: lockers only set `PARKED` when it is clear, and timed-out
            // waiters and `Condvar` change it under this same bucket lock.
            if result.unparked_threads != 0 && (fair || result.be_fair) {
                if !result.have_more_threads {
                    // Relaxed: the new owner is synchronised through the parking lot.
                    self.state.store(LOCKED, Ordering::Relaxed);
                }
                return TOKEN_HANDOFF;
            }
            let state = if result.have_more_threads { PARKED } else { 0 };
            // Release: this store releases the mutex; the next locker's Acquire CAS reads it.
            self.state.store(state, Ordering::Release);
            TOKEN_RETRY
        };
        // SAFETY: our own key; the callback neither panics nor calls into parking_lot_core.
        unsafe {
            parking_lot_core::unpark_one(self.key(), callback);
        }
    }

    #[cold]
    fn bump_slow(&self) {
        // Our caller (`bump`) owns the mutex and saw `PARKED`: a fair unlock hands it over.
        deadlock_release(self.key());
        self.unlock_slow(true);
        lock_api::RawMutex::lock(self);
    }

    /// Sets `PARKED` if the mutex is locked; returns whether it was locked.
    ///
    /// For [`Condvar`](super::Condvar): called with the mutex's bucket locked, just before
    /// it requeues waiters onto the mutex's key, so that the holder's unlock takes the slow
    /// path and wakes them (the unlock then waits for the bucket lock until the requeue is
    /// done).
    pub(super) fn mark_parked_if_locked(&self) -> bool {
        // Relaxed: ordering comes from the bucket lock, as in `lock_slow`'s validation.
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & LOCKED == 0 {
                return false;
            }
            if state & PARKED != 0 {
                return true;
            }
            // Relaxed: as above.
            match self.state.compare_exchange_weak(
                state,
                state | PARKED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => state = now,
            }
        }
    }

    /// Sets `PARKED` (for [`Condvar`](super::Condvar), bucket lock held, after requeueing
    /// waiters onto this mutex while a woken thread is about to lock it).
    pub(super) fn mark_parked(&self) {
        // Relaxed: bookkeeping; the woken thread's lock and unlock see it through the mutex's
        // own Acquire/Release chain or the bucket lock.
        self.state.fetch_or(PARKED, Ordering::Relaxed);
    }

    /// Clears `PARKED` (for a [`Condvar`](super::Condvar) waiter that timed out as the last
    /// thread parked on this mutex's key; bucket lock held).
    pub(super) fn clear_parked(&self) {
        // Relaxed: as in `lock_slow`'s `timed_out` callback.
        self.state.fetch_and(!PARKED, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::thread;
    use std::time::Duration;

    use lock_api::{RawMutex as _, RawMutexFair as _, RawMutexTimed as _};

    use super::{RawMutex, LOCKED, PARKED};
    use crate::raw::test_support::wait_parked;

    fn state(m: &RawMutex) -> u8 {
        m.state.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn a_sole_waiter_that_times_out_clears_parked() {
        let m = RawMutex::INIT;
        m.lock();
        thread::scope(|s| {
            s.spawn(|| assert!(!m.try_lock_for(Duration::from_millis(5))));
        });
        assert_eq!(state(&m), LOCKED);
        // SAFETY: locked above.
        unsafe { m.unlock() };
        assert_eq!(state(&m), 0);
    }

    #[test]
    fn handoff_to_the_last_waiter_leaves_locked_only() {
        let m = RawMutex::INIT;
        m.lock();
        thread::scope(|s| {
            s.spawn(|| {
                m.lock();
                assert_eq!(state(&m), LOCKED, "handed over, queue empty");
                // SAFETY: just locked (handed over).
                unsafe { m.unlock() };
            });
            wait_parked(m.key(), 1);
            assert_eq!(state(&m), LOCKED | PARKED);
            // SAFETY: locked above.
            unsafe { m.unlock_fair() };
        });
        assert_eq!(state(&m), 0);
    }
}
