//! [`Condvar`]: `parking_lot::Condvar` for this crate's [`MutexGuard`].

use std::panic::Location;
use std::time::{Duration, Instant};

use lockdep::Mode;
pub use parking_lot::WaitTimeoutResult;

use crate::mutex::MutexGuard;

/// A condition variable with the API of [`parking_lot::Condvar`], waiting on this crate's
/// [`MutexGuard`].
///
/// A wait releases the mutex and re-locks it before returning. Lockdep sees exactly that: a
/// release, then a blocking re-acquire, validated with the locks the thread holds at that
/// moment. Waiting on `M` while holding `B` that was taken after `M` is therefore reported as
/// the cycle `M -> B -> M` (the re-lock of `M` under `B` inverts the order), while a plain
/// wait is silent.
///
/// The re-acquire is validated when the wait *starts*: parking_lot re-locks inside `wait`,
/// with no hook between wake-up and re-lock, and the report must come before the re-lock
/// can block. The held locks cannot change while the thread sleeps, so the verdict is the
/// same. With lockdep's `Policy::Panic`, the panic happens before the thread waits; the
/// guard then still owns the mutex and unlocks it as the panic unwinds.
///
/// The condvar itself is not a lock class. `const fn new`, `Send + Sync`.
#[derive(Debug, Default)]
pub struct Condvar {
    inner: parking_lot::Condvar,
}

impl Condvar {
    /// A new condition variable (`const`).
    pub const fn new() -> Condvar {
        Condvar {
            inner: parking_lot::Condvar::new(),
        }
    }

    /// Wakes one waiter; returns whether one was woken.
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.inner.notify_one()
    }

    /// Wakes every waiter; returns how many were woken.
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.inner.notify_all()
    }

    /// Releases the mutex, waits for a notification (or a spurious wake-up), re-locks.
    #[track_caller]
    pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
        guard.track.reacquire(Mode::Exclusive, Location::caller());
        self.inner.wait(&mut guard.inner);
    }

    /// Like [`wait`](Self::wait), giving up at `deadline`.
    #[track_caller]
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        guard.track.reacquire(Mode::Exclusive, Location::caller());
        self.inner.wait_until(&mut guard.inner, deadline)
    }

    /// Like [`wait`](Self::wait), giving up after `timeout`.
    #[track_caller]
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        guard.track.reacquire(Mode::Exclusive, Location::caller());
        self.inner.wait_for(&mut guard.inner, timeout)
    }

    /// Waits while `condition` returns true (checked with the mutex held, before the first
    /// wait too).
    #[track_caller]
    pub fn wait_while<T: ?Sized, F>(&self, guard: &mut MutexGuard<'_, T>, condition: F)
    where
        F: FnMut(&mut T) -> bool,
    {
        guard.track.reacquire(Mode::Exclusive, Location::caller());
        self.inner.wait_while(&mut guard.inner, condition);
    }

    /// [`wait_while`](Self::wait_while) giving up after `timeout`.
    #[track_caller]
    pub fn wait_while_for<T: ?Sized, F>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        guard.track.reacquire(Mode::Exclusive, Location::caller());
        self.inner
            .wait_while_for(&mut guard.inner, condition, timeout)
    }

    /// [`wait_while`](Self::wait_while) giving up at `deadline`.
    #[track_caller]
    pub fn wait_while_until<T: ?Sized, F>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        condition: F,
        deadline: Instant,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        guard.track.reacquire(Mode::Exclusive, Location::caller());
        self.inner
            .wait_while_until(&mut guard.inner, condition, deadline)
    }
}
