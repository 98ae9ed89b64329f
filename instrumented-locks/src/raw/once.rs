//! [`Once`]: one-time initialisation in one byte, with poisoning.
//!
//! # State byte
//!
//! | bit | name       | meaning                                                   |
//! | --- | ---------- | --------------------------------------------------------- |
//! | 0   | `DONE`     | a closure completed; final                                 |
//! | 1   | `POISONED` | the last closure panicked                                  |
//! | 2   | `RUNNING`  | a thread is running a closure                              |
//! | 3   | `PARKED`   | threads may be parked on the `Once`'s address              |
//!
//! A caller that finds neither `DONE` nor `RUNNING` claims `RUNNING` by CAS (clearing
//! `POISONED`: a forced run starts afresh) and runs its closure. On return it swaps in `DONE`
//! (Release, read by everybody's Acquire load); on unwind a drop guard swaps in `POISONED`.
//! Either swap returns the old byte, and if `PARKED` was set the runner wakes all parked
//! threads (`unpark_all`), which re-read the byte. A caller that finds `RUNNING` spins, sets
//! `PARKED` and parks, validating `RUNNING | PARKED`. [`Once::wait`] runs nothing: it sets
//! `PARKED` in any state that is not `DONE` (no runner may have come yet) and parks until
//! `DONE` (or `POISONED`, unless forced); a runner's claim keeps the bit.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

use parking_lot_core::{SpinWait, DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};

const DONE: u8 = 0b0001;
const POISONED: u8 = 0b0010;
const RUNNING: u8 = 0b0100;
const PARKED: u8 = 0b1000;

/// The state of a [`Once`] (parking_lot's `OnceState`, with 0.13's query names too).
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum OnceState {
    /// No closure has run yet.
    New,
    /// A closure ran and panicked; [`Once::call_once`] will panic, and
    /// [`Once::call_once_force`] will run its closure.
    Poisoned,
    /// A thread is running a closure now.
    InProgress,
    /// A closure completed; no other closure will run.
    Done,
}

impl OnceState {
    /// Whether a closure panicked (and no later one completed).
    #[inline]
    pub const fn poisoned(self) -> bool {
        matches!(self, OnceState::Poisoned)
    }

    /// Whether a closure completed.
    #[inline]
    pub const fn done(self) -> bool {
        matches!(self, OnceState::Done)
    }

    /// The same as [`poisoned`](Self::poisoned) (parking_lot 0.13's name).
    #[inline]
    pub const fn is_poisoned(self) -> bool {
        self.poisoned()
    }

    /// The same as [`done`](Self::done) (parking_lot 0.13's name).
    #[inline]
    pub const fn is_completed(self) -> bool {
        self.done()
    }
}

/// Runs a closure once, however many threads ask (parking_lot 0.12's `Once`): one byte,
/// `const fn new`, `Send + Sync`.
///
/// Callers that arrive while the closure runs wait for it (spinning briefly, then parked on
/// the `Once`'s address). A panicking closure poisons the `Once`: later
/// [`call_once`](Once::call_once)s panic, while [`call_once_force`](Once::call_once_force)
/// runs its closure with [`OnceState::Poisoned`] and, if that one completes, the `Once` is
/// done.
///
/// Everything the completed closure did happens-before every return from `call_once*` that
/// saw it done.
pub struct Once {
    state: AtomicU8,
}

impl Once {
    /// A `Once` that has not run anything.
    #[inline]
    pub const fn new() -> Once {
        Once {
            state: AtomicU8::new(0),
        }
    }

    /// A `Once` that is already done: no closure will ever run on it (parking_lot 0.13's
    /// `new_completed`, std's `Once` has the same). `const`.
    #[inline]
    pub const fn new_completed() -> Once {
        Once {
            state: AtomicU8::new(DONE),
        }
    }

    /// Whether a closure completed (a snapshot). `true` comes with the closure's effects: a
    /// caller that sees it may read what the closure initialised.
    #[inline]
    pub fn is_completed(&self) -> bool {
        // Acquire: pairs with the runner's Release swap to `DONE`.
        self.state.load(Ordering::Acquire) & DONE != 0
    }

    /// Blocks until a closure has completed (parking_lot 0.13's and std's `Once::wait`); it
    /// runs nothing itself. Everything the closure did happens-before the return. Calling it
    /// from the closure of the same `Once` deadlocks.
    ///
    /// # Panics
    ///
    /// Panics if the `Once` is poisoned and no closure runs now (use
    /// [`wait_force`](Self::wait_force) to wait through poisoning).
    #[inline]
    pub fn wait(&self) {
        if !self.is_completed() {
            self.wait_slow(false);
        }
    }

    /// Like [`wait`](Self::wait), but a poisoned `Once` is waited on too, until some
    /// [`call_once_force`](Self::call_once_force) completes it.
    #[inline]
    pub fn wait_force(&self) {
        if !self.is_completed() {
            self.wait_slow(true);
        }
    }

    /// Not done at the first look: park until a runner publishes `DONE` (or, without
    /// `ignore_poison`, `POISONED`). A waiter sets `PARKED` whatever the state (a waiter may
    /// come before any runner); the runner's claim keeps the bit and its [`Finish`] wakes
    /// everybody parked.
    #[cold]
    fn wait_slow(&self, ignore_poison: bool) {
        let mut spin = SpinWait::new();
        let refused = |state: u8| !ignore_poison && state & (POISONED | RUNNING) == POISONED;
        // Acquire: a `DONE` seen here must come with the closure's effects.
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & DONE != 0 {
                return;
            }
            if refused(state) {
                panic!("Once instance has previously been poisoned");
            }
            if state & (PARKED | RUNNING) == RUNNING && spin.spin() {
                // Acquire: as above.
                state = self.state.load(Ordering::Acquire);
                continue;
            }
            if let Err(now) = self.park(state, |now| {
                now & DONE == 0 && now & PARKED != 0 && !refused(now)
            }) {
                state = now;
                continue;
            }
            spin.reset();
            // Acquire: as above.
            state = self.state.load(Ordering::Acquire);
        }
    }

    /// The current state (a snapshot).
    #[inline]
    pub fn state(&self) -> OnceState {
        // Acquire: a caller that sees `Done` may read what the closure initialised.
        let state = self.state.load(Ordering::Acquire);
        if state & DONE != 0 {
            OnceState::Done
        } else if state & RUNNING != 0 {
            OnceState::InProgress
        } else if state & POISONED != 0 {
            OnceState::Poisoned
        } else {
            OnceState::New
        }
    }

    /// Runs `f` if no closure has completed yet, else returns at once; waits while another
    /// thread runs its closure.
    ///
    /// # Panics
    ///
    /// Panics if the `Once` is poisoned (an earlier closure panicked), and propagates `f`'s
    /// panic (which poisons it).
    #[inline]
    pub fn call_once<F: FnOnce()>(&self, f: F) {
        // Acquire: pairs with the runner's Release swap to `DONE`.
        if self.state.load(Ordering::Acquire) == DONE {
            return;
        }
        let mut f = Some(f);
        self.call_once_slow(false, &mut |_| {
            if let Some(f) = f.take() {
                f();
            }
        });
    }

    /// Like [`call_once`](Self::call_once), but also runs on a poisoned `Once`; `f` is told
    /// whether it is ([`OnceState::Poisoned`]) or not ([`OnceState::New`]).
    ///
    /// # Panics
    ///
    /// Propagates `f`'s panic (which poisons the `Once`).
    #[inline]
    pub fn call_once_force<F: FnOnce(OnceState)>(&self, f: F) {
        // Acquire: as in `call_once`.
        if self.state.load(Ordering::Acquire) == DONE {
            return;
        }
        let mut f = Some(f);
        self.call_once_slow(true, &mut |state| {
            if let Some(f) = f.take() {
                f(state);
            }
        });
    }

    #[inline]
    fn key(&self) -> usize {
        self as *const Once as usize
    }

    /// Parks until the runner wakes us, `state` being the last value seen (a run in
    /// progress): first sets `PARKED` (the runner's cue to wake its waiters) if it is not
    /// set; `Err` with the new value if that failed (the caller looks again). `sleep` tells,
    /// from the value under the bucket lock, whether to sleep still.
    fn park(&self, state: u8, sleep: impl Fn(u8) -> bool) -> Result<(), u8> {
        if state & PARKED == 0 {
            // Relaxed on success: `PARKED` only asks the runner to wake us; the park
            // re-checks it. Acquire on failure: the value may be `DONE`.
            self.state.compare_exchange_weak(
                state,
                state | PARKED,
                Ordering::Relaxed,
                Ordering::Acquire,
            )?;
        }
        // SAFETY: our own key; the callbacks neither panic nor call into parking_lot_core.
        unsafe {
            parking_lot_core::park(
                self.key(),
                // Relaxed: the bucket lock orders this against the runner's wake-up.
                || sleep(self.state.load(Ordering::Relaxed)),
                || {},
                |_, _| {},
                DEFAULT_PARK_TOKEN,
                None,
            );
        }
        Ok(())
    }

    /// Not done at the first look: claim the run or wait for the running thread.
    #[cold]
    fn call_once_slow(&self, ignore_poison: bool, f: &mut dyn FnMut(OnceState)) {
        let mut spin = SpinWait::new();
        // Acquire: a `DONE` seen here must come with the closure's effects.
        let mut state = self.state.load(Ordering::Acquire);
        let was_poisoned = loop {
            if state & DONE != 0 {
                return;
            }
            if state & POISONED != 0 && !ignore_poison {
                panic!("Once instance has previously been poisoned");
            }
            if state & RUNNING == 0 {
                // Acquire: a poisoned run's partial effects are visible to the retry. Acquire
                // on failure: the new value may be `DONE`, returned on.
                match self.state.compare_exchange_weak(
                    state,
                    (state & !POISONED) | RUNNING,
                    Ordering::Acquire,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break state & POISONED != 0,
                    Err(now) => state = now,
                }
                continue;
            }
            if state & PARKED == 0 && spin.spin() {
                // Acquire: as above.
                state = self.state.load(Ordering::Acquire);
                continue;
            }
            if let Err(now) = self.park(state, |now| now == RUNNING | PARKED) {
                state = now;
                continue;
            }
            spin.reset();
            // Acquire: as above.
            state = self.state.load(Ordering::Acquire);
        };

        // We own `RUNNING`. If `f` unwinds, the guard poisons and wakes the waiters.
        let mut finish = Finish {
            once: self,
            state: POISONED,
        };
        f(if was_poisoned {
            OnceState::Poisoned
        } else {
            OnceState::New
        });
        finish.state = DONE;
        // `finish` drops here and publishes `DONE`.
    }
}

/// Ends a run: stores `state` (`DONE`, or `POISONED` if dropped during an unwind) and wakes
/// the parked threads.
struct Finish<'a> {
    once: &'a Once,
    state: u8,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire loads of every later caller, which then see the
        // closure's effects.
        let prev = self.once.state.swap(self.state, Ordering::Release);
        if prev & PARKED != 0 {
            // SAFETY: our own key.
            unsafe {
                parking_lot_core::unpark_all(self.once.key(), DEFAULT_UNPARK_TOKEN);
            }
        }
    }
}

impl Default for Once {
    #[inline]
    fn default() -> Once {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once")
            .field("state", &self.state())
            .finish()
    }
}
