//! `RwLock`, `RwLockReadGuard`, `RwLockWriteGuard`, the mapped guards and `const_rwlock`.
//!
//! Upgradable reads are in `rwlock_upgradable.rs`, the `Arc` methods in `arc_lock.rs`.

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::lock_api::{RawRwLock as _, RawRwLockUpgrade as _};
use parking_lot::{
    const_rwlock, MappedRwLockReadGuard, MappedRwLockWriteGuard, RawRwLock, RwLock,
    RwLockReadGuard, RwLockWriteGuard,
};
use std::ptr;

// covers: const_rwlock, RwLock::new
static CONFIG: RwLock<(u32, &str)> = RwLock::new((1, "one"));
static FLAGS: RwLock<u8> = const_rwlock(0);

struct Settings {
    /// Built with `const_new` in the `const fn` too. A field rather than a local: the
    /// compat crate's locks have a destructor (their validator map), which a `const fn`
    /// cannot run.
    also: RwLock<()>,
    level: RwLock<u8>,
}

impl Settings {
    // covers: const_rwlock, RwLock::const_new, RawRwLock::INIT
    const fn new() -> Self {
        Settings {
            also: RwLock::const_new(RawRwLock::INIT, ()),
            level: const_rwlock(3),
        }
    }
}

static SETTINGS: Settings = Settings::new();

#[test]
fn statics_and_const_constructors() {
    // covers: RwLock::read, RwLock::write, RwLockReadGuard: Deref, RwLockWriteGuard: DerefMut
    // covers: RwLockWriteGuard: Deref, RwLockReadGuard: Drop, RwLockWriteGuard: Drop
    assert_eq!(CONFIG.read().1, "one");
    CONFIG.write().0 = 2;
    *FLAGS.write() |= 4;
    *SETTINGS.level.write() += 1;
    assert!(!SETTINGS.also.is_locked());
    assert_eq!(
        (CONFIG.read().0, *FLAGS.read(), *SETTINGS.level.read()),
        (2, 4, 4)
    );
}

#[test]
fn readers_share_writers_exclude() {
    // covers: RwLock::read, RwLock::try_read, RwLock::write, RwLock::try_write
    // covers: RwLock::is_locked, RwLock::is_locked_exclusive
    let l = RwLock::new(1);
    assert!(!l.is_locked());
    let r1 = l.read();
    let r2 = l.try_read().expect("readers share");
    assert!(l.is_locked() && !l.is_locked_exclusive());
    assert!(l.try_write().is_none());
    assert_eq!(*r1 + *r2, 2);
    drop((r1, r2));
    let mut w = l.write();
    *w = 5;
    assert!(l.is_locked_exclusive());
    assert!(l.try_read().is_none() && l.try_write().is_none());
    drop(w);
    *l.try_write().expect("free") += 1;
    assert_eq!(*l.read(), 6);
}

#[test]
fn timed_reads_and_writes() {
    // covers: RwLock::try_read_for, RwLock::try_read_until, RwLock::try_write_for
    // covers: RwLock::try_write_until, RwLock: Sync
    let l = RwLock::new(0);
    while_held_elsewhere(
        || l.write(),
        || {
            assert!(l.try_read_for(SHORT).is_none());
            assert!(l.try_read_until(soon()).is_none());
            assert!(l.try_write_for(SHORT).is_none());
            assert!(l.try_write_until(soon()).is_none());
        },
    );
    while_held_elsewhere(
        || l.read(),
        || {
            assert!(l.try_write_for(SHORT).is_none());
            assert!(l.try_write_until(soon()).is_none());
            assert_eq!(*l.try_read_for(LONG).expect("readers share"), 0);
            assert_eq!(*l.try_read_until(later()).expect("readers share"), 0);
        },
    );
    *l.try_write_for(LONG).expect("free") += 1;
    *l.try_write_until(later()).expect("free") += 1;
    assert_eq!(*l.read(), 2);
}

#[test]
fn recursive_reads() {
    // covers: RwLock::read_recursive, RwLock::try_read_recursive
    // covers: RwLock::try_read_recursive_for, RwLock::try_read_recursive_until
    let l = RwLock::new(3);
    let a = l.read_recursive();
    let b = l.try_read_recursive().expect("shared");
    let c = l.try_read_recursive_for(LONG).expect("shared");
    let d = l.try_read_recursive_until(later()).expect("shared");
    assert_eq!(*a + *b + *c + *d, 12);
    assert!(l.try_write().is_none());
    drop((a, b, c, d));
    while_held_elsewhere(
        || l.write(),
        || {
            assert!(l.try_read_recursive().is_none());
            assert!(l.try_read_recursive_for(SHORT).is_none());
            assert!(l.try_read_recursive_until(soon()).is_none());
        },
    );
}

#[test]
fn construction_inner_value_and_traits() {
    // covers: RwLock::from_raw, RwLock::get_mut, RwLock::into_inner
    // covers: RwLock: Default, RwLock: From, RwLock: Debug
    let mut l = RwLock::from_raw(RawRwLock::INIT, vec![1]);
    l.get_mut().push(2);
    assert_eq!(l.into_inner(), [1, 2]);
    let d: RwLock<u8> = RwLock::default();
    let f = RwLock::from(2u8);
    let i: RwLock<u8> = 3u8.into();
    assert_eq!(*d.read() + *f.read() + *i.read(), 5);
    assert_eq!(format!("{:?}", f), "RwLock { data: 2 }");
    let r = f.read();
    assert_eq!(
        format!("{:?}", f),
        "RwLock { data: 2 }",
        "readable while read-locked"
    );
    drop(r);
    let _w = f.write();
    assert_eq!(format!("{:?}", f), "RwLock { data: <locked> }");
}

#[test]
fn unsized_contents() {
    // covers: RwLock::write, RwLock::read
    let l: &RwLock<[u8]> = &RwLock::new([1, 2]);
    l.write()[0] = 9;
    assert_eq!(&*l.read(), &[9, 2][..]);
}

#[test]
fn raw_unchecked_guards_data_ptr_and_force_unlock() {
    // covers: RwLock::raw, RwLock::make_read_guard_unchecked, RwLock::make_write_guard_unchecked
    // covers: RwLock::make_upgradable_guard_unchecked, RwLock::data_ptr
    // covers: RwLock::force_unlock_read, RwLock::force_unlock_read_fair
    // covers: RwLock::force_unlock_write, RwLock::force_unlock_write_fair
    let l = RwLock::new(1);
    // SAFETY: the raw shared lock taken here is handed to the guard made next, which releases it.
    unsafe { l.raw() }.lock_shared();
    // SAFETY: this thread holds a shared lock (just above) that no guard owns.
    let r = unsafe { l.make_read_guard_unchecked() };
    assert!(ptr::eq(l.data_ptr(), &*r));
    drop(r);
    assert!(!l.is_locked());
    // SAFETY: the raw exclusive lock is handed to the guard made next, which releases it.
    unsafe { l.raw() }.lock_exclusive();
    // SAFETY: this thread holds the exclusive lock (just above) that no guard owns.
    let mut w = unsafe { l.make_write_guard_unchecked() };
    *w = 2;
    drop(w);
    // SAFETY: the raw upgradable lock is handed to the guard made next, which releases it.
    unsafe { l.raw() }.lock_upgradable();
    // SAFETY: this thread holds the upgradable lock (just above) that no guard owns.
    let u = unsafe { l.make_upgradable_guard_unchecked() };
    assert_eq!(*u, 2);
    drop(u);
    assert!(!l.is_locked());

    std::mem::forget(l.read());
    // SAFETY: a shared lock of this thread whose guard was forgotten; no guard owns it.
    unsafe { l.force_unlock_read() };
    std::mem::forget(l.read());
    // SAFETY: as above.
    unsafe { l.force_unlock_read_fair() };
    assert!(!l.is_locked());
    std::mem::forget(l.write());
    // SAFETY: the exclusive lock of this thread whose guard was forgotten; no guard owns it.
    unsafe { l.force_unlock_write() };
    std::mem::forget(l.write());
    // SAFETY: as above.
    unsafe { l.force_unlock_write_fair() };
    assert!(!l.is_locked());
}

#[test]
fn read_guard_methods() {
    // covers: RwLockReadGuard::rwlock, RwLockReadGuard::unlocked, RwLockReadGuard::unlocked_fair
    // covers: RwLockReadGuard::bump, RwLockReadGuard::unlock_fair
    // covers: RwLockReadGuard: Debug, RwLockReadGuard: Display
    let l = RwLock::new(8);
    let mut r = l.read();
    assert!(ptr::eq(RwLockReadGuard::rwlock(&r), &l));
    assert_eq!(format!("{:?} {}", r, r), "8 8");
    let wrote = RwLockReadGuard::unlocked(&mut r, || {
        *l.try_write().expect("released") += 1;
        true
    });
    assert!(wrote);
    assert!(RwLockReadGuard::unlocked_fair(&mut r, || l
        .try_write()
        .is_some()));
    RwLockReadGuard::bump(&mut r);
    assert!(l.is_locked() && l.try_write().is_none());
    assert_eq!(*r, 9);
    RwLockReadGuard::unlock_fair(r);
    assert!(!l.is_locked());
}

#[test]
fn write_guard_methods() {
    // covers: RwLockWriteGuard::rwlock, RwLockWriteGuard::unlocked, RwLockWriteGuard::unlocked_fair
    // covers: RwLockWriteGuard::bump, RwLockWriteGuard::unlock_fair, RwLockWriteGuard::downgrade
    // covers: RwLockWriteGuard: Debug, RwLockWriteGuard: Display
    let l = RwLock::new(1);
    let mut w = l.write();
    assert!(ptr::eq(RwLockWriteGuard::rwlock(&w), &l));
    assert_eq!(format!("{:?} {}", w, w), "1 1");
    assert!(RwLockWriteGuard::unlocked(&mut w, || l
        .try_write()
        .is_some()));
    assert!(RwLockWriteGuard::unlocked_fair(&mut w, || l
        .try_read()
        .is_some()));
    RwLockWriteGuard::bump(&mut w);
    assert!(l.is_locked_exclusive());
    *w = 2;
    let r: RwLockReadGuard<'_, i32> = RwLockWriteGuard::downgrade(w);
    assert!(!l.is_locked_exclusive() && l.is_locked());
    assert_eq!(*l.try_read().expect("downgraded to shared"), 2);
    assert!(l.try_write().is_none());
    drop(r);
    RwLockWriteGuard::unlock_fair(l.write());
    assert!(!l.is_locked());
}

#[test]
fn read_guard_maps() {
    // covers: RwLockReadGuard::map, RwLockReadGuard::try_map, RwLockReadGuard::try_map_or_err
    // covers: MappedRwLockReadGuard::map, MappedRwLockReadGuard::try_map
    // covers: MappedRwLockReadGuard::try_map_or_else, MappedRwLockReadGuard::unlock_fair
    // covers: MappedRwLockReadGuard: Deref, MappedRwLockReadGuard: Drop
    // covers: MappedRwLockReadGuard: Debug, MappedRwLockReadGuard: Display
    let l = RwLock::new((1, (2, 3)));
    let a: MappedRwLockReadGuard<'_, i32> = RwLockReadGuard::map(l.read(), |v| &v.0);
    assert_eq!(format!("{:?} {}", a, a), "1 1");
    assert!(l.try_write().is_none() && l.try_read().is_some());
    drop(a);
    assert!(!l.is_locked());

    let r = RwLockReadGuard::try_map(l.read(), |_| None::<&u8>)
        .err()
        .expect("None");
    let pair = RwLockReadGuard::try_map(r, |v| Some(&v.1))
        .ok()
        .expect("Some");
    let pair = MappedRwLockReadGuard::try_map(pair, |_| None::<&u8>)
        .err()
        .expect("None");
    let third = MappedRwLockReadGuard::map(pair, |p| &p.1);
    assert_eq!(*third, 3);
    drop(third);

    let (r, e) = RwLockReadGuard::try_map_or_err(l.read(), |_| Err::<&u8, _>("e"))
        .err()
        .expect("Err");
    assert_eq!(e, "e");
    let pair = RwLockReadGuard::try_map_or_err(r, |v| Ok::<_, ()>(&v.1))
        .ok()
        .expect("Ok");
    // lock_api 0.4.14 names this one `try_map_or_else` (the other guards: `try_map_or_err`).
    let (pair, e) = MappedRwLockReadGuard::try_map_or_else(pair, |_| Err::<&u8, _>(4))
        .err()
        .expect("Err");
    assert_eq!(e, 4);
    let second = MappedRwLockReadGuard::try_map_or_else(pair, |p| Ok::<_, ()>(&p.0))
        .ok()
        .expect("Ok");
    assert_eq!(*second, 2);
    MappedRwLockReadGuard::unlock_fair(second);
    assert!(!l.is_locked());
}

#[test]
fn write_guard_maps() {
    // covers: RwLockWriteGuard::map, RwLockWriteGuard::try_map, RwLockWriteGuard::try_map_or_err
    // covers: MappedRwLockWriteGuard::map, MappedRwLockWriteGuard::try_map
    // covers: MappedRwLockWriteGuard::try_map_or_err, MappedRwLockWriteGuard::unlock_fair
    // covers: MappedRwLockWriteGuard: Deref, MappedRwLockWriteGuard: DerefMut
    // covers: MappedRwLockWriteGuard: Drop, MappedRwLockWriteGuard: Debug
    // covers: MappedRwLockWriteGuard: Display
    let l = RwLock::new((1, (2, 3)));
    let mut a: MappedRwLockWriteGuard<'_, i32> = RwLockWriteGuard::map(l.write(), |v| &mut v.0);
    *a = 10;
    assert_eq!(format!("{:?} {}", a, a), "10 10");
    assert!(l.try_read().is_none());
    drop(a);
    assert!(!l.is_locked());

    let w = RwLockWriteGuard::try_map(l.write(), |_| None::<&mut u8>)
        .err()
        .expect("None");
    let pair = RwLockWriteGuard::try_map(w, |v| Some(&mut v.1))
        .ok()
        .expect("Some");
    let pair = MappedRwLockWriteGuard::try_map(pair, |_| None::<&mut u8>)
        .err()
        .expect("None");
    let mut third = MappedRwLockWriteGuard::map(pair, |p| &mut p.1);
    *third = 30;
    drop(third);

    let (w, e) = RwLockWriteGuard::try_map_or_err(l.write(), |_| Err::<&mut u8, _>('e'))
        .err()
        .expect("Err");
    assert_eq!(e, 'e');
    let pair = RwLockWriteGuard::try_map_or_err(w, |v| Ok::<_, ()>(&mut v.1))
        .ok()
        .expect("Ok");
    let (pair, e) = MappedRwLockWriteGuard::try_map_or_err(pair, |_| Err::<&mut u8, _>(4))
        .err()
        .expect("Err");
    assert_eq!(e, 4);
    let mut second = MappedRwLockWriteGuard::try_map_or_err(pair, |p| Ok::<_, ()>(&mut p.0))
        .ok()
        .expect("Ok");
    *second = 20;
    MappedRwLockWriteGuard::unlock_fair(second);
    assert!(!l.is_locked());
    assert_eq!(*l.read(), (10, (20, 30)));
}

#[test]
fn writers_exclude_each_other_across_threads() {
    // covers: RwLock::write, RwLock::read, RwLock: Sync
    let l = RwLock::new((0u32, 0u32));
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..300 {
                    let mut w = l.write();
                    w.0 += 1;
                    w.1 += 1;
                }
            });
        }
        s.spawn(|| {
            for _ in 0..300 {
                let r = l.read();
                assert_eq!(r.0, r.1, "a reader never sees a half-done write");
            }
        });
    });
    assert_eq!(l.into_inner(), (900, 900));
}
