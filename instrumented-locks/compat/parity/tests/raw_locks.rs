//! The raw locks `RawMutex`, `RawFairMutex` and `RawRwLock` through every lock_api trait they
//! implement: each trait method, const and associated type.
//!
//! Raw locks are what generic lock_api code is written against, so the mutex checks are one
//! generic function run for both raw mutex types. "Refused elsewhere" is asked from a second
//! thread, so no check depends on how a lock treats its own holder.

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::lock_api::{
    RawMutex as RawMutexApi, RawMutexFair, RawMutexTimed, RawRwLock as RawRwLockApi,
    RawRwLockDowngrade, RawRwLockFair, RawRwLockRecursive, RawRwLockRecursiveTimed, RawRwLockTimed,
    RawRwLockUpgrade, RawRwLockUpgradeDowngrade, RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};
use parking_lot::{RawFairMutex, RawMutex, RawRwLock};
use static_assertions::assert_type_eq_all;
use std::thread;
use std::time::{Duration, Instant};

// covers: RawMutex::Duration, RawMutex::Instant, RawFairMutex::Duration, RawFairMutex::Instant
// covers: RawRwLock::Duration, RawRwLock::Instant
assert_type_eq_all!(<RawMutex as RawMutexTimed>::Duration, Duration);
assert_type_eq_all!(<RawMutex as RawMutexTimed>::Instant, Instant);
assert_type_eq_all!(<RawFairMutex as RawMutexTimed>::Duration, Duration);
assert_type_eq_all!(<RawFairMutex as RawMutexTimed>::Instant, Instant);
assert_type_eq_all!(<RawRwLock as RawRwLockTimed>::Duration, Duration);
assert_type_eq_all!(<RawRwLock as RawRwLockTimed>::Instant, Instant);

// Guards are `Send` exactly when parking_lot's `send_guard` feature is on; the marker type
// that decides it is the raw lock's `GuardMarker`. (That it is lock_api's `GuardSend` or
// `GuardNoSend` is checked in `type_identity.rs`.)
// covers: RawMutex::GuardMarker, RawFairMutex::GuardMarker, RawRwLock::GuardMarker
#[cfg(not(feature = "send_guard"))]
static_assertions::assert_not_impl_any!(<RawMutex as RawMutexApi>::GuardMarker: Send);
#[cfg(not(feature = "send_guard"))]
static_assertions::assert_not_impl_any!(<RawFairMutex as RawMutexApi>::GuardMarker: Send);
#[cfg(not(feature = "send_guard"))]
static_assertions::assert_not_impl_any!(<RawRwLock as RawRwLockApi>::GuardMarker: Send);
#[cfg(feature = "send_guard")]
static_assertions::assert_impl_all!(<RawMutex as RawMutexApi>::GuardMarker: Send);
#[cfg(feature = "send_guard")]
static_assertions::assert_impl_all!(<RawFairMutex as RawMutexApi>::GuardMarker: Send);
#[cfg(feature = "send_guard")]
static_assertions::assert_impl_all!(<RawRwLock as RawRwLockApi>::GuardMarker: Send);

/// Runs `f` on another thread and returns its result.
fn elsewhere<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    thread::scope(|s| s.spawn(f).join().expect("probe thread"))
}

/// Every item of `RawMutex`, `RawMutexFair` and `RawMutexTimed`; `raw` starts unlocked.
/// `both_raw_mutex_types` runs it for `parking_lot::RawMutex` and `parking_lot::RawFairMutex`.
fn exercise_raw_mutex<R>(raw: &R)
where
    R: RawMutexApi + RawMutexFair + RawMutexTimed<Duration = Duration, Instant = Instant> + Sync,
{
    // covers: RawMutex::lock, RawMutex::try_lock, RawMutex::is_locked, RawMutex::unlock
    // covers: RawMutex::unlock_fair, RawMutex::bump, RawMutex::try_lock_for, RawMutex::try_lock_until
    // covers: RawFairMutex::lock, RawFairMutex::try_lock, RawFairMutex::is_locked
    // covers: RawFairMutex::unlock, RawFairMutex::unlock_fair, RawFairMutex::bump
    // covers: RawFairMutex::try_lock_for, RawFairMutex::try_lock_until
    assert!(!raw.is_locked());
    raw.lock();
    assert!(raw.is_locked());
    let refused = elsewhere(|| {
        (
            raw.try_lock(),
            raw.try_lock_for(SHORT),
            raw.try_lock_until(soon()),
        )
    });
    assert_eq!(refused, (false, false, false));
    // SAFETY: this thread holds the lock (taken above); bump releases and retakes it.
    unsafe { raw.bump() };
    assert!(raw.is_locked());
    // SAFETY: this thread holds the lock.
    unsafe { raw.unlock() };
    assert!(!raw.is_locked());
    assert!(raw.try_lock());
    // SAFETY: acquired by the `try_lock` just above.
    unsafe { raw.unlock_fair() };
    assert!(raw.try_lock_for(LONG));
    // SAFETY: acquired just above.
    unsafe { raw.unlock() };
    assert!(raw.try_lock_until(later()));
    // SAFETY: acquired just above.
    unsafe { raw.unlock() };
    assert!(!raw.is_locked());
}

#[test]
fn both_raw_mutex_types() {
    // covers: RawMutex::INIT, RawFairMutex::INIT, RawMutex, RawFairMutex
    let plain: RawMutex = <RawMutex as RawMutexApi>::INIT;
    exercise_raw_mutex(&plain);
    let fair: RawFairMutex = <RawFairMutex as RawMutexApi>::INIT;
    exercise_raw_mutex(&fair);
    static STATIC_RAW: RawMutex = RawMutex::INIT;
    exercise_raw_mutex(&STATIC_RAW);
}

/// A shared lock on `RawRwLock` held by whoever owns it (for `while_held_elsewhere`).
struct Shared<'a>(&'a RawRwLock);

impl<'a> Shared<'a> {
    fn lock(raw: &'a RawRwLock) -> Self {
        raw.lock_shared();
        Shared(raw)
    }
}

impl Drop for Shared<'_> {
    fn drop(&mut self) {
        // SAFETY: `Shared::lock` took one shared lock for this value.
        unsafe { self.0.unlock_shared() };
    }
}

#[test]
fn raw_rwlock_shared_and_exclusive() {
    // covers: RawRwLock, RawRwLock::INIT, RawRwLock::lock_shared, RawRwLock::try_lock_shared
    // covers: RawRwLock::unlock_shared, RawRwLock::lock_exclusive, RawRwLock::try_lock_exclusive
    // covers: RawRwLock::unlock_exclusive, RawRwLock::is_locked, RawRwLock::is_locked_exclusive
    // covers: RawRwLock::try_lock_exclusive_for, RawRwLock::try_lock_exclusive_until
    // covers: RawRwLock::try_lock_shared_for, RawRwLock::try_lock_shared_until
    // covers: RawRwLock::unlock_exclusive_fair, RawRwLock::unlock_shared_fair
    // covers: RawRwLock::bump_shared, RawRwLock::bump_exclusive, RawRwLock::downgrade
    let raw: RawRwLock = <RawRwLock as RawRwLockApi>::INIT;
    assert!(!raw.is_locked());
    raw.lock_shared();
    assert!(raw.try_lock_shared());
    assert!(raw.is_locked() && !raw.is_locked_exclusive());
    let refused = elsewhere(|| {
        (
            raw.try_lock_exclusive(),
            raw.try_lock_exclusive_for(SHORT),
            raw.try_lock_exclusive_until(soon()),
        )
    });
    assert_eq!(refused, (false, false, false));
    // SAFETY: the two shared locks taken above, released once each; bump_shared releases and
    // retakes the first.
    unsafe {
        raw.bump_shared();
        raw.unlock_shared_fair();
        raw.unlock_shared();
    }
    assert!(!raw.is_locked());

    raw.lock_exclusive();
    assert!(raw.is_locked_exclusive());
    let refused = elsewhere(|| {
        (
            raw.try_lock_shared(),
            raw.try_lock_shared_for(SHORT),
            raw.try_lock_shared_until(soon()),
        )
    });
    assert_eq!(refused, (false, false, false));
    // SAFETY: this thread holds the exclusive lock; bump releases and retakes it, downgrade
    // turns it into one shared lock, released by the `unlock_shared` below.
    unsafe {
        raw.bump_exclusive();
        raw.downgrade();
    }
    assert!(!raw.is_locked_exclusive() && raw.is_locked());
    assert!(
        elsewhere(|| Shared::lock(&raw).0.is_locked()),
        "shared after downgrade"
    );
    // SAFETY: the shared lock left by `downgrade`.
    unsafe { raw.unlock_shared() };

    assert!(raw.try_lock_exclusive());
    // SAFETY: acquired just above.
    unsafe { raw.unlock_exclusive_fair() };
    assert!(raw.try_lock_exclusive_for(LONG));
    // SAFETY: acquired just above.
    unsafe { raw.unlock_exclusive() };
    assert!(raw.try_lock_exclusive_until(later()));
    // SAFETY: acquired just above.
    unsafe { raw.unlock_exclusive() };
    assert!(raw.try_lock_shared_for(LONG) && raw.try_lock_shared_until(later()));
    // SAFETY: the two shared locks acquired just above.
    unsafe {
        raw.unlock_shared();
        raw.unlock_shared();
    }
    assert!(!raw.is_locked());
}

#[test]
fn raw_rwlock_recursive_reads() {
    // covers: RawRwLock::lock_shared_recursive, RawRwLock::try_lock_shared_recursive
    // covers: RawRwLock::try_lock_shared_recursive_for, RawRwLock::try_lock_shared_recursive_until
    let raw = RawRwLock::INIT;
    raw.lock_shared_recursive();
    assert!(raw.try_lock_shared_recursive());
    assert!(raw.try_lock_shared_recursive_for(LONG));
    assert!(raw.try_lock_shared_recursive_until(later()));
    // SAFETY: the four shared locks acquired above.
    unsafe {
        for _ in 0..4 {
            raw.unlock_shared();
        }
    }
    raw.lock_exclusive();
    let refused = elsewhere(|| {
        (
            raw.try_lock_shared_recursive(),
            raw.try_lock_shared_recursive_for(SHORT),
            raw.try_lock_shared_recursive_until(soon()),
        )
    });
    assert_eq!(refused, (false, false, false));
    // SAFETY: acquired above.
    unsafe { raw.unlock_exclusive() };
    assert!(!raw.is_locked());
}

#[test]
fn raw_rwlock_upgradable() {
    // covers: RawRwLock::lock_upgradable, RawRwLock::try_lock_upgradable, RawRwLock::unlock_upgradable
    // covers: RawRwLock::upgrade, RawRwLock::try_upgrade, RawRwLock::unlock_upgradable_fair
    // covers: RawRwLock::bump_upgradable, RawRwLock::downgrade_upgradable
    // covers: RawRwLock::downgrade_to_upgradable, RawRwLock::try_lock_upgradable_for
    // covers: RawRwLock::try_lock_upgradable_until, RawRwLock::try_upgrade_for
    // covers: RawRwLock::try_upgrade_until
    let raw = RawRwLock::INIT;
    raw.lock_upgradable();
    let refused = elsewhere(|| {
        (
            raw.try_lock_upgradable(),
            raw.try_lock_upgradable_for(SHORT),
            raw.try_lock_upgradable_until(soon()),
        )
    });
    assert_eq!(refused, (false, false, false));
    assert!(
        elsewhere(|| Shared::lock(&raw).0.is_locked()),
        "readers share with it"
    );
    // SAFETY: this thread holds the upgradable lock; each step below turns the lock it holds
    // into the next kind, ending with one shared lock.
    unsafe {
        assert!(raw.try_upgrade());
        assert!(raw.is_locked_exclusive());
        raw.downgrade_to_upgradable();
        assert!(!raw.is_locked_exclusive());
        raw.upgrade();
        assert!(raw.is_locked_exclusive());
        raw.downgrade_to_upgradable();
        raw.bump_upgradable();
        raw.downgrade_upgradable();
    }
    assert!(elsewhere(|| raw.try_lock_upgradable_for(LONG) && {
        // SAFETY: acquired on this thread just above.
        unsafe { raw.unlock_upgradable() };
        true
    }));
    // SAFETY: the shared lock left by `downgrade_upgradable`.
    unsafe { raw.unlock_shared() };
    assert!(!raw.is_locked());

    assert!(raw.try_lock_upgradable());
    // SAFETY: acquired just above.
    unsafe { raw.unlock_upgradable_fair() };
    assert!(raw.try_lock_upgradable_until(later()));
    let still_upgradable = while_held_elsewhere(
        || Shared::lock(&raw),
        || {
            // SAFETY: this thread holds the upgradable lock; every attempt fails (a reader is
            // present), so it still holds it afterwards.
            unsafe {
                !raw.try_upgrade() && !raw.try_upgrade_for(SHORT) && !raw.try_upgrade_until(soon())
            }
        },
    );
    assert!(still_upgradable);
    // SAFETY: this thread holds the upgradable lock; the upgrade succeeds (no reader left) and
    // the exclusive lock is released next.
    unsafe {
        assert!(raw.try_upgrade_for(LONG));
        raw.downgrade_to_upgradable();
        assert!(raw.try_upgrade_until(later()));
        raw.unlock_exclusive();
    }
    assert!(raw.try_lock_upgradable_for(LONG));
    // SAFETY: acquired just above.
    unsafe { raw.unlock_upgradable() };
    assert!(!raw.is_locked());
}
