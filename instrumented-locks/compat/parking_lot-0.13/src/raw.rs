//! The raw locks under parking_lot 0.13's names, implementing lock_api 0.5's raw-lock traits
//! (with per-acquisition guard state) over instrumented-locks' raw locks.
//!
//! They are the raw locks of the crate root's validated types (`Mutex<T>` is
//! `instrumented_locks::generic::Mutex<RawMutex, T>`, through their lock_api 0.4 impls in
//! `raw04`), and what generic lock_api 0.5 code sees: `lock_api::Mutex<parking_lot::RawMutex, T>`
//! works over them, **unvalidated** (lock_api's wrappers give a raw lock no construction site
//! and no protected type to make a lock class from).
//!
//! Each type is a newtype around the instrumented-locks raw lock of the same name, with its
//! semantics (parking_lot's: unfair unlock by default, fair on request, timed variants,
//! upgradable reads). The acquisition state of every trait is [`GuardMarker`]: a unit that
//! is `Send` only with the feature `send_guard`, as parking_lot 0.13's.

use core::num::NonZeroUsize;
use std::time::{Duration, Instant};

use lock_api_04::{
    RawMutex as _, RawMutexFair as _, RawMutexTimed as _, RawRwLock as _, RawRwLockDowngrade as _,
    RawRwLockFair as _, RawRwLockRecursive as _, RawRwLockRecursiveTimed as _, RawRwLockTimed as _,
    RawRwLockUpgrade as _, RawRwLockUpgradeDowngrade as _, RawRwLockUpgradeFair as _,
    RawRwLockUpgradeTimed as _,
};

/// The acquisition state of this crate's raw locks (parking_lot 0.13's `GuardMarker`, private
/// there too): no data, `Send` only with the feature `send_guard`.
#[cfg(feature = "send_guard")]
type GuardMarker = lock_api::GuardSend;
/// The acquisition state of this crate's raw locks (parking_lot 0.13's `GuardMarker`, private
/// there too): no data, `Send` only with the feature `send_guard`.
#[cfg(not(feature = "send_guard"))]
type GuardMarker = lock_api::GuardNoSend;

#[inline]
const fn marker() -> GuardMarker {
    GuardMarker::new()
}

#[inline]
fn marked(acquired: bool) -> Option<GuardMarker> {
    acquired.then(marker)
}

/// parking_lot 0.13's `RawMutex`: a one-byte unfair mutex with fair unlock and timeouts
/// (instrumented-locks' [`RawMutex`](instrumented_locks::RawMutex) under lock_api 0.5's traits).
/// Not validated by itself. Thread-safe; `Send + Sync`.
pub struct RawMutex(pub(crate) instrumented_locks::RawMutex);

/// lock_api 0.5's mutex traits (`RawMutex`, `RawMutexFair`, `RawMutexTimed`) for `$name`, a
/// newtype over instrumented-locks' raw mutex `$inner`: every method forwards; the guard state
/// carries nothing.
macro_rules! forward_raw_mutex {
    ($name:ident, $inner:ty) => {
        // SAFETY: every method forwards to the inner raw mutex, which upholds lock_api's mutex
        // contract (exclusive, Acquire on lock, Release on unlock); the guard state carries
        // nothing.
        unsafe impl lock_api::RawMutex for $name {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: $name = $name(<$inner>::INIT);
            type Guard = GuardMarker;

            #[inline]
            fn lock(&self) -> GuardMarker {
                self.0.lock();
                marker()
            }

            #[inline]
            fn try_lock(&self) -> Option<GuardMarker> {
                marked(self.0.try_lock())
            }

            #[inline]
            unsafe fn unlock(&self, _guard: GuardMarker) {
                // SAFETY: the caller holds the mutex (the trait's contract).
                unsafe { self.0.unlock() }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.0.is_locked()
            }
        }

        // SAFETY: forwards to the inner mutex's fair unlock and bump, which keep the contract.
        unsafe impl lock_api::RawMutexFair for $name {
            #[inline]
            unsafe fn unlock_fair(&self, _guard: GuardMarker) {
                // SAFETY: the caller holds the mutex.
                unsafe { self.0.unlock_fair() }
            }

            #[inline]
            unsafe fn bump(&self, _guard: &mut GuardMarker) {
                // SAFETY: the caller holds the mutex; it is held again on return.
                unsafe { self.0.bump() }
            }
        }

        // SAFETY: forwards to the inner mutex's timed locks.
        unsafe impl lock_api::RawMutexTimed for $name {
            type Duration = Duration;
            type Instant = Instant;

            #[inline]
            fn try_lock_for(&self, timeout: Duration) -> Option<GuardMarker> {
                marked(self.0.try_lock_for(timeout))
            }

            #[inline]
            fn try_lock_until(&self, timeout: Instant) -> Option<GuardMarker> {
                marked(self.0.try_lock_until(timeout))
            }
        }
    };
}

forward_raw_mutex!(RawMutex, instrumented_locks::RawMutex);

/// parking_lot 0.13's `RawFairMutex`: a [`RawMutex`] whose every unlock is fair
/// (instrumented-locks' [`RawFairMutex`](instrumented_locks::RawFairMutex)). Not validated
/// by itself.
pub struct RawFairMutex(pub(crate) instrumented_locks::RawFairMutex);

forward_raw_mutex!(RawFairMutex, instrumented_locks::RawFairMutex);

/// parking_lot 0.13's `RawRwLock`: a one-word reader-writer lock with upgradable reads,
/// downgrades, fair unlocks and timeouts (instrumented-locks'
/// [`RawRwLock`](instrumented_locks::RawRwLock)). `RECURSIVE` makes shared locks
/// reader-biased: a shared lock succeeds while any thread reads, even if a writer waits
/// ([`RawRwLockRecursive`], under [`RecursiveRwLock`](crate::RecursiveRwLock)). Not
/// validated by itself.
pub struct RawRwLock<const RECURSIVE: bool = false>(pub(crate) instrumented_locks::RawRwLock);

/// The reader-biased raw rwlock under [`RecursiveRwLock`](crate::RecursiveRwLock).
pub type RawRwLockRecursive = RawRwLock<true>;

// SAFETY: forwards to the inner rwlock, which keeps lock_api's rwlock contract; a recursive
// shared lock is still a shared lock (it only skips the writer-preference check).
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLock for RawRwLock<RECURSIVE> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwLock(instrumented_locks::RawRwLock::INIT);
    type SharedGuard = GuardMarker;
    type ExclusiveGuard = GuardMarker;

    #[inline]
    fn lock_shared(&self) -> GuardMarker {
        if RECURSIVE {
            self.0.lock_shared_recursive();
        } else {
            self.0.lock_shared();
        }
        marker()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardMarker> {
        marked(if RECURSIVE {
            self.0.try_lock_shared_recursive()
        } else {
            self.0.try_lock_shared()
        })
    }

    #[inline]
    unsafe fn unlock_shared(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds a shared lock.
        unsafe { self.0.unlock_shared() }
    }

    #[inline]
    fn lock_exclusive(&self) -> GuardMarker {
        self.0.lock_exclusive();
        marker()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<GuardMarker> {
        marked(self.0.try_lock_exclusive())
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.0.unlock_exclusive() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.0.is_locked_exclusive()
    }
}

// SAFETY: forwards to the inner rwlock's fair unlocks and bumps.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockFair for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn unlock_shared_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds a shared lock.
        unsafe { self.0.unlock_shared_fair() }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.0.unlock_exclusive_fair() }
    }

    #[inline]
    unsafe fn bump_shared(&self, _guard: &mut GuardMarker) {
        // SAFETY: the caller holds a shared lock; it is held again on return.
        unsafe { self.0.bump_shared() }
    }

    #[inline]
    unsafe fn bump_exclusive(&self, _guard: &mut GuardMarker) {
        // SAFETY: the caller holds the exclusive lock; it is held again on return.
        unsafe { self.0.bump_exclusive() }
    }
}

// SAFETY: forwards to the inner rwlock's atomic downgrade.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockDowngrade for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn downgrade(&self, guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.0.downgrade() };
        guard
    }
}

// SAFETY: forwards to the inner rwlock's timed locks (recursive ones for `RECURSIVE`).
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockTimed for RawRwLock<RECURSIVE> {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> Option<GuardMarker> {
        marked(if RECURSIVE {
            self.0.try_lock_shared_recursive_for(timeout)
        } else {
            self.0.try_lock_shared_for(timeout)
        })
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> Option<GuardMarker> {
        marked(if RECURSIVE {
            self.0.try_lock_shared_recursive_until(timeout)
        } else {
            self.0.try_lock_shared_until(timeout)
        })
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> Option<GuardMarker> {
        marked(self.0.try_lock_exclusive_for(timeout))
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> Option<GuardMarker> {
        marked(self.0.try_lock_exclusive_until(timeout))
    }
}

// SAFETY: forwards to the inner rwlock's upgradable locks; a failed upgrade keeps the
// upgradable lock (the inner one returns `false` without releasing it).
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgrade for RawRwLock<RECURSIVE> {
    type UpgradableGuard = GuardMarker;

    #[inline]
    fn lock_upgradable(&self) -> GuardMarker {
        self.0.lock_upgradable();
        marker()
    }

    #[inline]
    fn try_lock_upgradable(&self) -> Option<GuardMarker> {
        marked(self.0.try_lock_upgradable())
    }

    #[inline]
    unsafe fn unlock_upgradable(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.0.unlock_upgradable() }
    }

    #[inline]
    unsafe fn upgrade(&self, guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.0.upgrade() };
        guard
    }

    #[inline]
    unsafe fn try_upgrade(&self, guard: GuardMarker) -> Result<GuardMarker, GuardMarker> {
        // SAFETY: the caller holds the upgradable lock.
        if unsafe { self.0.try_upgrade() } {
            Ok(guard)
        } else {
            Err(guard)
        }
    }
}

// SAFETY: forwards to the inner rwlock's fair upgradable unlock and bump.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgradeFair for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self, _guard: GuardMarker) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.0.unlock_upgradable_fair() }
    }

    #[inline]
    unsafe fn bump_upgradable(&self, _guard: &mut GuardMarker) {
        // SAFETY: the caller holds the upgradable lock; it is held again on return.
        unsafe { self.0.bump_upgradable() }
    }
}

// SAFETY: forwards to the inner rwlock's atomic downgrades.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgradeDowngrade for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn downgrade_upgradable(&self, guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.0.downgrade_upgradable() };
        guard
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self, guard: GuardMarker) -> GuardMarker {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.0.downgrade_to_upgradable() };
        guard
    }
}

// SAFETY: forwards to the inner rwlock's timed upgradable locks and upgrades; a timed-out
// upgrade keeps the upgradable lock.
unsafe impl<const RECURSIVE: bool> lock_api::RawRwLockUpgradeTimed for RawRwLock<RECURSIVE> {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> Option<GuardMarker> {
        marked(self.0.try_lock_upgradable_for(timeout))
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> Option<GuardMarker> {
        marked(self.0.try_lock_upgradable_until(timeout))
    }

    #[inline]
    unsafe fn try_upgrade_for(
        &self,
        guard: GuardMarker,
        timeout: Duration,
    ) -> Result<GuardMarker, GuardMarker> {
        // SAFETY: the caller holds the upgradable lock.
        if unsafe { self.0.try_upgrade_for(timeout) } {
            Ok(guard)
        } else {
            Err(guard)
        }
    }

    #[inline]
    unsafe fn try_upgrade_until(
        &self,
        guard: GuardMarker,
        timeout: Instant,
    ) -> Result<GuardMarker, GuardMarker> {
        // SAFETY: the caller holds the upgradable lock.
        if unsafe { self.0.try_upgrade_until(timeout) } {
            Ok(guard)
        } else {
            Err(guard)
        }
    }
}

/// parking_lot 0.13's `RawThreadId`: the calling thread's id for lock_api 0.5's
/// `ReentrantMutex` (instrumented-locks' [`RawThreadId`](instrumented_locks::RawThreadId):
/// non-zero, unique among live threads, stable for a thread's life).
pub struct RawThreadId;

// SAFETY: forwards to instrumented-locks' thread id, which is non-zero, stable for the
// calling thread and never shared by two live threads.
unsafe impl lock_api::GetThreadId for RawThreadId {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawThreadId = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        lock_api_04::GetThreadId::nonzero_thread_id(&instrumented_locks::RawThreadId)
    }
}

/// parking_lot 0.13's `RawCondvar`: a raw condition variable for lock_api 0.5's generic
/// `Condvar` over [`RawMutex`] (instrumented-locks' raw
/// [`Condvar`](instrumented_locks::raw::Condvar)). Not validated.
///
/// Its waits may wake spuriously, so, as lock_api 0.5 asks of such condvars,
/// `notify_one` returns `false` and `notify_all` returns `0` whatever they woke. The
/// crate's validated [`Condvar`](crate::Condvar) has no spurious wake-ups and exact counts.
pub struct RawCondvar(instrumented_locks::raw::Condvar);

impl RawCondvar {
    /// A condvar without waiters. `const`.
    #[inline]
    pub const fn new() -> RawCondvar {
        RawCondvar(instrumented_locks::raw::Condvar::new())
    }
}

impl Default for RawCondvar {
    #[inline]
    fn default() -> RawCondvar {
        RawCondvar::new()
    }
}

// SAFETY: `wait` releases `mutex` and holds it again when it returns (instrumented-locks'
// `wait_raw`, which re-locks on every path); the notifications report no counts, as allowed
// for a condvar with spurious wake-ups.
unsafe impl lock_api::RawCondvar for RawCondvar {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawCondvar = RawCondvar::new();
    type RawMutex = RawMutex;

    #[inline]
    unsafe fn wait(&self, mutex: &RawMutex, _guard: &mut GuardMarker) {
        // SAFETY: the caller holds `mutex` (the trait's contract).
        unsafe { self.0.wait_raw(&mutex.0, None) };
    }

    #[inline]
    fn notify_one(&self) -> bool {
        self.0.notify_one();
        false
    }

    #[inline]
    fn notify_all(&self) -> usize {
        self.0.notify_all();
        0
    }
}

// SAFETY: as for `RawCondvar`, with a deadline.
unsafe impl lock_api::RawCondvarTimed for RawCondvar {
    #[inline]
    fn checked_duration_to_instant(timeout: &Duration) -> Option<Instant> {
        Instant::now().checked_add(*timeout)
    }

    #[inline]
    unsafe fn wait_until(
        &self,
        mutex: &RawMutex,
        _guard: &mut GuardMarker,
        timeout: &Instant,
    ) -> bool {
        // SAFETY: the caller holds `mutex`.
        unsafe { self.0.wait_raw(&mutex.0, Some(*timeout)) }.timed_out()
    }
}
