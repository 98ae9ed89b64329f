//! `Send` and `Sync` of every type, checked at compile time, both ways (`assert_not_impl_any`
//! fails to compile if the type does implement the trait).
//!
//! Guards are `Send` only with parking_lot's `send_guard` feature (`--features send_guard`);
//! then a guard taken on one thread may be released on another, which is tested by moving
//! guards of every kind to a second thread and releasing them there.

use parking_lot::lock_api;
use parking_lot::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard, Condvar, FairMutex, FairMutexGuard, MappedFairMutexGuard,
    MappedMutexGuard, MappedReentrantMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard,
    Mutex, MutexGuard, Once, OnceState, RawFairMutex, RawMutex, RawRwLock, RawThreadId,
    ReentrantMutex, ReentrantMutexGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard, WaitTimeoutResult,
};
use static_assertions::{assert_impl_all, assert_not_impl_any};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

// The locks: `Send` with `T: Send`; `Sync` with `T: Send` (RwLock: `T: Send + Sync`).
// covers: Mutex, Mutex: Send, Mutex: Sync, FairMutex, FairMutex: Send, FairMutex: Sync
// covers: ReentrantMutex, ReentrantMutex: Send, ReentrantMutex: Sync
// covers: RwLock, RwLock: Send, RwLock: Sync
assert_impl_all!(Mutex<Cell<u8>>: Send, Sync);
assert_not_impl_any!(Mutex<Rc<u8>>: Send, Sync);
assert_impl_all!(FairMutex<Cell<u8>>: Send, Sync);
assert_not_impl_any!(FairMutex<Rc<u8>>: Send, Sync);
assert_impl_all!(ReentrantMutex<RefCell<u8>>: Send, Sync);
assert_not_impl_any!(ReentrantMutex<Rc<u8>>: Send, Sync);
assert_impl_all!(RwLock<u8>: Send, Sync);
assert_impl_all!(RwLock<Cell<u8>>: Send);
assert_not_impl_any!(RwLock<Cell<u8>>: Sync);

// The other types.
// covers: Condvar, Once, lock_api::GuardSend, lock_api::GuardNoSend, lock_api::GuardNoSend: Sync
assert_impl_all!(Condvar: Send, Sync);
assert_impl_all!(Once: Send, Sync);
assert_impl_all!(OnceState: Send, Sync);
assert_impl_all!(WaitTimeoutResult: Send, Sync);
assert_impl_all!(RawMutex: Send, Sync);
assert_impl_all!(RawFairMutex: Send, Sync);
assert_impl_all!(RawRwLock: Send, Sync);
assert_impl_all!(RawThreadId: Send, Sync);
assert_impl_all!(lock_api::GuardSend: Send, Sync);
assert_impl_all!(lock_api::GuardNoSend: Sync);
assert_not_impl_any!(lock_api::GuardNoSend: Send);

// Guards are `Sync` when `T: Sync` (sharing `&Guard` only shares `&T`).
// covers: MutexGuard, MutexGuard: Sync, FairMutexGuard, FairMutexGuard: Sync
// covers: MappedMutexGuard, MappedMutexGuard: Sync, MappedFairMutexGuard, MappedFairMutexGuard: Sync
// covers: ReentrantMutexGuard, ReentrantMutexGuard: Sync
// covers: MappedReentrantMutexGuard, MappedReentrantMutexGuard: Sync
// covers: RwLockReadGuard, RwLockReadGuard: Sync, RwLockWriteGuard, RwLockWriteGuard: Sync
// covers: RwLockUpgradableReadGuard, RwLockUpgradableReadGuard: Sync
// covers: MappedRwLockReadGuard, MappedRwLockReadGuard: Sync
// covers: MappedRwLockWriteGuard, MappedRwLockWriteGuard: Sync, ArcMutexGuard: Sync
assert_impl_all!(MutexGuard<'static, u8>: Sync);
assert_not_impl_any!(MutexGuard<'static, Cell<u8>>: Sync);
assert_impl_all!(FairMutexGuard<'static, u8>: Sync);
assert_impl_all!(MappedMutexGuard<'static, u8>: Sync);
assert_not_impl_any!(MappedMutexGuard<'static, Cell<u8>>: Sync);
assert_impl_all!(MappedFairMutexGuard<'static, u8>: Sync);
assert_impl_all!(ReentrantMutexGuard<'static, u8>: Sync);
assert_not_impl_any!(ReentrantMutexGuard<'static, Cell<u8>>: Sync);
assert_impl_all!(MappedReentrantMutexGuard<'static, u8>: Sync);
assert_impl_all!(RwLockReadGuard<'static, u8>: Sync);
assert_not_impl_any!(RwLockReadGuard<'static, Cell<u8>>: Sync);
assert_impl_all!(RwLockWriteGuard<'static, u8>: Sync);
assert_impl_all!(RwLockUpgradableReadGuard<'static, u8>: Sync);
assert_impl_all!(MappedRwLockReadGuard<'static, u8>: Sync);
assert_impl_all!(MappedRwLockWriteGuard<'static, u8>: Sync);
assert_impl_all!(ArcMutexGuard<RawMutex, u8>: Sync);
assert_not_impl_any!(ArcMutexGuard<RawMutex, Cell<u8>>: Sync);

// Reentrant guards are never `Send`: the lock belongs to the thread that took it.
assert_not_impl_any!(ReentrantMutexGuard<'static, u8>: Send);
assert_not_impl_any!(MappedReentrantMutexGuard<'static, u8>: Send);
assert_not_impl_any!(ArcReentrantMutexGuard<RawMutex, RawThreadId, u8>: Send);

// Without `send_guard`, no guard is `Send`.
// covers: ArcMutexGuard: Send, MappedMutexGuard: Send, MappedFairMutexGuard: Send
// covers: MappedRwLockReadGuard: Send, MappedRwLockWriteGuard: Send
#[cfg(not(feature = "send_guard"))]
mod guards_are_not_send {
    use super::*;
    assert_not_impl_any!(MutexGuard<'static, u8>: Send);
    assert_not_impl_any!(FairMutexGuard<'static, u8>: Send);
    assert_not_impl_any!(MappedMutexGuard<'static, u8>: Send);
    assert_not_impl_any!(MappedFairMutexGuard<'static, u8>: Send);
    assert_not_impl_any!(RwLockReadGuard<'static, u8>: Send);
    assert_not_impl_any!(RwLockWriteGuard<'static, u8>: Send);
    assert_not_impl_any!(RwLockUpgradableReadGuard<'static, u8>: Send);
    assert_not_impl_any!(MappedRwLockReadGuard<'static, u8>: Send);
    assert_not_impl_any!(MappedRwLockWriteGuard<'static, u8>: Send);
    assert_not_impl_any!(ArcMutexGuard<RawMutex, u8>: Send);
    assert_not_impl_any!(ArcRwLockReadGuard<RawRwLock, u8>: Send);
    assert_not_impl_any!(ArcRwLockWriteGuard<RawRwLock, u8>: Send);
    assert_not_impl_any!(ArcRwLockUpgradableReadGuard<RawRwLock, u8>: Send);
}

// With `send_guard`, guards are `Send` when what they give access to may be sent.
// covers: ArcMutexGuard: Send, MappedMutexGuard: Send, MappedFairMutexGuard: Send
// covers: MappedRwLockReadGuard: Send, MappedRwLockWriteGuard: Send
#[cfg(feature = "send_guard")]
mod guards_are_send {
    use super::*;
    assert_impl_all!(MutexGuard<'static, u8>: Send);
    assert_not_impl_any!(MutexGuard<'static, Rc<u8>>: Send);
    assert_impl_all!(FairMutexGuard<'static, u8>: Send);
    assert_impl_all!(MappedMutexGuard<'static, u8>: Send);
    assert_not_impl_any!(MappedMutexGuard<'static, Rc<u8>>: Send);
    assert_impl_all!(MappedFairMutexGuard<'static, u8>: Send);
    assert_impl_all!(RwLockReadGuard<'static, u8>: Send);
    assert_impl_all!(RwLockWriteGuard<'static, u8>: Send);
    assert_impl_all!(RwLockUpgradableReadGuard<'static, u8>: Send);
    assert_impl_all!(MappedRwLockReadGuard<'static, u8>: Send);
    assert_impl_all!(MappedRwLockWriteGuard<'static, u8>: Send);
    assert_impl_all!(ArcMutexGuard<RawMutex, u8>: Send);
    assert_not_impl_any!(ArcMutexGuard<RawMutex, Rc<u8>>: Send);
    assert_impl_all!(ArcRwLockReadGuard<RawRwLock, u8>: Send);
    assert_impl_all!(ArcRwLockWriteGuard<RawRwLock, u8>: Send);
    assert_impl_all!(ArcRwLockUpgradableReadGuard<RawRwLock, u8>: Send);
}

/// Guards of every kind taken here and released on another thread: afterwards this thread
/// can take each lock again (a blocking `lock`/`write` would hang if the release were lost).
#[cfg(feature = "send_guard")]
#[test]
fn guards_released_on_another_thread() {
    // covers: MutexGuard: Drop, MappedMutexGuard: Send, MappedRwLockWriteGuard: Send
    // covers: ArcMutexGuard: Send, MappedRwLockReadGuard: Send
    use std::sync::Arc;
    use std::thread;
    let m = Mutex::new(1);
    let f = FairMutex::new(2);
    let l = RwLock::new(3);
    let arc = Arc::new(Mutex::new(4));
    thread::scope(|s| {
        let (g, fg, w) = (m.lock(), f.lock(), l.write());
        s.spawn(move || {
            let mut g = g;
            *g += 10;
            drop((g, fg, w));
        })
        .join()
        .expect("releasing thread");
    });
    assert_eq!((*m.lock(), *f.lock(), *l.write()), (11, 2, 3));
    thread::scope(|s| {
        let mapped = MutexGuard::map(m.lock(), |v| v);
        let read = l.read();
        let upgradable = l.upgradable_read();
        s.spawn(move || drop((mapped, read, upgradable)))
            .join()
            .expect("releasing thread");
    });
    assert!(l.try_write().is_some() && m.try_lock().is_some());
    let w = RwLockWriteGuard::map(l.write(), |v| v);
    thread::scope(|s| {
        s.spawn(move || drop(w)).join().expect("releasing thread");
    });
    let r = RwLockReadGuard::map(l.read(), |v| v);
    thread::scope(|s| {
        s.spawn(move || drop(r)).join().expect("releasing thread");
    });
    let ag = arc.lock_arc();
    thread::spawn(move || drop(ag))
        .join()
        .expect("releasing thread");
    assert_eq!((*arc.lock(), *l.write()), (4, 3));
}
