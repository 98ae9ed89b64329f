//! lock_api 0.4's raw-lock traits for this crate's raw locks, by forwarding to the
//! instrumented-locks raw lock inside each: what lets the validated types
//! (`instrumented_locks::generic::Mutex<R, T>` & co., which sit on lock_api 0.4's traits) use
//! them as `R`, so that `parking_lot::Mutex<T>`'s raw lock is `parking_lot::RawMutex`, as in
//! parking_lot 0.13 (`ArcMutexGuard<RawMutex, T>`, `raw()`, `into_inner_with_raw()`).
//!
//! `RawRwLock<true>` ([`RawRwLockRecursive`](crate::RawRwLockRecursive)) takes recursive
//! shared locks in `lock_shared*` too, as under lock_api 0.5.

use core::num::NonZeroUsize;
use std::time::{Duration, Instant};

use lock_api_04 as la;

use crate::raw::{RawFairMutex, RawMutex, RawRwLock, RawThreadId};

/// The 0.4 mutex traits for a newtype around an instrumented-locks raw mutex.
macro_rules! mutex_04 {
    ($Ty:ident($Inner:ty)) => {
        // SAFETY: every method forwards to the inner raw mutex, which keeps lock_api's mutex
        // contract; the newtype adds no state.
        unsafe impl la::RawMutex for $Ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: $Ty = $Ty(<$Inner as la::RawMutex>::INIT);
            type GuardMarker = <$Inner as la::RawMutex>::GuardMarker;

            #[inline]
            fn lock(&self) {
                la::RawMutex::lock(&self.0)
            }

            #[inline]
            fn try_lock(&self) -> bool {
                la::RawMutex::try_lock(&self.0)
            }

            #[inline]
            unsafe fn unlock(&self) {
                // SAFETY: the caller holds the mutex.
                unsafe { la::RawMutex::unlock(&self.0) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                la::RawMutex::is_locked(&self.0)
            }
        }

        // SAFETY: forwards to the inner mutex's fair unlock and bump.
        unsafe impl la::RawMutexFair for $Ty {
            #[inline]
            unsafe fn unlock_fair(&self) {
                // SAFETY: the caller holds the mutex.
                unsafe { la::RawMutexFair::unlock_fair(&self.0) }
            }

            #[inline]
            unsafe fn bump(&self) {
                // SAFETY: the caller holds the mutex; held again on return.
                unsafe { la::RawMutexFair::bump(&self.0) }
            }
        }

        // SAFETY: forwards to the inner mutex's timed locks.
        unsafe impl la::RawMutexTimed for $Ty {
            type Duration = Duration;
            type Instant = Instant;

            #[inline]
            fn try_lock_for(&self, timeout: Duration) -> bool {
                la::RawMutexTimed::try_lock_for(&self.0, timeout)
            }

            #[inline]
            fn try_lock_until(&self, timeout: Instant) -> bool {
                la::RawMutexTimed::try_lock_until(&self.0, timeout)
            }
        }
    };
}

mutex_04!(RawMutex(instrumented_locks::RawMutex));
mutex_04!(RawFairMutex(instrumented_locks::RawFairMutex));

// SAFETY: returns the instrumented-locks mutex inside, which is exactly what the lock_api
// 0.4 (and 0.5) methods above lock and unlock.
unsafe impl instrumented_locks::raw::CondvarMutex for RawMutex {
    #[inline]
    fn as_raw_mutex(&self) -> &instrumented_locks::RawMutex {
        &self.0
    }
}

// SAFETY: forwards to the inner rwlock, which keeps lock_api's rwlock contract; a recursive
// shared lock is a shared lock.
unsafe impl<const RECURSIVE: bool> la::RawRwLock for RawRwLock<RECURSIVE> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwLock(<instrumented_locks::RawRwLock as la::RawRwLock>::INIT);
    type GuardMarker = <instrumented_locks::RawRwLock as la::RawRwLock>::GuardMarker;

    #[inline]
    fn lock_shared(&self) {
        if RECURSIVE {
            la::RawRwLockRecursive::lock_shared_recursive(&self.0)
        } else {
            la::RawRwLock::lock_shared(&self.0)
        }
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        if RECURSIVE {
            la::RawRwLockRecursive::try_lock_shared_recursive(&self.0)
        } else {
            la::RawRwLock::try_lock_shared(&self.0)
        }
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller holds a shared lock.
        unsafe { la::RawRwLock::unlock_shared(&self.0) }
    }

    #[inline]
    fn lock_exclusive(&self) {
        la::RawRwLock::lock_exclusive(&self.0)
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        la::RawRwLock::try_lock_exclusive(&self.0)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { la::RawRwLock::unlock_exclusive(&self.0) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        la::RawRwLock::is_locked(&self.0)
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        la::RawRwLock::is_locked_exclusive(&self.0)
    }
}

// SAFETY: forwards to the inner rwlock's recursive shared locks.
unsafe impl<const RECURSIVE: bool> la::RawRwLockRecursive for RawRwLock<RECURSIVE> {
    #[inline]
    fn lock_shared_recursive(&self) {
        la::RawRwLockRecursive::lock_shared_recursive(&self.0)
    }

    #[inline]
    fn try_lock_shared_recursive(&self) -> bool {
        la::RawRwLockRecursive::try_lock_shared_recursive(&self.0)
    }
}

// SAFETY: forwards to the inner rwlock's fair unlocks and bumps.
unsafe impl<const RECURSIVE: bool> la::RawRwLockFair for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: the caller holds a shared lock.
        unsafe { la::RawRwLockFair::unlock_shared_fair(&self.0) }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { la::RawRwLockFair::unlock_exclusive_fair(&self.0) }
    }

    #[inline]
    unsafe fn bump_shared(&self) {
        // SAFETY: the caller holds a shared lock; held again on return.
        unsafe { la::RawRwLockFair::bump_shared(&self.0) }
    }

    #[inline]
    unsafe fn bump_exclusive(&self) {
        // SAFETY: the caller holds the exclusive lock; held again on return.
        unsafe { la::RawRwLockFair::bump_exclusive(&self.0) }
    }
}

// SAFETY: forwards to the inner rwlock's atomic downgrade.
unsafe impl<const RECURSIVE: bool> la::RawRwLockDowngrade for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn downgrade(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { la::RawRwLockDowngrade::downgrade(&self.0) }
    }
}

// SAFETY: forwards to the inner rwlock's timed locks (recursive shared ones for `RECURSIVE`).
unsafe impl<const RECURSIVE: bool> la::RawRwLockTimed for RawRwLock<RECURSIVE> {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        if RECURSIVE {
            la::RawRwLockRecursiveTimed::try_lock_shared_recursive_for(&self.0, timeout)
        } else {
            la::RawRwLockTimed::try_lock_shared_for(&self.0, timeout)
        }
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> bool {
        if RECURSIVE {
            la::RawRwLockRecursiveTimed::try_lock_shared_recursive_until(&self.0, timeout)
        } else {
            la::RawRwLockTimed::try_lock_shared_until(&self.0, timeout)
        }
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        la::RawRwLockTimed::try_lock_exclusive_for(&self.0, timeout)
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> bool {
        la::RawRwLockTimed::try_lock_exclusive_until(&self.0, timeout)
    }
}

// SAFETY: forwards to the inner rwlock's timed recursive shared locks.
unsafe impl<const RECURSIVE: bool> la::RawRwLockRecursiveTimed for RawRwLock<RECURSIVE> {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
        la::RawRwLockRecursiveTimed::try_lock_shared_recursive_for(&self.0, timeout)
    }

    #[inline]
    fn try_lock_shared_recursive_until(&self, timeout: Instant) -> bool {
        la::RawRwLockRecursiveTimed::try_lock_shared_recursive_until(&self.0, timeout)
    }
}

// SAFETY: forwards to the inner rwlock's upgradable locks; a failed upgrade keeps the
// upgradable lock.
unsafe impl<const RECURSIVE: bool> la::RawRwLockUpgrade for RawRwLock<RECURSIVE> {
    #[inline]
    fn lock_upgradable(&self) {
        la::RawRwLockUpgrade::lock_upgradable(&self.0)
    }

    #[inline]
    fn try_lock_upgradable(&self) -> bool {
        la::RawRwLockUpgrade::try_lock_upgradable(&self.0)
    }

    #[inline]
    unsafe fn unlock_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgrade::unlock_upgradable(&self.0) }
    }

    #[inline]
    unsafe fn upgrade(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgrade::upgrade(&self.0) }
    }

    #[inline]
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgrade::try_upgrade(&self.0) }
    }
}

// SAFETY: forwards to the inner rwlock's fair upgradable unlock and bump.
unsafe impl<const RECURSIVE: bool> la::RawRwLockUpgradeFair for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgradeFair::unlock_upgradable_fair(&self.0) }
    }

    #[inline]
    unsafe fn bump_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock; held again on return.
        unsafe { la::RawRwLockUpgradeFair::bump_upgradable(&self.0) }
    }
}

// SAFETY: forwards to the inner rwlock's atomic downgrades.
unsafe impl<const RECURSIVE: bool> la::RawRwLockUpgradeDowngrade for RawRwLock<RECURSIVE> {
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgradeDowngrade::downgrade_upgradable(&self.0) }
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { la::RawRwLockUpgradeDowngrade::downgrade_to_upgradable(&self.0) }
    }
}

// SAFETY: forwards to the inner rwlock's timed upgradable locks and upgrades.
unsafe impl<const RECURSIVE: bool> la::RawRwLockUpgradeTimed for RawRwLock<RECURSIVE> {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> bool {
        la::RawRwLockUpgradeTimed::try_lock_upgradable_for(&self.0, timeout)
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> bool {
        la::RawRwLockUpgradeTimed::try_lock_upgradable_until(&self.0, timeout)
    }

    #[inline]
    unsafe fn try_upgrade_for(&self, timeout: Duration) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgradeTimed::try_upgrade_for(&self.0, timeout) }
    }

    #[inline]
    unsafe fn try_upgrade_until(&self, timeout: Instant) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { la::RawRwLockUpgradeTimed::try_upgrade_until(&self.0, timeout) }
    }
}

// SAFETY: forwards to instrumented-locks' thread id (non-zero, stable, unique among live
// threads).
unsafe impl la::GetThreadId for RawThreadId {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawThreadId = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        la::GetThreadId::nonzero_thread_id(&instrumented_locks::RawThreadId)
    }
}
