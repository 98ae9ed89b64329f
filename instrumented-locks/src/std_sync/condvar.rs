//! std-flavoured [`Condvar`].

use std::time::Duration;

use super::{map_result, LockResult, MutexGuard, WaitTimeoutResult};

/// `std::sync::Condvar`'s API (guards by value, `LockResult`) over the validated
/// [`crate::Condvar`]: a wait is a lockdep release plus a validated re-acquire (see there).
/// After waking, a poisoned mutex gives `Err` holding the re-locked guard.
pub struct Condvar {
    inner: crate::Condvar,
}

impl Condvar {
    /// A new condition variable (`const`); its class, for lockdep's condvar tracking, is the
    /// caller's location.
    #[inline]
    #[track_caller]
    pub const fn new() -> Condvar {
        Condvar {
            inner: crate::Condvar::new(),
        }
    }

    /// Releases the mutex, waits for a notification (or a spurious wake-up), re-locks.
    #[inline]
    #[track_caller]
    pub fn wait<'a, T: ?Sized>(
        &self,
        mut guard: MutexGuard<'a, T>,
    ) -> LockResult<MutexGuard<'a, T>> {
        self.inner.wait(&mut guard.inner);
        guard.poison.flag().result(guard)
    }

    /// Waits while `condition` returns true.
    #[inline]
    #[track_caller]
    pub fn wait_while<'a, T: ?Sized, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        self.inner.wait_while(&mut guard.inner, condition);
        guard.poison.flag().result(guard)
    }

    /// Waits for at most `dur`.
    #[inline]
    #[track_caller]
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let t = self.inner.wait_for(&mut guard.inner, dur);
        map_result(guard.poison.flag().result(guard), |g| (g, t))
    }

    /// Waits while `condition` returns true, for at most `dur` in total.
    #[inline]
    #[track_caller]
    pub fn wait_timeout_while<'a, T: ?Sized, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
        condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        let t = self.inner.wait_while_for(&mut guard.inner, condition, dur);
        map_result(guard.poison.flag().result(guard), |g| (g, t))
    }

    /// Wakes one waiter.
    #[inline]
    #[track_caller]
    pub fn notify_one(&self) {
        self.inner.notify_one();
    }

    /// Wakes every waiter.
    #[inline]
    #[track_caller]
    pub fn notify_all(&self) {
        self.inner.notify_all();
    }
}

impl Default for Condvar {
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.inner, f)
    }
}
