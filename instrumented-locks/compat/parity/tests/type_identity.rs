//! Type identities parking_lot 0.12 has and user code may rely on: each parking_lot lock type
//! *is* the lock_api type over parking_lot's raw lock, so a `parking_lot::Mutex<T>` can be
//! passed where `lock_api::Mutex<parking_lot::RawMutex, T>` is named, and generic lock_api code
//! accepts parking_lot's locks.
//!
//! A compat crate that gives parking_lot's names types of its own fails exactly this file
//! (and nothing else of the parity suite): that is a documented choice, not a parity gap.
//! The file is the parity crate's feature `type_identity` (on by default), which runs against
//! such a compat crate leave off.

#![cfg(feature = "type_identity")]

use parking_lot::lock_api::{self, RawMutex as _, RawRwLock as _};
use parking_lot::{RawFairMutex, RawMutex, RawRwLock, RawThreadId};
use static_assertions::assert_type_eq_all;

assert_type_eq_all!(parking_lot::Mutex<u8>, lock_api::Mutex<RawMutex, u8>);
assert_type_eq_all!(
    parking_lot::MutexGuard<'static, u8>,
    lock_api::MutexGuard<'static, RawMutex, u8>
);
assert_type_eq_all!(
    parking_lot::MappedMutexGuard<'static, u8>,
    lock_api::MappedMutexGuard<'static, RawMutex, u8>
);
assert_type_eq_all!(parking_lot::FairMutex<u8>, lock_api::Mutex<RawFairMutex, u8>);
assert_type_eq_all!(
    parking_lot::FairMutexGuard<'static, u8>,
    lock_api::MutexGuard<'static, RawFairMutex, u8>
);
assert_type_eq_all!(
    parking_lot::MappedFairMutexGuard<'static, u8>,
    lock_api::MappedMutexGuard<'static, RawFairMutex, u8>
);
assert_type_eq_all!(
    parking_lot::ReentrantMutex<u8>,
    lock_api::ReentrantMutex<RawMutex, RawThreadId, u8>
);
assert_type_eq_all!(
    parking_lot::ReentrantMutexGuard<'static, u8>,
    lock_api::ReentrantMutexGuard<'static, RawMutex, RawThreadId, u8>
);
assert_type_eq_all!(
    parking_lot::MappedReentrantMutexGuard<'static, u8>,
    lock_api::MappedReentrantMutexGuard<'static, RawMutex, RawThreadId, u8>
);
assert_type_eq_all!(parking_lot::RwLock<u8>, lock_api::RwLock<RawRwLock, u8>);
assert_type_eq_all!(
    parking_lot::RwLockReadGuard<'static, u8>,
    lock_api::RwLockReadGuard<'static, RawRwLock, u8>
);
assert_type_eq_all!(
    parking_lot::RwLockWriteGuard<'static, u8>,
    lock_api::RwLockWriteGuard<'static, RawRwLock, u8>
);
assert_type_eq_all!(
    parking_lot::RwLockUpgradableReadGuard<'static, u8>,
    lock_api::RwLockUpgradableReadGuard<'static, RawRwLock, u8>
);
assert_type_eq_all!(
    parking_lot::MappedRwLockReadGuard<'static, u8>,
    lock_api::MappedRwLockReadGuard<'static, RawRwLock, u8>
);
assert_type_eq_all!(
    parking_lot::MappedRwLockWriteGuard<'static, u8>,
    lock_api::MappedRwLockWriteGuard<'static, RawRwLock, u8>
);
assert_type_eq_all!(parking_lot::ArcMutexGuard<RawMutex, u8>, lock_api::ArcMutexGuard<RawMutex, u8>);
assert_type_eq_all!(
    parking_lot::ArcReentrantMutexGuard<RawMutex, RawThreadId, u8>,
    lock_api::ArcReentrantMutexGuard<RawMutex, RawThreadId, u8>
);
assert_type_eq_all!(
    parking_lot::ArcRwLockReadGuard<RawRwLock, u8>,
    lock_api::ArcRwLockReadGuard<RawRwLock, u8>
);
assert_type_eq_all!(
    parking_lot::ArcRwLockWriteGuard<RawRwLock, u8>,
    lock_api::ArcRwLockWriteGuard<RawRwLock, u8>
);
assert_type_eq_all!(
    parking_lot::ArcRwLockUpgradableReadGuard<RawRwLock, u8>,
    lock_api::ArcRwLockUpgradableReadGuard<RawRwLock, u8>
);

#[cfg(not(feature = "send_guard"))]
assert_type_eq_all!(
    <RawMutex as lock_api::RawMutex>::GuardMarker,
    lock_api::GuardNoSend
);
#[cfg(not(feature = "send_guard"))]
assert_type_eq_all!(
    <RawRwLock as lock_api::RawRwLock>::GuardMarker,
    lock_api::GuardNoSend
);
#[cfg(feature = "send_guard")]
assert_type_eq_all!(
    <RawMutex as lock_api::RawMutex>::GuardMarker,
    lock_api::GuardSend
);
#[cfg(feature = "send_guard")]
assert_type_eq_all!(
    <RawRwLock as lock_api::RawRwLock>::GuardMarker,
    lock_api::GuardSend
);

/// Generic lock_api code, called with parking_lot's own types.
fn bump<R: lock_api::RawMutex>(m: &lock_api::Mutex<R, u32>) -> u32 {
    let mut g = m.lock();
    *g += 1;
    *g
}

fn read_first<R: lock_api::RawRwLock>(l: &lock_api::RwLock<R, (u32, u32)>) -> u32 {
    l.read().0
}

#[test]
fn parking_lot_locks_are_lock_api_locks() {
    let m = parking_lot::Mutex::new(1);
    let f = parking_lot::FairMutex::new(2);
    assert_eq!((bump(&m), bump(&f)), (2, 3));
    let l = parking_lot::RwLock::new((4, 5));
    assert_eq!(read_first(&l), 4);
    // A parking_lot guard is the lock_api guard: lock_api's associated functions take it.
    let g: parking_lot::MutexGuard<'_, u32> = m.lock();
    let mapped = lock_api::MutexGuard::map(g, |v| v);
    assert_eq!(*mapped, 2);
    drop(mapped);
    // And the raw lock behind `raw()` is parking_lot's `RawMutex`.
    // SAFETY: only asked whether it is locked.
    let raw: &RawMutex = unsafe { m.raw() };
    assert!(!raw.is_locked());
    // SAFETY: only asked whether it is locked.
    let raw: &RawRwLock = unsafe { l.raw() };
    assert!(!raw.is_locked());
}
