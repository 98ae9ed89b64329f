//! Upgradable reads: `RwLock::upgradable_read` and its `try_*` forms, and every method of
//! `RwLockUpgradableReadGuard`, plus `RwLockWriteGuard::downgrade_to_upgradable`.
//!
//! An upgradable read shares the lock with plain readers but excludes writers and other
//! upgradable readers; upgrading waits for the plain readers to leave.

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::{RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
use std::ptr;

#[test]
fn upgradable_shares_with_readers_only() {
    // covers: RwLock::upgradable_read, RwLock::try_upgradable_read
    // covers: RwLockUpgradableReadGuard: Deref, RwLockUpgradableReadGuard: Drop
    let l = RwLock::new(1);
    let u = l.upgradable_read();
    assert_eq!(*u, 1);
    assert!(l.is_locked() && !l.is_locked_exclusive());
    assert!(
        l.try_read().is_some(),
        "plain readers share with an upgradable reader"
    );
    assert!(
        l.try_upgradable_read().is_none(),
        "one upgradable reader at a time"
    );
    assert!(l.try_write().is_none());
    drop(u);
    assert!(l.try_upgradable_read().is_some());
    let r = l.read();
    assert!(
        l.try_upgradable_read().is_some(),
        "an upgradable reader joins plain readers"
    );
    drop(r);
}

#[test]
fn timed_upgradable_reads() {
    // covers: RwLock::try_upgradable_read_for, RwLock::try_upgradable_read_until
    let l = RwLock::new(0);
    while_held_elsewhere(
        || l.upgradable_read(),
        || {
            assert!(l.try_upgradable_read_for(SHORT).is_none());
            assert!(l.try_upgradable_read_until(soon()).is_none());
        },
    );
    while_held_elsewhere(
        || l.write(),
        || {
            assert!(l.try_upgradable_read_for(SHORT).is_none());
            assert!(l.try_upgradable_read_until(soon()).is_none());
        },
    );
    assert!(l.try_upgradable_read_for(LONG).is_some());
    assert!(l.try_upgradable_read_until(later()).is_some());
}

#[test]
fn upgrade_and_try_upgrade() {
    // covers: RwLockUpgradableReadGuard::upgrade, RwLockUpgradableReadGuard::try_upgrade
    let l = RwLock::new(1);
    let u = l.upgradable_read();
    let mut w: RwLockWriteGuard<'_, i32> = RwLockUpgradableReadGuard::upgrade(u);
    *w = 2;
    assert!(l.is_locked_exclusive());
    drop(w);

    let u = l.upgradable_read();
    let r = l.read();
    let u = RwLockUpgradableReadGuard::try_upgrade(u)
        .err()
        .expect("a reader is present");
    drop(r);
    let mut w = RwLockUpgradableReadGuard::try_upgrade(u)
        .ok()
        .expect("no reader left");
    *w = 3;
    drop(w);
    assert_eq!(*l.read(), 3);
}

#[test]
fn timed_upgrades_wait_for_readers() {
    // covers: RwLockUpgradableReadGuard::try_upgrade_for, RwLockUpgradableReadGuard::try_upgrade_until
    let l = RwLock::new(1);
    let u = l.upgradable_read();
    let u = while_held_elsewhere(
        || l.read(),
        || {
            let u = RwLockUpgradableReadGuard::try_upgrade_for(u, SHORT)
                .err()
                .expect("reader");
            RwLockUpgradableReadGuard::try_upgrade_until(u, soon())
                .err()
                .expect("reader")
        },
    );
    let w = RwLockUpgradableReadGuard::try_upgrade_for(u, LONG)
        .ok()
        .expect("readers left");
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    let w = RwLockUpgradableReadGuard::try_upgrade_until(u, later())
        .ok()
        .expect("no readers");
    assert!(l.is_locked_exclusive());
    drop(w);
}

#[test]
fn with_upgraded_forms() {
    // covers: RwLockUpgradableReadGuard::with_upgraded, RwLockUpgradableReadGuard::try_with_upgraded
    // covers: RwLockUpgradableReadGuard::try_with_upgraded_for
    // covers: RwLockUpgradableReadGuard::try_with_upgraded_until
    let l = RwLock::new(1);
    let mut u = l.upgradable_read();
    let old = u.with_upgraded(|v| std::mem::replace(v, 2));
    assert_eq!((old, *u), (1, 2));
    assert!(!l.is_locked_exclusive(), "back to an upgradable read");
    assert!(l.try_read().is_some());
    let refused = while_held_elsewhere(
        || l.read(),
        || {
            (
                u.try_with_upgraded(|v| *v = 99).is_none(),
                u.try_with_upgraded_for(SHORT, |v| *v = 99).is_none(),
                u.try_with_upgraded_until(soon(), |v| *v = 99).is_none(),
            )
        },
    );
    assert_eq!(refused, (true, true, true));
    assert_eq!(*u, 2);
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
    drop(u);
    assert!(!l.is_locked());
}

#[test]
fn downgrades() {
    // covers: RwLockUpgradableReadGuard::downgrade, RwLockWriteGuard::downgrade_to_upgradable
    let l = RwLock::new(1);
    let u = l.upgradable_read();
    let r: RwLockReadGuard<'_, i32> = RwLockUpgradableReadGuard::downgrade(u);
    assert!(
        l.try_upgradable_read().is_some(),
        "a plain read no longer blocks upgradable reads"
    );
    drop(r);
    let w = l.write();
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    assert!(!l.is_locked_exclusive());
    assert!(l.try_read().is_some());
    assert!(l.try_upgradable_read().is_none());
    drop(u);
    assert!(!l.is_locked());
}

#[test]
fn guard_methods() {
    // covers: RwLockUpgradableReadGuard::rwlock, RwLockUpgradableReadGuard::unlocked
    // covers: RwLockUpgradableReadGuard::unlocked_fair, RwLockUpgradableReadGuard::bump
    // covers: RwLockUpgradableReadGuard::unlock_fair
    // covers: RwLockUpgradableReadGuard: Debug, RwLockUpgradableReadGuard: Display
    let l = RwLock::new(6);
    let mut u = l.upgradable_read();
    assert!(ptr::eq(RwLockUpgradableReadGuard::rwlock(&u), &l));
    assert_eq!(format!("{:?} {}", u, u), "6 6");
    assert!(RwLockUpgradableReadGuard::unlocked(&mut u, || l
        .try_write()
        .is_some()));
    assert!(RwLockUpgradableReadGuard::unlocked_fair(&mut u, || l
        .try_upgradable_read()
        .is_some()));
    RwLockUpgradableReadGuard::bump(&mut u);
    assert!(
        l.try_upgradable_read().is_none(),
        "bump keeps the upgradable read"
    );
    RwLockUpgradableReadGuard::unlock_fair(u);
    assert!(!l.is_locked());
}
