//! Feature `arc_lock`: the `*_arc` methods of every lock and the five `Arc*Guard`s, which own
//! an `Arc` of their lock instead of borrowing it (so they are `'static`).

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::lock_api::{RawRwLock as _, RawRwLockUpgrade as _};
use parking_lot::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard, FairMutex, Mutex, RawFairMutex, RawMutex, RawRwLock, RawThreadId,
    ReentrantMutex, RwLock,
};
use std::sync::Arc;
use std::thread;

// covers: ArcMutexGuard, ArcRwLockReadGuard
/// Owners of `'static` guards: the reason `arc_lock` exists.
struct Held {
    mutex: ArcMutexGuard<RawMutex, Vec<u8>>,
    read: ArcRwLockReadGuard<RawRwLock, u8>,
}

#[test]
fn arc_guards_outlive_the_borrow() {
    // covers: Mutex::lock_arc, RwLock::read_arc
    // covers: ArcMutexGuard: Deref, ArcMutexGuard: DerefMut, ArcMutexGuard: Drop
    // covers: ArcRwLockReadGuard: Deref, ArcRwLockReadGuard: Drop
    let m = Arc::new(Mutex::new(vec![1]));
    let l = Arc::new(RwLock::new(2));
    let mut held = Held {
        mutex: m.lock_arc(),
        read: l.read_arc(),
    };
    held.mutex.push(*held.read);
    assert_eq!(
        Arc::strong_count(&m),
        2,
        "the guard owns a clone of the Arc"
    );
    assert!(m.is_locked() && l.is_locked());
    drop(held);
    assert_eq!(Arc::strong_count(&m), 1);
    assert_eq!(*m.lock(), [1, 2]);
    assert!(!l.is_locked());
}

#[test]
fn mutex_arc_methods() {
    // covers: Mutex::lock_arc, Mutex::try_lock_arc, Mutex::try_lock_arc_for, Mutex::try_lock_arc_until
    // covers: ArcMutexGuard::mutex, ArcMutexGuard::into_arc, ArcMutexGuard::into_arc_fair
    // covers: ArcMutexGuard::unlocked, ArcMutexGuard::unlocked_fair, ArcMutexGuard::bump
    // covers: ArcMutexGuard::unlock_fair
    let m = Arc::new(Mutex::new(0));
    let mut g: ArcMutexGuard<RawMutex, i32> = m.lock_arc();
    assert!(Arc::ptr_eq(ArcMutexGuard::mutex(&g), &m));
    assert!(m.try_lock_arc().is_none());
    assert!(ArcMutexGuard::unlocked(&mut g, || m
        .try_lock_arc()
        .is_some()));
    assert!(ArcMutexGuard::unlocked_fair(&mut g, || m
        .try_lock()
        .is_some()));
    ArcMutexGuard::bump(&mut g);
    *g += 1;
    let back: Arc<Mutex<i32>> = ArcMutexGuard::into_arc(g);
    assert!(Arc::ptr_eq(&back, &m) && !m.is_locked());
    let back = ArcMutexGuard::into_arc_fair(m.try_lock_arc().expect("free"));
    assert!(!back.is_locked());
    while_held_elsewhere(
        || m.lock(),
        || {
            assert!(m.try_lock_arc().is_none());
            assert!(m.try_lock_arc_for(SHORT).is_none());
            assert!(m.try_lock_arc_until(soon()).is_none());
        },
    );
    let g = m.try_lock_arc_for(LONG).expect("free");
    ArcMutexGuard::unlock_fair(g);
    let g = m.try_lock_arc_until(later()).expect("free");
    assert_eq!(*g, 1);
}

#[test]
fn fair_mutex_arc_methods() {
    // covers: FairMutex::lock_arc, FairMutex::try_lock_arc, FairMutex::try_lock_arc_for
    // covers: FairMutex::try_lock_arc_until
    let m = Arc::new(FairMutex::new(1));
    let g: ArcMutexGuard<RawFairMutex, i32> = m.lock_arc();
    assert!(m.try_lock_arc().is_none());
    drop(g);
    while_held_elsewhere(
        || m.lock(),
        || {
            assert!(m.try_lock_arc_for(SHORT).is_none());
            assert!(m.try_lock_arc_until(soon()).is_none());
        },
    );
    let a = m.try_lock_arc().expect("free");
    drop(a);
    let b = m.try_lock_arc_for(LONG).expect("free");
    drop(b);
    let c = m.try_lock_arc_until(later()).expect("free");
    assert_eq!(*c, 1);
}

#[test]
fn reentrant_mutex_arc_methods() {
    // covers: ReentrantMutex::lock_arc, ReentrantMutex::try_lock_arc, ReentrantMutex::try_lock_arc_for
    // covers: ReentrantMutex::try_lock_arc_until, ReentrantMutex::make_arc_guard_unchecked
    // covers: ArcReentrantMutexGuard, ArcReentrantMutexGuard::remutex, ArcReentrantMutexGuard::into_arc
    // covers: ArcReentrantMutexGuard::into_arc_fair, ArcReentrantMutexGuard::unlocked
    // covers: ArcReentrantMutexGuard::unlocked_fair, ArcReentrantMutexGuard::bump
    // covers: ArcReentrantMutexGuard::unlock_fair, ArcReentrantMutexGuard: Deref
    // covers: ArcReentrantMutexGuard: Drop
    let m = Arc::new(ReentrantMutex::new(5));
    let free_elsewhere = |m: &Arc<ReentrantMutex<i32>>| {
        let m = Arc::clone(m);
        thread::spawn(move || m.try_lock().is_some())
            .join()
            .expect("probe thread")
    };
    let mut g: ArcReentrantMutexGuard<RawMutex, RawThreadId, i32> = m.lock_arc();
    let again = m.try_lock_arc().expect("reentrant");
    assert_eq!(*g + *again, 10);
    drop(again);
    assert!(Arc::ptr_eq(ArcReentrantMutexGuard::remutex(&g), &m));
    assert!(ArcReentrantMutexGuard::unlocked(&mut g, || free_elsewhere(
        &m
    )));
    assert!(ArcReentrantMutexGuard::unlocked_fair(&mut g, || {
        free_elsewhere(&m)
    }));
    ArcReentrantMutexGuard::bump(&mut g);
    assert!(!free_elsewhere(&m));
    let back = ArcReentrantMutexGuard::into_arc(g);
    assert!(Arc::ptr_eq(&back, &m) && !m.is_locked());
    let _ = ArcReentrantMutexGuard::into_arc_fair(m.lock_arc());
    ArcReentrantMutexGuard::unlock_fair(m.try_lock_arc_for(LONG).expect("free"));
    let g = m.try_lock_arc_until(later()).expect("free");
    std::mem::forget(g);
    // SAFETY: this thread holds the lock through the guard forgotten above, which this one
    // replaces.
    let g = unsafe { m.make_arc_guard_unchecked() };
    drop(g);
    assert!(!m.is_locked());
    while_held_elsewhere(
        || m.lock(),
        || {
            assert!(m.try_lock_arc().is_none());
            assert!(m.try_lock_arc_for(SHORT).is_none());
            assert!(m.try_lock_arc_until(soon()).is_none());
        },
    );
}

#[test]
fn rwlock_read_and_write_arc_methods() {
    // covers: RwLock::read_arc, RwLock::try_read_arc, RwLock::try_read_arc_for, RwLock::try_read_arc_until
    // covers: RwLock::write_arc, RwLock::try_write_arc, RwLock::try_write_arc_for
    // covers: RwLock::try_write_arc_until, RwLock::read_arc_recursive, RwLock::try_read_recursive_arc
    // covers: RwLock::try_read_arc_recursive_for, RwLock::try_read_arc_recursive_until
    let l = Arc::new(RwLock::new(1));
    let readers = [
        l.read_arc(),
        l.try_read_arc().expect("shared"),
        l.try_read_arc_for(LONG).expect("shared"),
        l.try_read_arc_until(later()).expect("shared"),
        l.read_arc_recursive(),
        l.try_read_recursive_arc().expect("shared"),
        l.try_read_arc_recursive_for(LONG).expect("shared"),
        l.try_read_arc_recursive_until(later()).expect("shared"),
    ];
    assert_eq!(readers.iter().map(|r| **r).sum::<i32>(), 8);
    assert!(l.try_write_arc().is_none());
    drop(readers);
    let mut w = l.write_arc();
    *w = 2;
    drop(w);
    *l.try_write_arc().expect("free") += 1;
    *l.try_write_arc_for(LONG).expect("free") += 1;
    *l.try_write_arc_until(later()).expect("free") += 1;
    assert_eq!(*l.read(), 5);
    while_held_elsewhere(
        || l.write(),
        || {
            assert!(l.try_read_arc().is_none() && l.try_read_recursive_arc().is_none());
            assert!(l.try_read_arc_for(SHORT).is_none());
            assert!(l.try_read_arc_until(soon()).is_none());
            assert!(l.try_read_arc_recursive_for(SHORT).is_none());
            assert!(l.try_read_arc_recursive_until(soon()).is_none());
            assert!(l.try_write_arc_for(SHORT).is_none());
            assert!(l.try_write_arc_until(soon()).is_none());
        },
    );
}

#[test]
fn rwlock_unchecked_arc_guards() {
    // covers: RwLock::make_arc_read_guard_unchecked, RwLock::make_arc_write_guard_unchecked
    // covers: RwLock::make_upgradable_arc_guard_unchecked
    let l = Arc::new(RwLock::new(1));
    // SAFETY: the raw shared lock is handed to the guard made next, which releases it.
    unsafe { l.raw() }.lock_shared();
    // SAFETY: this thread holds a shared lock (just above) that no guard owns.
    let r = unsafe { l.make_arc_read_guard_unchecked() };
    assert_eq!(*r, 1);
    drop(r);
    // SAFETY: the raw exclusive lock is handed to the guard made next, which releases it.
    unsafe { l.raw() }.lock_exclusive();
    // SAFETY: this thread holds the exclusive lock (just above) that no guard owns.
    let mut w = unsafe { l.make_arc_write_guard_unchecked() };
    *w = 2;
    drop(w);
    // SAFETY: the raw upgradable lock is handed to the guard made next, which releases it.
    unsafe { l.raw() }.lock_upgradable();
    // SAFETY: this thread holds the upgradable lock (just above) that no guard owns.
    let u = unsafe { l.make_upgradable_arc_guard_unchecked() };
    assert_eq!(*u, 2);
    drop(u);
    assert!(!l.is_locked());
}

#[test]
fn arc_read_guard_methods() {
    // covers: ArcRwLockReadGuard::rwlock, ArcRwLockReadGuard::into_arc, ArcRwLockReadGuard::into_arc_fair
    // covers: ArcRwLockReadGuard::unlocked, ArcRwLockReadGuard::unlocked_fair, ArcRwLockReadGuard::bump
    // covers: ArcRwLockReadGuard::unlock_fair, ArcRwLockReadGuard: Debug, ArcRwLockReadGuard: Display
    let l = Arc::new(RwLock::new(3));
    let mut r: ArcRwLockReadGuard<RawRwLock, i32> = l.read_arc();
    assert!(Arc::ptr_eq(ArcRwLockReadGuard::rwlock(&r), &l));
    assert_eq!(format!("{:?} {}", r, r), "3 3");
    assert!(ArcRwLockReadGuard::unlocked(&mut r, || l
        .try_write()
        .is_some()));
    assert!(ArcRwLockReadGuard::unlocked_fair(&mut r, || l
        .try_write()
        .is_some()));
    ArcRwLockReadGuard::bump(&mut r);
    assert!(l.try_write().is_none());
    let back = ArcRwLockReadGuard::into_arc(r);
    assert!(Arc::ptr_eq(&back, &l) && !l.is_locked());
    let _ = ArcRwLockReadGuard::into_arc_fair(l.read_arc());
    ArcRwLockReadGuard::unlock_fair(l.read_arc());
    assert!(!l.is_locked());
}

#[test]
fn arc_write_guard_methods() {
    // covers: ArcRwLockWriteGuard, ArcRwLockWriteGuard::rwlock, ArcRwLockWriteGuard::into_arc
    // covers: ArcRwLockWriteGuard::into_arc_fair, ArcRwLockWriteGuard::unlocked
    // covers: ArcRwLockWriteGuard::unlocked_fair, ArcRwLockWriteGuard::bump
    // covers: ArcRwLockWriteGuard::unlock_fair, ArcRwLockWriteGuard::downgrade
    // covers: ArcRwLockWriteGuard::downgrade_to_upgradable, ArcRwLockWriteGuard: Debug
    // covers: ArcRwLockWriteGuard: Display, ArcRwLockWriteGuard: Deref, ArcRwLockWriteGuard: DerefMut
    // covers: ArcRwLockWriteGuard: Drop
    let l = Arc::new(RwLock::new(1));
    let mut w: ArcRwLockWriteGuard<RawRwLock, i32> = l.write_arc();
    assert!(Arc::ptr_eq(ArcRwLockWriteGuard::rwlock(&w), &l));
    assert_eq!(format!("{:?} {}", w, w), "1 1");
    assert!(ArcRwLockWriteGuard::unlocked(&mut w, || l
        .try_read()
        .is_some()));
    assert!(ArcRwLockWriteGuard::unlocked_fair(&mut w, || l
        .try_write()
        .is_some()));
    ArcRwLockWriteGuard::bump(&mut w);
    *w = 2;
    let r: ArcRwLockReadGuard<RawRwLock, i32> = ArcRwLockWriteGuard::downgrade(w);
    assert!(l.try_read().is_some() && l.try_write().is_none());
    drop(r);
    let u = ArcRwLockWriteGuard::downgrade_to_upgradable(l.write_arc());
    assert!(l.try_read().is_some() && l.try_upgradable_read().is_none());
    drop(u);
    let back = ArcRwLockWriteGuard::into_arc(l.write_arc());
    assert!(Arc::ptr_eq(&back, &l) && !l.is_locked());
    let _ = ArcRwLockWriteGuard::into_arc_fair(l.write_arc());
    ArcRwLockWriteGuard::unlock_fair(l.write_arc());
    assert_eq!(*l.read(), 2);
}

#[test]
fn arc_upgradable_guard_methods() {
    // covers: RwLock::upgradable_read_arc, RwLock::try_upgradable_read_arc
    // covers: RwLock::try_upgradable_read_arc_for, RwLock::try_upgradable_read_arc_until
    // covers: ArcRwLockUpgradableReadGuard, ArcRwLockUpgradableReadGuard::rwlock
    // covers: ArcRwLockUpgradableReadGuard::into_arc, ArcRwLockUpgradableReadGuard::into_arc_fair
    // covers: ArcRwLockUpgradableReadGuard::unlocked, ArcRwLockUpgradableReadGuard::unlocked_fair
    // covers: ArcRwLockUpgradableReadGuard::bump, ArcRwLockUpgradableReadGuard::unlock_fair
    // covers: ArcRwLockUpgradableReadGuard::upgrade, ArcRwLockUpgradableReadGuard::try_upgrade
    // covers: ArcRwLockUpgradableReadGuard::downgrade, ArcRwLockUpgradableReadGuard: Debug
    // covers: ArcRwLockUpgradableReadGuard: Display, ArcRwLockUpgradableReadGuard: Deref
    // covers: ArcRwLockUpgradableReadGuard: Drop
    let l = Arc::new(RwLock::new(1));
    let mut u: ArcRwLockUpgradableReadGuard<RawRwLock, i32> = l.upgradable_read_arc();
    assert!(Arc::ptr_eq(ArcRwLockUpgradableReadGuard::rwlock(&u), &l));
    assert_eq!(format!("{:?} {}", u, u), "1 1");
    assert!(l.try_upgradable_read_arc().is_none() && l.try_read().is_some());
    assert!(ArcRwLockUpgradableReadGuard::unlocked(&mut u, || l
        .try_write()
        .is_some()));
    assert!(ArcRwLockUpgradableReadGuard::unlocked_fair(&mut u, || {
        l.try_upgradable_read().is_some()
    }));
    ArcRwLockUpgradableReadGuard::bump(&mut u);
    let mut w = ArcRwLockUpgradableReadGuard::upgrade(u);
    *w = 2;
    let u = ArcRwLockWriteGuard::downgrade_to_upgradable(w);
    let r = l.read_arc();
    let u = ArcRwLockUpgradableReadGuard::try_upgrade(u)
        .err()
        .expect("a reader is present");
    drop(r);
    let w = ArcRwLockUpgradableReadGuard::try_upgrade(u)
        .ok()
        .expect("no reader left");
    drop(w);
    let r = ArcRwLockUpgradableReadGuard::downgrade(l.upgradable_read_arc());
    assert!(l.try_upgradable_read().is_some());
    drop(r);
    let back = ArcRwLockUpgradableReadGuard::into_arc(l.upgradable_read_arc());
    assert!(Arc::ptr_eq(&back, &l) && !l.is_locked());
    let _ = ArcRwLockUpgradableReadGuard::into_arc_fair(l.upgradable_read_arc());
    ArcRwLockUpgradableReadGuard::unlock_fair(l.try_upgradable_read_arc_for(LONG).expect("free"));
    let u = l.try_upgradable_read_arc_until(later()).expect("free");
    drop(u);
    while_held_elsewhere(
        || l.upgradable_read(),
        || {
            assert!(l.try_upgradable_read_arc_for(SHORT).is_none());
            assert!(l.try_upgradable_read_arc_until(soon()).is_none());
        },
    );
    assert_eq!(*l.read(), 2);
}

#[test]
fn arc_upgradable_timed_and_with_upgraded() {
    // covers: ArcRwLockUpgradableReadGuard::try_upgrade_for, ArcRwLockUpgradableReadGuard::try_upgrade_until
    // covers: ArcRwLockUpgradableReadGuard::with_upgraded, ArcRwLockUpgradableReadGuard::try_with_upgraded
    // covers: ArcRwLockUpgradableReadGuard::try_with_upgraded_for
    // covers: ArcRwLockUpgradableReadGuard::try_with_upgraded_until
    let l = Arc::new(RwLock::new(1));
    let mut u = l.upgradable_read_arc();
    assert_eq!(u.with_upgraded(|v| std::mem::replace(v, 2)), 1);
    assert!(!l.is_locked_exclusive() && l.try_upgradable_read().is_none());
    let (u, refused) = while_held_elsewhere(
        || l.read(),
        move || {
            let refused = (
                u.try_with_upgraded(|v| *v = 9).is_none(),
                u.try_with_upgraded_for(SHORT, |v| *v = 9).is_none(),
                u.try_with_upgraded_until(soon(), |v| *v = 9).is_none(),
            );
            let u = ArcRwLockUpgradableReadGuard::try_upgrade_for(u, SHORT)
                .err()
                .expect("reader");
            let u = ArcRwLockUpgradableReadGuard::try_upgrade_until(u, soon())
                .err()
                .expect("reader");
            (u, refused)
        },
    );
    assert_eq!(refused, (true, true, true));
    let mut u = u;
    assert_eq!(
        u.try_with_upgraded(|v| {
            *v += 1;
            *v
        }),
        Some(3)
    );
    assert_eq!(
        u.try_with_upgraded_for(LONG, |v| {
            *v += 1;
            *v
        }),
        Some(4)
    );
    assert_eq!(
        u.try_with_upgraded_until(later(), |v| {
            *v += 1;
            *v
        }),
        Some(5)
    );
    let w = ArcRwLockUpgradableReadGuard::try_upgrade_for(u, LONG)
        .ok()
        .expect("no readers");
    let u = ArcRwLockWriteGuard::downgrade_to_upgradable(w);
    let w = ArcRwLockUpgradableReadGuard::try_upgrade_until(u, later())
        .ok()
        .expect("no readers");
    assert!(l.is_locked_exclusive());
    drop(w);
    assert_eq!(*l.read(), 5);
}
