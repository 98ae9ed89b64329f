//! [`Condvar`]: the raw condition variable, for this crate's [`MutexGuard`], with the waits
//! fed to lockdep.

use std::panic::Location;
use std::time::{Duration, Instant};

use crate::dep::{CondDep, Track};
use crate::generic::MutexGuard;
pub use crate::raw::WaitTimeoutResult;
use crate::raw::{self, CondvarMutex};

/// A condition variable with the API of parking_lot 0.12's `Condvar`, waiting on this
/// crate's [`MutexGuard`](crate::MutexGuard) (or any `generic::MutexGuard<'_, R, T>` whose
/// raw mutex `R` is a [`CondvarMutex`]).
///
/// A wait releases the mutex and re-locks it before returning. Lockdep sees exactly that: a
/// release, then a blocking re-acquire, validated with the locks the thread holds at that
/// moment. Waiting on `M` while holding `B` that was taken after `M` is therefore reported as
/// the cycle `M -> B -> M` (the re-lock of `M` under `B` inverts the order), while a plain
/// wait is silent.
///
/// The re-acquire is validated when each wait *starts*: the report must come before the
/// thread can block (also if no notification ever comes). The held locks cannot change while
/// the thread sleeps, so the verdict is the same. After waking, the re-lock is announced like
/// a blocking lock's (tried first; if the mutex is held, `lockdep::lock_contended`, block,
/// `lockdep::lock_acquired`), so the watchdog and the dump see a re-lock stalled behind a
/// holder. While the thread sleeps (from just before it parks until it owns the mutex again
/// or its re-lock's wait is announced), other threads see it as *not* holding the mutex but
/// sleeping on this condvar (`lockdep::condvar_sleep`; the dump's `ThreadLocks::condvar`):
/// parked workers of a pool do not show as holders of its queue's mutex, and the watchdog
/// names the mutex's real holder. A lock reported freed while a thread sleeps on it leaves
/// that thread's stack, and its guard then releases nothing.
///
/// Once waits are watched ([`lockdep::waits_watched`]: the watchdog was started, or
/// `lockdep::deadlocks_now` was called), a notified waiter whose mutex validation tracks is
/// woken rather than requeued onto the mutex (see [`raw::Condvar`]), so that its re-lock is
/// an announced wait: a requeued thread would wait inside the parking lot, unseen. Until then
/// it is requeued, as parking_lot does, and a notification sent while holding the mutex wakes
/// it once, at the unlock, instead of twice (the wake-up, then the wait for the notifier's
/// unlock): measured, the ping-pong round trip of `benches/overhead.rs` is then within noise
/// of parking_lot's instead of 1.4-2.5 times it. A requeued waiter shows in a dump as asleep
/// in its condvar wait, with the mutex it will re-lock. With
/// lockdep's `Policy::Panic`, the panic happens before the thread waits; the guard then
/// still owns the mutex and unlocks it as the panic unwinds.
///
/// With lockdep's opt-in condvar tracking (`lockdep::set_condvar_tracking(true)`), the
/// condvar is also a pseudo-lock whose class is its construction site: a wait records the
/// locks still held while waiting, a notification the locks held while notifying, so "wait
/// holding `L`, notify only after taking `L`" is reported without the hang.
///
/// One condvar may be used with several mutexes (see [`raw::Condvar`]; parking_lot panics
/// instead). `const fn new`, `Send + Sync`; one pointer, plus a lock map with `validate`.
pub struct Condvar {
    inner: raw::Condvar,
    dep: CondDep,
}

impl Condvar {
    /// A new condition variable with no waiters; its pseudo-lock class (for condvar
    /// tracking) is the caller's location.
    #[inline]
    #[track_caller]
    pub const fn new() -> Condvar {
        Condvar {
            inner: raw::Condvar::new(),
            dep: CondDep::new(),
        }
    }

    /// Wakes one waiting thread; returns whether there was one.
    #[inline]
    #[track_caller]
    pub fn notify_one(&self) -> bool {
        self.dep.notify(Location::caller());
        self.inner.notify_one()
    }

    /// Wakes every waiting thread; returns how many there were.
    #[inline]
    #[track_caller]
    pub fn notify_all(&self) -> usize {
        self.dep.notify(Location::caller());
        self.inner.notify_all()
    }

    /// One wait: the release and validated re-acquire, then the raw wait.
    #[inline]
    fn wait_once<T: ?Sized, R: CondvarMutex>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
    ) -> WaitTimeoutResult {
        let (mutex, dep, mut track) = MutexGuard::wait_parts(guard);
        let saved = track.suspend(dep, site);
        self.dep.wait(site);
        track.resume(dep, saved, site);
        // Tracked while waits are watched (the watchdog, `deadlocks_now`), the waiter is woken
        // rather than requeued onto the mutex, so that the re-lock below is its own and
        // announced like a blocking lock's wait. Otherwise requeued, as parking_lot does: a
        // notification sent while holding the mutex then wakes the waiter once, at the unlock.
        let tracked = track.is_held();
        let requeue = !tracked || !lockdep::waits_watched();
        // Tracked, the map (always there with `validate`, which alone tracks): other threads
        // see the re-lock's entry as not held from here until the mutex is owned again.
        let sleep = dep.map().filter(|_| tracked);
        if let Some(map) = sleep {
            self.dep.sleep(map);
        }
        // SAFETY: the guard holds `mutex`, which is the raw mutex `as_raw_mutex` returns
        // (`CondvarMutex`'s contract); it holds it again below, before the guard is used.
        let woken = unsafe {
            self.inner
                .park_released(mutex.as_raw_mutex(), deadline, requeue)
        };
        match sleep {
            Some(map) => {
                // The sleep ends when the mutex is owned (or the re-lock's wait is announced,
                // `lock_contended`, which ends it too). If another thread's check took the
                // entry off meanwhile (the lock was reported freed), the guard has nothing
                // to release any more.
                let still_held = if woken.relocked || lock_api::RawMutex::try_lock(mutex) {
                    lockdep::condvar_woken(map)
                } else {
                    dep.contended(site);
                    lock_api::RawMutex::lock(mutex);
                    dep.acquired();
                    lockdep::is_held(map)
                };
                if !still_held {
                    *track = Track::NONE;
                }
            }
            None if woken.relocked => {}
            None => lock_api::RawMutex::lock(mutex),
        }
        woken.result
    }

    fn wait_while_deadline<T: ?Sized, R: CondvarMutex>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
    ) -> WaitTimeoutResult {
        while condition(&mut **guard) {
            let result = self.wait_once(guard, deadline, site);
            if result.timed_out() {
                return result;
            }
        }
        raw::WaitTimeoutResult::not_timed_out()
    }

    /// Releases the mutex, waits for a notification (or a spurious wake-up), re-locks.
    #[inline]
    #[track_caller]
    pub fn wait<T: ?Sized, R: CondvarMutex>(&self, guard: &mut MutexGuard<'_, R, T>) {
        self.wait_once(guard, None, Location::caller());
    }

    /// Like [`wait`](Self::wait), giving up at `timeout` (an instant).
    #[inline]
    #[track_caller]
    pub fn wait_until<T: ?Sized, R: CondvarMutex>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        timeout: Instant,
    ) -> WaitTimeoutResult {
        self.wait_once(guard, Some(timeout), Location::caller())
    }

    /// Like [`wait`](Self::wait), giving up after `timeout` (no deadline if `now + timeout`
    /// cannot be represented).
    #[inline]
    #[track_caller]
    pub fn wait_for<T: ?Sized, R: CondvarMutex>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        let deadline = Instant::now().checked_add(timeout);
        self.wait_once(guard, deadline, Location::caller())
    }

    /// Waits while `condition` returns true (checked with the mutex held, first before any
    /// wait); each wait is validated as above.
    #[inline]
    #[track_caller]
    pub fn wait_while<T: ?Sized, R: CondvarMutex, F>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        condition: F,
    ) where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_deadline(guard, condition, None, Location::caller());
    }

    /// [`wait_while`](Self::wait_while) giving up after `timeout`: timed out as soon as one
    /// wait times out (the condition is not checked again then), as parking_lot does.
    #[inline]
    #[track_caller]
    pub fn wait_while_for<T: ?Sized, R: CondvarMutex, F>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        let deadline = Instant::now().checked_add(timeout);
        self.wait_while_deadline(guard, condition, deadline, Location::caller())
    }

    /// [`wait_while`](Self::wait_while) giving up at `timeout` (an instant).
    #[inline]
    #[track_caller]
    pub fn wait_while_until<T: ?Sized, R: CondvarMutex, F>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        condition: F,
        timeout: Instant,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_deadline(guard, condition, Some(timeout), Location::caller())
    }
}

impl Default for Condvar {
    /// A new condition variable; its class is the caller's location.
    #[inline]
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Condvar { .. }")
    }
}
