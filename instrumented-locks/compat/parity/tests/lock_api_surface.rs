//! The `parking_lot::lock_api` re-export: code written against lock_api's generic types and
//! raw-lock traits, instantiated with parking_lot's raw locks (`lock_api::Mutex<RawMutex, T>`,
//! ...) and with a raw lock of the user's own.
//!
//! Nothing here assumes that `parking_lot::Mutex<T>` *is* `lock_api::Mutex<RawMutex, T>` (that
//! is `type_identity.rs`): these are the lock_api types as generic code names them.

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, LONG};
use parking_lot::lock_api;
use parking_lot::{RawFairMutex, RawMutex, RawRwLock, RawThreadId};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// covers: lock_api, lock_api::Mutex, lock_api::MutexGuard
/// Generic over any raw mutex: what a lock_api user writes.
fn add<R: lock_api::RawMutex>(m: &lock_api::Mutex<R, u32>, n: u32) -> u32 {
    let mut g: lock_api::MutexGuard<'_, R, u32> = m.lock();
    *g += n;
    *g
}

// covers: lock_api::MappedMutexGuard, lock_api::RawMutexFair, lock_api::RawMutexTimed
// covers: lock_api::ArcMutexGuard
fn fair_and_timed<R>(m: &Arc<lock_api::Mutex<R, (u32, u32)>>) -> u32
where
    R: lock_api::RawMutexFair + lock_api::RawMutexTimed<Duration = Duration, Instant = Instant>,
{
    let g = m.try_lock_for(LONG).expect("free");
    let mut second: lock_api::MappedMutexGuard<'_, R, u32> =
        lock_api::MutexGuard::map(g, |p| &mut p.1);
    *second += 1;
    lock_api::MappedMutexGuard::unlock_fair(second);
    let arc: lock_api::ArcMutexGuard<R, (u32, u32)> = m.lock_arc();
    let sum = arc.0 + arc.1;
    lock_api::ArcMutexGuard::unlock_fair(arc);
    sum
}

#[test]
fn lock_api_mutex_over_parking_lot_raw_mutexes() {
    // covers: lock_api::Mutex, lock_api::RawMutex
    static STATIC: lock_api::Mutex<RawMutex, u32> = lock_api::Mutex::new(0);
    let plain: lock_api::Mutex<RawMutex, u32> = lock_api::Mutex::new(1);
    let fair: lock_api::Mutex<RawFairMutex, u32> =
        lock_api::Mutex::const_new(<RawFairMutex as lock_api::RawMutex>::INIT, 2);
    assert_eq!((add(&STATIC, 1), add(&plain, 1), add(&fair, 1)), (1, 2, 3));
    assert!(!plain.is_locked() && !fair.is_locked());
    let plain = Arc::new(lock_api::Mutex::<RawMutex, _>::new((1, 1)));
    let fair = Arc::new(lock_api::Mutex::<RawFairMutex, _>::new((2, 2)));
    assert_eq!((fair_and_timed(&plain), fair_and_timed(&fair)), (3, 5));
}

// covers: lock_api::ReentrantMutex, lock_api::ReentrantMutexGuard, lock_api::GetThreadId
// covers: lock_api::MappedReentrantMutexGuard, lock_api::ArcReentrantMutexGuard
fn nest<R: lock_api::RawMutex, G: lock_api::GetThreadId>(
    m: &Arc<lock_api::ReentrantMutex<R, G, Cell<u32>>>,
) -> u32 {
    let outer: lock_api::ReentrantMutexGuard<'_, R, G, Cell<u32>> = m.lock();
    let inner: lock_api::MappedReentrantMutexGuard<'_, R, G, Cell<u32>> =
        lock_api::ReentrantMutexGuard::map(m.lock(), |c| c);
    let arc: lock_api::ArcReentrantMutexGuard<R, G, Cell<u32>> = m.lock_arc();
    outer.set(outer.get() + 1);
    inner.set(inner.get() + 1);
    arc.set(arc.get() + 1);
    outer.get()
}

#[test]
fn lock_api_reentrant_mutex_over_parking_lot_parts() {
    // covers: lock_api::ReentrantMutex
    let m = Arc::new(lock_api::ReentrantMutex::<RawMutex, RawThreadId, _>::new(
        Cell::new(0),
    ));
    assert_eq!(nest(&m), 3);
    assert!(!m.is_locked());
}

// covers: lock_api::RawRwLock, lock_api::RawRwLockFair, lock_api::RawRwLockDowngrade
// covers: lock_api::RawRwLockTimed, lock_api::RawRwLockRecursive, lock_api::RawRwLockRecursiveTimed
// covers: lock_api::RawRwLockUpgrade, lock_api::RawRwLockUpgradeFair
// covers: lock_api::RawRwLockUpgradeDowngrade, lock_api::RawRwLockUpgradeTimed
/// Every raw rwlock trait at once: what generic code needs for the whole RwLock API.
trait FullRawRwLock:
    lock_api::RawRwLock
    + lock_api::RawRwLockFair
    + lock_api::RawRwLockDowngrade
    + lock_api::RawRwLockTimed<Duration = Duration, Instant = Instant>
    + lock_api::RawRwLockRecursive
    + lock_api::RawRwLockRecursiveTimed
    + lock_api::RawRwLockUpgrade
    + lock_api::RawRwLockUpgradeFair
    + lock_api::RawRwLockUpgradeDowngrade
    + lock_api::RawRwLockUpgradeTimed
{
}
impl<R> FullRawRwLock for R where
    R: lock_api::RawRwLock
        + lock_api::RawRwLockFair
        + lock_api::RawRwLockDowngrade
        + lock_api::RawRwLockTimed<Duration = Duration, Instant = Instant>
        + lock_api::RawRwLockRecursive
        + lock_api::RawRwLockRecursiveTimed
        + lock_api::RawRwLockUpgrade
        + lock_api::RawRwLockUpgradeFair
        + lock_api::RawRwLockUpgradeDowngrade
        + lock_api::RawRwLockUpgradeTimed
{
}

// covers: lock_api::RwLock, lock_api::RwLockReadGuard, lock_api::RwLockWriteGuard
// covers: lock_api::RwLockUpgradableReadGuard, lock_api::MappedRwLockReadGuard
// covers: lock_api::MappedRwLockWriteGuard, lock_api::ArcRwLockReadGuard
// covers: lock_api::ArcRwLockWriteGuard, lock_api::ArcRwLockUpgradableReadGuard
fn rwlock_round<R: FullRawRwLock>(l: &Arc<lock_api::RwLock<R, (u32, u32)>>) -> (u32, u32) {
    let mut w: lock_api::MappedRwLockWriteGuard<'_, R, u32> =
        lock_api::RwLockWriteGuard::map(l.write(), |p| &mut p.0);
    *w += 1;
    drop(w);
    let u: lock_api::RwLockUpgradableReadGuard<'_, R, (u32, u32)> = l.upgradable_read();
    let mut w: lock_api::RwLockWriteGuard<'_, R, (u32, u32)> =
        lock_api::RwLockUpgradableReadGuard::try_upgrade_until(u, later())
            .ok()
            .expect("free");
    w.1 += 1;
    let r: lock_api::RwLockReadGuard<'_, R, (u32, u32)> = lock_api::RwLockWriteGuard::downgrade(w);
    let second: lock_api::MappedRwLockReadGuard<'_, R, u32> =
        lock_api::RwLockReadGuard::map(r, |p| &p.1);
    let recursive = l.read_recursive();
    assert_eq!(*second, recursive.1);
    drop((second, recursive));
    let aw: lock_api::ArcRwLockWriteGuard<R, (u32, u32)> = l.write_arc();
    let au: lock_api::ArcRwLockUpgradableReadGuard<R, (u32, u32)> =
        lock_api::ArcRwLockWriteGuard::downgrade_to_upgradable(aw);
    let ar: lock_api::ArcRwLockReadGuard<R, (u32, u32)> =
        lock_api::ArcRwLockUpgradableReadGuard::downgrade(au);
    let result = *ar;
    lock_api::ArcRwLockReadGuard::unlock_fair(ar);
    result
}

#[test]
fn lock_api_rwlock_over_parking_lot_raw_rwlock() {
    // covers: lock_api::RwLock
    static STATIC: lock_api::RwLock<RawRwLock, u8> = lock_api::RwLock::new(1);
    assert_eq!(*STATIC.read(), 1);
    let l = Arc::new(lock_api::RwLock::<RawRwLock, _>::new((0, 0)));
    assert_eq!(rwlock_round(&l), (1, 1));
    assert_eq!(rwlock_round(&l), (2, 2));
    assert!(!l.is_locked());
}

// covers: lock_api::RawMutex, lock_api::GuardSend
/// A raw lock of the user's own, built on the traits parking_lot re-exports: a spin lock.
struct Spin(AtomicBool);

// SAFETY: `try_lock` succeeds for one caller at a time (compare_exchange from false to true)
// until `unlock` stores false, so the lock is exclusive; the orderings below make what the
// holder wrote visible to the next holder.
unsafe impl lock_api::RawMutex for Spin {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Spin = Spin(AtomicBool::new(false));
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while !self.try_lock() {
            std::hint::spin_loop();
        }
    }

    fn try_lock(&self) -> bool {
        self.0
            // Acquire on success: pairs with the Release store in `unlock`, so this holder
            // sees the previous holder's writes. Relaxed on failure: nothing is read.
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        // Release: pairs with the Acquire in `try_lock`, publishing this holder's writes.
        self.0.store(false, Ordering::Release);
    }
}

#[test]
fn user_raw_lock_through_the_re_export() {
    // covers: lock_api::Mutex
    static COUNT: lock_api::Mutex<Spin, u64> = lock_api::Mutex::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..200 {
                    *COUNT.lock() += 1;
                }
            });
        }
    });
    assert_eq!(*COUNT.lock(), 600);
    assert!(!COUNT.is_locked(), "is_locked: the trait's default method");
    let generic: lock_api::Mutex<Spin, u32> = lock_api::Mutex::new(600);
    assert_eq!(
        add(&generic, 1),
        601,
        "generic lock_api code takes the user's raw lock too"
    );
}
