//! [`Condvar`]: a condition variable for [`RawMutex`], parking on its own address and
//! requeueing its waiters onto the mutex when notified.
//!
//! # State
//!
//! One pointer, changed only under the bucket lock of the condvar's key:
//!
//! - null: nobody waits;
//! - a mutex's address: everybody waiting uses that mutex;
//! - [`MIXED`]'s address: waiters use different mutexes.
//!
//! A waiter records its mutex in `park`'s validation (so it is queued and recorded in one
//! bucket-lock section), then releases the mutex in `before_sleep`. Whoever empties the queue
//! (a notify, the last waiter timing out) resets the pointer to null, so a non-null pointer
//! always means someone is queued.
//!
//! # Notifying
//!
//! The notify fast path is one Relaxed load: null means nobody to wake. A waiter stores the
//! pointer before releasing its mutex (Release), and a notifier that changed the condition
//! under that mutex locked it afterwards (Acquire), so it cannot read a stale null.
//!
//! With one mutex `M` recorded, a notified waiter would only wake to block on `M` if `M` is
//! held, so the waiter is *requeued* onto `M`'s key instead (`unpark_requeue`) and `M`'s
//! `PARKED` bit is set; `M`'s unlock then wakes it like any parked locker, possibly with a
//! handoff. `notify_all` requeues every waiter (or wakes one and requeues the rest if `M` is
//! free), so they take `M` one at a time instead of stampeding.
//!
//! # Two mutexes
//!
//! Using one condvar with several mutexes at once is allowed and defined: the pointer becomes
//! "mixed", notifications then wake waiters without requeueing (each re-locks its own mutex),
//! and the pointer returns to null when the queue empties. parking_lot 0.12 panics instead.

use std::cell::Cell;
use std::fmt;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use lock_api::RawMutex as _;
use parking_lot_core::{
    FilterOp, ParkResult, RequeueOp, UnparkResult, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN,
};

use super::deadline_after;
use super::mutex::{RawMutex, TOKEN_HANDOFF};

/// The mark for "waiters use different mutexes": the address of a mutex nobody can wait with
/// (it is private to this module).
static MIXED: RawMutex = <RawMutex as lock_api::RawMutex>::INIT;

fn mixed() -> *mut RawMutex {
    ptr::addr_of!(MIXED).cast_mut()
}

/// Whether a timed wait returned because its deadline passed (parking_lot's
/// `WaitTimeoutResult`).
#[derive(Debug, PartialEq, Eq, Copy, Clone)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// A wait that ended without reaching its deadline (for the validated condvar's
    /// `wait_while*` loops).
    #[inline]
    pub(crate) const fn not_timed_out() -> WaitTimeoutResult {
        WaitTimeoutResult(false)
    }

    /// True if the wait ended because the deadline passed, not because of a notification.
    /// A notification that races with the deadline may be reported either way. `const`, as
    /// in lock_api 0.5.
    #[inline]
    pub const fn timed_out(self) -> bool {
        self.0
    }
}

/// How [`Condvar::park_released`] ended: the wait's result, and whether the mutex is held
/// again already (handed over after a requeue).
pub(crate) struct Woken {
    pub(crate) result: WaitTimeoutResult,
    pub(crate) relocked: bool,
}

/// A condition variable for mutexes built on [`RawMutex`], with parking_lot 0.12's
/// `Condvar` API for `lock_api::MutexGuard<'_, RawMutex, T>`, plus the raw core
/// [`wait_raw`](Condvar::wait_raw) for wrappers that manage the mutex themselves.
///
/// Waits may wake spuriously (use the `wait_while*` forms or re-check the condition);
/// a notification is never lost for a thread that was already waiting when it was sent.
///
/// A notified waiter whose mutex is held is not woken but moved onto the mutex's wait queue
/// (`parking_lot_core::unpark_requeue`), to be woken by the mutex's unlock, as parking_lot
/// does; `notify_all` so wakes at most one thread and lets the others take the mutex in turn.
///
/// # Several mutexes
///
/// One condvar may be used with several mutexes, even at the same time; this is defined (no
/// panic, unlike parking_lot 0.12): while waiters with different mutexes are queued,
/// notifications wake them without requeueing and each re-locks its own mutex.
///
/// One pointer of state, `const fn new`, `Send + Sync`.
pub struct Condvar {
    state: AtomicPtr<RawMutex>,
}

impl Condvar {
    /// A condition variable with no waiters.
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            state: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[inline]
    fn key(&self) -> usize {
        self as *const Condvar as usize
    }

    /// Wakes one waiting thread (or moves it onto its mutex's queue, to be woken by the
    /// mutex's unlock); returns whether there was one.
    #[inline]
    pub fn notify_one(&self) -> bool {
        // Relaxed: see the module docs; a stale non-null only costs the slow path.
        let seen = self.state.load(Ordering::Relaxed);
        if seen.is_null() {
            return false;
        }
        self.notify_one_slow(seen)
    }

    #[cold]
    fn notify_one_slow(&self, seen: *mut RawMutex) -> bool {
        let validate = || {
            // Relaxed: under the condvar's bucket lock, like every write to the pointer.
            let now = self.state.load(Ordering::Relaxed);
            if now.is_null() {
                // Everybody left since our first look: nothing to notify.
                RequeueOp::Abort
            } else if now != seen || now == mixed() {
                // The second bucket locked is not `now`'s: wake without requeueing.
                RequeueOp::UnparkOne
            } else {
                // SAFETY: the pointer equals `seen`, so a thread waiting with that mutex is
                // queued (the pointer is null when the queue is empty, and we hold the
                // queue's bucket lock); it borrows the mutex for the whole wait, so the mutex
                // is alive.
                let mutex = unsafe { &*seen };
                if mutex.mark_parked_if_locked() {
                    RequeueOp::RequeueOne
                } else {
                    RequeueOp::UnparkOne
                }
            }
        };
        let callback = |_, result: UnparkResult| {
            if !result.have_more_threads {
                // Relaxed: under the bucket lock; the queue is empty now.
                self.state.store(ptr::null_mut(), Ordering::Relaxed);
            }
            DEFAULT_UNPARK_TOKEN
        };
        // SAFETY: our own key and the key of a mutex our waiters use (the mutex module's
        // token protocol is what requeued waiters expect); validate and callback neither panic
        // nor call into parking_lot_core.
        let result = unsafe {
            parking_lot_core::unpark_requeue(self.key(), seen as usize, validate, callback)
        };
        result.unparked_threads + result.requeued_threads != 0
    }

    /// Wakes every waiting thread (requeueing them onto their mutex where possible); returns
    /// how many there were.
    #[inline]
    pub fn notify_all(&self) -> usize {
        // Relaxed: as in `notify_one`.
        let seen = self.state.load(Ordering::Relaxed);
        if seen.is_null() {
            return 0;
        }
        self.notify_all_slow(seen)
    }

    #[cold]
    fn notify_all_slow(&self, seen: *mut RawMutex) -> usize {
        if seen != mixed() {
            let changed = Cell::new(false);
            let validate = || {
                // Relaxed: under the condvar's bucket lock.
                let now = self.state.load(Ordering::Relaxed);
                if now.is_null() {
                    return RequeueOp::Abort;
                }
                if now != seen {
                    // Mixed now (or another mutex): requeueing onto `seen` would be wrong for
                    // some waiters. Wake them all below instead.
                    changed.set(true);
                    return RequeueOp::Abort;
                }
                // SAFETY: as in `notify_one_slow`: a waiter using this mutex is queued.
                let mutex = unsafe { &*seen };
                if mutex.mark_parked_if_locked() {
                    RequeueOp::RequeueAll
                } else {
                    RequeueOp::UnparkOneRequeueRest
                }
            };
            let callback = |op, result: UnparkResult| {
                if op == RequeueOp::UnparkOneRequeueRest && result.requeued_threads != 0 {
                    // The woken thread will lock the mutex; its unlock must wake the rest.
                    // SAFETY: both bucket locks are still held and the requeued waiters,
                    // which borrow the mutex, are in its queue: it is alive.
                    unsafe { &*seen }.mark_parked();
                }
                // Relaxed: under the bucket lock; every waiter left the condvar's queue.
                self.state.store(ptr::null_mut(), Ordering::Relaxed);
                DEFAULT_UNPARK_TOKEN
            };
            // SAFETY: as in `notify_one_slow`.
            let result = unsafe {
                parking_lot_core::unpark_requeue(self.key(), seen as usize, validate, callback)
            };
            if !changed.get() {
                return result.unparked_threads + result.requeued_threads;
            }
        }
        let callback = |_: UnparkResult| {
            // Relaxed: under the bucket lock; the queue is empty now.
            self.state.store(ptr::null_mut(), Ordering::Relaxed);
            DEFAULT_UNPARK_TOKEN
        };
        // SAFETY: our own key; filter and callback neither panic nor call into
        // parking_lot_core.
        unsafe { parking_lot_core::unpark_filter(self.key(), |_| FilterOp::Unpark, callback) }
            .unparked_threads
    }

    /// The core of every wait: releases `mutex`, sleeps until notified, `deadline` passes or
    /// a spurious wake-up, and re-locks `mutex` before returning (blocking without deadline
    /// for that re-lock). Returns whether the deadline passed without a notification.
    ///
    /// No notification sent after this call released `mutex` is lost; the wake-up may also be
    /// spurious. This is the entry point for wrappers (validating ones, say) that keep their
    /// own guard around the raw mutex.
    ///
    /// # Safety
    ///
    /// The calling thread must hold `mutex` (locked through [`RawMutex`]'s
    /// `lock_api::RawMutex` implementation). It holds it again when this returns.
    pub unsafe fn wait_raw(
        &self,
        mutex: &RawMutex,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult {
        // SAFETY: our caller holds `mutex`.
        let woken = unsafe { self.park_released(mutex, deadline, true) };
        if !woken.relocked {
            mutex.lock();
        }
        woken.result
    }

    /// The wait of [`wait_raw`](Self::wait_raw) without the re-lock: releases `mutex`,
    /// sleeps until notified, `deadline` passes or a spurious wake-up. Returns the result and
    /// whether the mutex is already held again (a notification requeued this thread onto the
    /// mutex and its unlock handed it over); if not, the caller must lock it.
    ///
    /// With `requeue` false, this waiter marks the condvar "mixed" while it is queued, so that
    /// notifications wake it instead of requeueing it: its re-lock is then a lock it takes
    /// itself (the validated condvar announces that wait, like any blocking lock, to the
    /// watchdog; a requeued thread would block inside the parking lot unseen).
    ///
    /// # Safety
    ///
    /// As for [`wait_raw`](Self::wait_raw): the calling thread holds `mutex`.
    pub(crate) unsafe fn park_released(
        &self,
        mutex: &RawMutex,
        deadline: Option<Instant>,
        requeue: bool,
    ) -> Woken {
        let ours = if requeue {
            ptr::from_ref(mutex).cast_mut()
        } else {
            mixed()
        };
        let requeued = Cell::new(false);
        let validate = || {
            // Relaxed: under the condvar's bucket lock, like every write to the pointer; the
            // notifier's fast path sees it through the mutex (module docs).
            let now = self.state.load(Ordering::Relaxed);
            if now.is_null() {
                self.state.store(ours, Ordering::Relaxed);
            } else if now != ours && now != mixed() {
                self.state.store(mixed(), Ordering::Relaxed);
            }
            true
        };
        let before_sleep = || {
            // SAFETY: our caller holds `mutex`. We are queued, so a notification sent from
            // now on finds us.
            unsafe { mutex.unlock() };
        };
        let timed_out = |key, was_last_thread| {
            if key == self.key() {
                if was_last_thread {
                    // Relaxed: under the bucket lock; the queue is empty now.
                    self.state.store(ptr::null_mut(), Ordering::Relaxed);
                }
            } else {
                // A notification requeued us onto the mutex, then our deadline passed there.
                requeued.set(true);
                if was_last_thread {
                    mutex.clear_parked();
                }
            }
        };
        // SAFETY: our own key; the callbacks do not panic; `before_sleep` may unpark (the
        // mutex's unlock), which parking_lot_core allows there, and the others do not call
        // into it.
        let result = unsafe {
            parking_lot_core::park(
                self.key(),
                validate,
                before_sleep,
                timed_out,
                DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        // A mutex unlock that woke us after a requeue may have handed us the mutex.
        let relocked = result == ParkResult::Unparked(TOKEN_HANDOFF);
        if relocked {
            mutex.deadlock_handed_over();
        }
        Woken {
            result: WaitTimeoutResult(!result.is_unparked() && !requeued.get()),
            relocked,
        }
    }

    /// Releases the guard's mutex, waits for a notification (or a spurious wake-up), and
    /// re-locks it.
    #[inline]
    pub fn wait<T: ?Sized>(&self, guard: &mut lock_api::MutexGuard<'_, RawMutex, T>) {
        // SAFETY: the guard holds the mutex, and `wait_raw` holds it again on return.
        unsafe { self.wait_raw(raw_of(guard), None) };
    }

    /// Like [`wait`](Self::wait), giving up at `deadline`.
    #[inline]
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, RawMutex, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        // SAFETY: as in `wait`.
        unsafe { self.wait_raw(raw_of(guard), Some(deadline)) }
    }

    /// Like [`wait`](Self::wait), giving up after `timeout` (no deadline if `now + timeout`
    /// cannot be represented).
    #[inline]
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, RawMutex, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        // SAFETY: as in `wait`.
        unsafe { self.wait_raw(raw_of(guard), deadline_after(timeout)) }
    }

    /// Waits while `condition` returns true (checked with the mutex held, first before any
    /// wait).
    #[inline]
    pub fn wait_while<T: ?Sized, F>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, RawMutex, T>,
        condition: F,
    ) where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_deadline(guard, condition, None);
    }

    /// Like [`wait_while`](Self::wait_while), giving up at `deadline`: returns timed out as
    /// soon as one wait times out (`condition` is not checked again after that), as
    /// parking_lot does.
    #[inline]
    pub fn wait_while_until<T: ?Sized, F>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, RawMutex, T>,
        condition: F,
        deadline: Instant,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_deadline(guard, condition, Some(deadline))
    }

    /// Like [`wait_while`](Self::wait_while), giving up after `timeout`.
    #[inline]
    pub fn wait_while_for<T: ?Sized, F>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, RawMutex, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_deadline(guard, condition, deadline_after(timeout))
    }

    fn wait_while_deadline<T: ?Sized, F>(
        &self,
        guard: &mut lock_api::MutexGuard<'_, RawMutex, T>,
        mut condition: F,
        deadline: Option<Instant>,
    ) -> WaitTimeoutResult
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut **guard) {
            // SAFETY: as in `wait`.
            let result = unsafe { self.wait_raw(raw_of(guard), deadline) };
            if result.timed_out() {
                return result;
            }
        }
        WaitTimeoutResult(false)
    }
}

/// The raw mutex under a guard.
#[inline]
fn raw_of<'a, T: ?Sized>(guard: &'a lock_api::MutexGuard<'_, RawMutex, T>) -> &'a RawMutex {
    // SAFETY: `raw` is unsafe because unlocking through it could break the guard; our callers
    // only use it with `wait_raw`, which re-locks before returning.
    unsafe { lock_api::MutexGuard::mutex(guard).raw() }
}

impl Default for Condvar {
    #[inline]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Condvar { .. }")
    }
}
