//! Feature `owning_ref`: every guard is a `StableAddress`, so an `OwningRef` can carry the
//! guard (and so the lock) together with a reference into the protected data.

use owning_ref::{OwningRef, OwningRefMut};
use parking_lot::{
    FairMutex, FairMutexGuard, Mutex, MutexGuard, ReentrantMutex, ReentrantMutexGuard, RwLock,
    RwLockReadGuard, RwLockWriteGuard,
};

#[test]
fn mutex_guards() {
    // covers: MutexGuard: StableAddress, MappedMutexGuard: StableAddress
    // covers: FairMutexGuard: StableAddress, MappedFairMutexGuard: StableAddress
    let m = Mutex::new((1, String::from("name")));
    let name = OwningRef::new(m.lock()).map(|v| v.1.as_str());
    assert_eq!(&*name, "name");
    assert!(m.is_locked(), "the OwningRef holds the guard");
    drop(name);
    let mut first = OwningRefMut::new(MutexGuard::map(m.lock(), |v| &mut v.0)).map_mut(|n| n);
    *first = 2;
    drop(first);
    assert!(!m.is_locked());
    assert_eq!(m.lock().0, 2);

    let f = FairMutex::new([1, 2]);
    let second = OwningRef::new(f.lock()).map(|a| &a[1]);
    assert_eq!(*second, 2);
    drop(second);
    let mapped = OwningRef::new(FairMutexGuard::map(f.lock(), |a| &mut a[0]));
    assert_eq!(*mapped, 1);
    drop(mapped);
    assert!(!f.is_locked());
}

#[test]
fn reentrant_guards() {
    // covers: ReentrantMutexGuard: StableAddress, MappedReentrantMutexGuard: StableAddress
    let m = ReentrantMutex::new((5, 6));
    let a = OwningRef::new(m.lock()).map(|v| &v.0);
    let b = OwningRef::new(ReentrantMutexGuard::map(m.lock(), |v| &v.1));
    assert_eq!((*a, *b), (5, 6));
    drop((a, b));
    assert!(!m.is_locked());
}

#[test]
fn rwlock_guards() {
    // covers: RwLockReadGuard: StableAddress, RwLockWriteGuard: StableAddress
    // covers: RwLockUpgradableReadGuard: StableAddress, MappedRwLockReadGuard: StableAddress
    // covers: MappedRwLockWriteGuard: StableAddress
    let l = RwLock::new(vec![1, 2, 3]);
    let last = OwningRef::new(l.read()).map(|v| &v[2]);
    let up = OwningRef::new(l.upgradable_read()).map(|v| &v[0]);
    let mapped = OwningRef::new(RwLockReadGuard::map(l.read(), |v| &v[1]));
    assert_eq!((*last, *up, *mapped), (3, 1, 2));
    assert!(l.try_write().is_none());
    drop((last, up, mapped));
    let mut w = OwningRefMut::new(l.write()).map_mut(|v| &mut v[0]);
    *w = 10;
    drop(w);
    let mut w = OwningRefMut::new(RwLockWriteGuard::map(l.write(), |v| &mut v[1])).map_mut(|n| n);
    *w = 20;
    drop(w);
    assert_eq!(*l.read(), [10, 20, 3]);
}
