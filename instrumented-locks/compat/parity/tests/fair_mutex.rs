//! `FairMutex`, `FairMutexGuard`, `MappedFairMutexGuard` and `const_fair_mutex`.
//!
//! In parking_lot these are `lock_api::Mutex<RawFairMutex, T>` and its guards, so the methods
//! are those of `Mutex`; they are exercised here on the fair aliases one by one, because a
//! compat crate may implement the fair mutex as a type of its own.

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::lock_api::RawMutex as _;
use parking_lot::{
    const_fair_mutex, FairMutex, FairMutexGuard, MappedFairMutexGuard, RawFairMutex,
};
use std::ptr;

// covers: const_fair_mutex, FairMutex::new
static QUEUE: FairMutex<Vec<u32>> = FairMutex::new(Vec::new());
static TICKETS: FairMutex<u32> = const_fair_mutex(100);

struct Turnstile {
    /// Built with `const_new` in the `const fn` too. A field rather than a local: the
    /// compat crate's locks have a destructor (their validator map), which a `const fn`
    /// cannot run.
    also: FairMutex<()>,
    turns: FairMutex<u32>,
}

impl Turnstile {
    // covers: const_fair_mutex, FairMutex::const_new, RawFairMutex::INIT
    const fn new() -> Self {
        Turnstile {
            also: FairMutex::const_new(RawFairMutex::INIT, ()),
            turns: const_fair_mutex(0),
        }
    }
}

static TURNSTILE: Turnstile = Turnstile::new();

#[test]
fn statics_and_const_constructors() {
    // covers: FairMutex::lock, FairMutexGuard: Deref, FairMutexGuard: DerefMut, FairMutexGuard: Drop
    QUEUE.lock().push(1);
    *TICKETS.lock() -= 1;
    *TURNSTILE.turns.lock() += 1;
    assert_eq!(*QUEUE.lock(), [1]);
    assert_eq!(*TICKETS.lock(), 99);
    assert_eq!(*TURNSTILE.turns.lock(), 1);
    assert!(!TURNSTILE.also.is_locked());
}

#[test]
fn construction_and_inner_value() {
    // covers: FairMutex::from_raw, FairMutex::into_inner, FairMutex::get_mut
    // covers: FairMutex: Default, FairMutex: From, FairMutex: Debug
    let mut m = FairMutex::from_raw(RawFairMutex::INIT, vec![1]);
    m.get_mut().push(2);
    assert_eq!(m.into_inner(), [1, 2]);
    let d: FairMutex<i8> = FairMutex::default();
    let f: FairMutex<i8> = FairMutex::from(3);
    let i: FairMutex<i8> = 4.into();
    assert_eq!(*d.lock() + *f.lock() + *i.lock(), 7);
    assert_eq!(format!("{:?}", f), "Mutex { data: 3 }");
    let _g = f.lock();
    assert_eq!(format!("{:?}", f), "Mutex { data: <locked> }");
}

#[test]
fn lock_try_lock_and_timed() {
    // covers: FairMutex::lock, FairMutex::try_lock, FairMutex::is_locked
    // covers: FairMutex::try_lock_for, FairMutex::try_lock_until, FairMutex: Sync
    let m = FairMutex::new(0);
    assert!(!m.is_locked());
    while_held_elsewhere(
        || m.lock(),
        || {
            assert!(m.is_locked());
            assert!(m.try_lock().is_none());
            assert!(m.try_lock_for(SHORT).is_none());
            assert!(m.try_lock_until(soon()).is_none());
        },
    );
    *m.try_lock().expect("free") += 1;
    *m.try_lock_for(LONG).expect("free") += 1;
    *m.try_lock_until(later()).expect("free") += 1;
    assert_eq!(*m.lock(), 3);
}

#[test]
fn raw_unchecked_guard_data_ptr_and_force_unlock() {
    // covers: FairMutex::raw, FairMutex::make_guard_unchecked, FairMutex::data_ptr
    // covers: FairMutex::force_unlock, FairMutex::force_unlock_fair
    let m = FairMutex::new(1);
    // SAFETY: the raw lock is taken here and handed to the guard made below, which releases it.
    unsafe { m.raw() }.lock();
    // SAFETY: this thread holds the lock (just above) and no guard owns it.
    let g = unsafe { m.make_guard_unchecked() };
    assert!(ptr::eq(m.data_ptr(), &*g));
    std::mem::forget(g);
    assert!(m.is_locked());
    // SAFETY: locked by this thread through the forgotten guard; no guard exists.
    unsafe { m.force_unlock() };
    assert!(!m.is_locked());
    std::mem::forget(m.lock());
    // SAFETY: as above.
    unsafe { m.force_unlock_fair() };
    assert!(!m.is_locked());
}

#[test]
fn guard_methods() {
    // covers: FairMutexGuard::mutex, FairMutexGuard::leak, FairMutexGuard::bump
    // covers: FairMutexGuard::unlock_fair, FairMutexGuard::unlocked, FairMutexGuard::unlocked_fair
    // covers: FairMutexGuard: Debug, FairMutexGuard: Display
    let m = FairMutex::new(5);
    let mut g = m.lock();
    assert!(ptr::eq(FairMutexGuard::mutex(&g), &m));
    assert_eq!(
        (format!("{:?}", g), format!("{}", g)),
        ("5".to_string(), "5".to_string())
    );
    FairMutexGuard::bump(&mut g);
    assert!(m.is_locked());
    let inner = FairMutexGuard::unlocked(&mut g, || *m.try_lock().expect("released"));
    let inner_fair = FairMutexGuard::unlocked_fair(&mut g, || *m.try_lock().expect("released"));
    assert_eq!((inner, inner_fair), (5, 5));
    assert!(m.try_lock().is_none());
    FairMutexGuard::unlock_fair(g);
    assert!(!m.is_locked());
    let leaked = FairMutexGuard::leak(m.lock());
    *leaked = 6;
    assert!(m.is_locked());
    // SAFETY: the leaked guard's lock is held by this thread; `leaked` is not used afterwards.
    unsafe { m.force_unlock() };
    assert_eq!(*m.lock(), 6);
}

#[test]
fn guard_maps() {
    // covers: FairMutexGuard::map, FairMutexGuard::try_map, FairMutexGuard::try_map_or_err
    // covers: MappedFairMutexGuard::map, MappedFairMutexGuard::try_map
    // covers: MappedFairMutexGuard::try_map_or_err, MappedFairMutexGuard::unlock_fair
    // covers: MappedFairMutexGuard: Deref, MappedFairMutexGuard: DerefMut, MappedFairMutexGuard: Drop
    // covers: MappedFairMutexGuard: Debug, MappedFairMutexGuard: Display
    let m = FairMutex::new((1, (2, 3)));
    let mut a: MappedFairMutexGuard<'_, i32> = FairMutexGuard::map(m.lock(), |v| &mut v.0);
    *a = 10;
    assert_eq!(
        (format!("{:?}", a), format!("{}", a)),
        ("10".to_string(), "10".to_string())
    );
    drop(a);
    assert!(!m.is_locked());

    let g = FairMutexGuard::try_map(m.lock(), |_| None::<&mut i32>)
        .err()
        .expect("None");
    let pair = FairMutexGuard::try_map(g, |v| Some(&mut v.1))
        .ok()
        .expect("Some");
    let pair = MappedFairMutexGuard::try_map(pair, |_| None::<&mut i32>)
        .err()
        .expect("None");
    let mut second = MappedFairMutexGuard::map(pair, |p| &mut p.1);
    *second = 30;
    drop(second);

    let (g, e) = FairMutexGuard::try_map_or_err(m.lock(), |_| Err::<&mut i32, _>('x'))
        .err()
        .expect("Err");
    assert_eq!(e, 'x');
    let pair = FairMutexGuard::try_map_or_err(g, |v| Ok::<_, ()>(&mut v.1))
        .ok()
        .expect("Ok");
    let (pair, e) = MappedFairMutexGuard::try_map_or_err(pair, |_| Err::<&mut i32, _>(1))
        .err()
        .expect("Err");
    assert_eq!(e, 1);
    let mut first = MappedFairMutexGuard::try_map_or_err(pair, |p| Ok::<_, ()>(&mut p.0))
        .ok()
        .expect("Ok");
    *first = 20;
    MappedFairMutexGuard::unlock_fair(first);
    assert!(!m.is_locked());
    assert_eq!(*m.lock(), (10, (20, 30)));
}

#[test]
fn excludes_other_threads() {
    // covers: FairMutex::lock, FairMutex: Sync
    let m = FairMutex::new(0u32);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..500 {
                    *m.lock() += 1;
                }
            });
        }
    });
    assert_eq!(m.into_inner(), 2000);
}
