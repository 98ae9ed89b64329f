//! The slow paths of [`RawRwLock`](super::RawRwLock): spinning, parking and waking.
//!
//! Each function takes the lock's state word; the parking keys are derived from its address
//! (the word is the lock's only field). See [`rwlock_state`](super::rwlock_state) for the
//! word and the tokens.
//!
//! Every change of the word that parked threads depend on is made either with an atomic
//! read-modify-write whose returned value tells the caller whether to wake someone (readers
//! leaving, downgrades, timed-out writers giving `WRITER` back), or inside an unpark callback
//! (bucket lock held). A thread validates its park under the same bucket lock, so it either
//! sees the change and does not sleep, or is already queued when the waker looks.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot_core::{FilterOp, ParkResult, ParkToken, SpinWait, UnparkResult};

use super::mutex::{TOKEN_HANDOFF, TOKEN_RETRY};
use super::rwlock_state::{
    reader_overflow, Want, PARKED, READERS, UPGRADABLE, WRITER, WRITER_PARKED,
};

/// Where readers, upgradable readers and writers in phase 1 park: the lock's address.
#[inline]
fn queue_key(state: &AtomicUsize) -> usize {
    state as *const AtomicUsize as usize
}

/// Where the `WRITER` owner parks while readers drain: address + 1. The word is at least
/// 2-byte aligned and 2+ bytes long, so this byte lies inside the lock and is nobody else's
/// key.
#[inline]
fn writer_key(state: &AtomicUsize) -> usize {
    queue_key(state) + 1
}

/// Blocks until `want` is granted or `deadline` passes; returns whether it was granted. For
/// [`Want::Exclusive`] this includes phase 2 (waiting for the readers to leave).
#[cold]
pub(super) fn acquire(state: &AtomicUsize, want: Want, deadline: Option<Instant>) -> bool {
    if !claim(state, want, deadline) {
        return false;
    }
    if want == Want::Exclusive {
        return wait_for_readers(state, deadline, 0);
    }
    true
}

/// Phase 1 for every kind: enter when the word allows it, else spin, then park on the queue
/// key with `want`'s token.
fn claim(state: &AtomicUsize, want: Want, deadline: Option<Instant>) -> bool {
    let mut spin = SpinWait::new();
    // Relaxed: every decision is confirmed by a CAS or by the park's validation.
    let mut s = state.load(Ordering::Relaxed);
    loop {
        if !want.blocked_by(s) {
            let new = match s.checked_add(want.grant()) {
                Some(new) => new,
                None => reader_overflow(),
            };
            // Acquire: pairs with the Release of the unlock (or reader exit) that made the
            // word allow us in. Relaxed on failure: we loop on the new value.
            match state.compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
            continue;
        }
        if s & PARKED == 0 && spin.spin() {
            // Relaxed: as above.
            s = state.load(Ordering::Relaxed);
            continue;
        }
        if s & PARKED == 0 {
            // Relaxed: `PARKED` only routes unlockers to their slow path; the validation below
            // re-checks it under the bucket lock.
            if let Err(now) =
                state.compare_exchange_weak(s, s | PARKED, Ordering::Relaxed, Ordering::Relaxed)
            {
                s = now;
                continue;
            }
        }
        let validate = || {
            // Relaxed: the bucket lock orders this against wakers' callbacks.
            let now = state.load(Ordering::Relaxed);
            now & PARKED != 0 && want.blocked_by(now)
        };
        let timed_out = |_, was_last_thread| {
            if was_last_thread {
                // Relaxed: bookkeeping under the bucket lock; nobody else is queued here.
                state.fetch_and(!PARKED, Ordering::Relaxed);
            }
        };
        // SAFETY: our own key; the callbacks neither panic nor call into parking_lot_core.
        let result = unsafe {
            parking_lot_core::park(
                queue_key(state),
                validate,
                || {},
                timed_out,
                want.token(),
                deadline,
            )
        };
        match result {
            // The waker added our grant to the word. Its prior actions happen-before our
            // return from `park` (the parking lot passes the token through the parked thread's
            // own synchronisation).
            ParkResult::Unparked(TOKEN_HANDOFF) => return true,
            ParkResult::TimedOut => return false,
            ParkResult::Unparked(_) | ParkResult::Invalid => {}
        }
        spin.reset();
        // Relaxed: as above.
        s = state.load(Ordering::Relaxed);
    }
}

/// Phase 2: the caller owns `WRITER`; waits until no reader is inside. On timeout, gives
/// `WRITER` back in exchange for `restore` (0 for a writer, `READER | UPGRADABLE` for an
/// upgrade), wakes whoever queued behind the claim, and returns false.
#[cold]
pub(super) fn wait_for_readers(
    state: &AtomicUsize,
    deadline: Option<Instant>,
    restore: usize,
) -> bool {
    let mut spin = SpinWait::new();
    // Acquire: seeing zero readers must synchronise with every departing reader's Release
    // `fetch_sub` (all writes to the word are read-modify-writes, so each heads a release
    // sequence that reaches the value we read), so their reads happen-before our writes.
    let mut s = state.load(Ordering::Acquire);
    loop {
        if s & READERS == 0 {
            return true;
        }
        if spin.spin() {
            // Acquire: as above.
            s = state.load(Ordering::Acquire);
            continue;
        }
        if s & WRITER_PARKED == 0 {
            // Relaxed on success: the bit is re-checked by the validation under the bucket
            // lock. Acquire on failure: the value may show zero readers, and we return on it.
            if let Err(now) = state.compare_exchange_weak(
                s,
                s | WRITER_PARKED,
                Ordering::Relaxed,
                Ordering::Acquire,
            ) {
                s = now;
                continue;
            }
        }
        let validate = || {
            // Relaxed: ordered by the bucket lock against the last reader's wake-up callback.
            let now = state.load(Ordering::Relaxed);
            now & READERS != 0 && now & WRITER_PARKED != 0
        };
        let timed_out = |_, _| {
            // Relaxed: we are the only thread on this key; the bit only asks readers to wake
            // us, and we no longer wait.
            state.fetch_and(!WRITER_PARKED, Ordering::Relaxed);
        };
        // SAFETY: our own key; the callbacks neither panic nor call into parking_lot_core.
        let result = unsafe {
            parking_lot_core::park(
                writer_key(state),
                validate,
                || {},
                timed_out,
                ParkToken(WRITER),
                deadline,
            )
        };
        if result == ParkResult::TimedOut {
            // Relaxed: we give back a claim under which nothing was published. The addition
            // turns `WRITER` into `restore` (`WRITER` is set, so no borrow crosses bit 3).
            let prev = state.fetch_add(restore.wrapping_sub(WRITER), Ordering::Relaxed);
            if prev & PARKED != 0 {
                // Threads queued behind our claim; with `restore` held, wake whom it allows.
                wake_queue(state, 0, restore & UPGRADABLE, false);
            }
            return false;
        }
        // Acquire: as above.
        s = state.load(Ordering::Acquire);
    }
}

/// The last reader left while the `WRITER` owner is parked: wake it.
#[cold]
pub(super) fn wake_writer(state: &AtomicUsize) {
    let callback = |_: UnparkResult| {
        // Relaxed: under the writer key's bucket lock, which orders it against the writer's
        // validation; the writer re-reads the word with Acquire when it runs.
        state.fetch_and(!WRITER_PARKED, Ordering::Relaxed);
        TOKEN_RETRY
    };
    // SAFETY: our own key; the callback neither panics nor calls into parking_lot_core.
    unsafe {
        parking_lot_core::unpark_one(writer_key(state), callback);
    }
}

/// Wakes threads queued on the queue key after the caller released `release` (still set in
/// the word; it is removed in the callback, under the bucket lock) while keeping `keep`
/// (`0` or `UPGRADABLE`) held. Wakes, in FIFO order, every reader, at most one upgradable
/// reader or writer compatible with `keep`, and nothing after a writer. With `fair` (or when
/// parking_lot_core asks for eventual fairness and `release` is non-zero) the woken threads
/// are handed the lock; else they retry.
#[cold]
pub(super) fn wake_queue(state: &AtomicUsize, release: usize, keep: usize, fair: bool) {
    let granted = Cell::new(0usize);
    let filter = |ParkToken(wants): ParkToken| {
        let held = keep | granted.get();
        if held & WRITER != 0 {
            return FilterOp::Stop;
        }
        if wants & (WRITER | UPGRADABLE) != 0 && held & UPGRADABLE != 0 {
            return FilterOp::Skip;
        }
        match granted.get().checked_add(wants) {
            Some(sum) => {
                granted.set(sum);
                FilterOp::Unpark
            }
            None => FilterOp::Stop,
        }
    };
    let callback = |result: UnparkResult| {
        // A downgrade (`release == 0`) keeps part of the lock and is not an unlock: no handoff.
        let hand_off = result.unparked_threads != 0 && release != 0 && (fair || result.be_fair);
        // Relaxed: the starting value of the CAS loop.
        let mut s = state.load(Ordering::Relaxed);
        loop {
            let released = s - release;
            let (new, token) = match released.checked_add(granted.get()) {
                Some(handed) if hand_off => (handed, TOKEN_HANDOFF),
                _ => (released, TOKEN_RETRY),
            };
            let new = if result.have_more_threads {
                new | PARKED
            } else {
                new & !PARKED
            };
            // Release: when `release` is non-zero this CAS is the unlock; it publishes the
            // critical section to the next owner's Acquire. Relaxed on failure: retried.
            match state.compare_exchange_weak(s, new, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return token,
                Err(now) => s = now,
            }
        }
    };
    // SAFETY: our own key; filter and callback neither panic nor call into parking_lot_core.
    unsafe {
        parking_lot_core::unpark_filter(queue_key(state), filter, callback);
    }
}

/// `try_lock_shared` / `try_lock_upgradable` after the single fast CAS failed: retry while the
/// word allows `want` (other readers may be changing it).
#[cold]
pub(super) fn try_claim(state: &AtomicUsize, want: Want) -> bool {
    // Relaxed: the starting value of the CAS loop.
    let mut s = state.load(Ordering::Relaxed);
    while !want.blocked_by(s) {
        let new = match s.checked_add(want.grant()) {
            Some(new) => new,
            None => reader_overflow(),
        };
        // Acquire on success: as in `claim`.
        match state.compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => s = now,
        }
    }
    false
}
