//! `Mutex`, `MutexGuard`, `MappedMutexGuard` and `const_mutex`: every method, with the lock's
//! state checked after each step (by `is_locked`, `try_lock`, or a second thread).
//!
//! The `Arc` methods are in `arc_lock.rs`, serde in `serde.rs`, auto traits in `send_sync.rs`.

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::lock_api::{RawMutex as _, RawMutexFair as _};
use parking_lot::{const_mutex, MappedMutexGuard, Mutex, MutexGuard, RawMutex};
use std::ptr;

// covers: const_mutex, Mutex::new
static COUNTER: Mutex<u64> = Mutex::new(0);
static CONST_BUILT: Mutex<&str> = const_mutex("static");

/// A user type whose constructor is a `const fn`: it compiles only if `Mutex::new` is const.
struct Registry {
    names: Mutex<Vec<&'static str>>,
    generation: Mutex<u32>,
}

impl Registry {
    // covers: Mutex::new, const_mutex
    const fn new() -> Self {
        Registry {
            names: Mutex::new(Vec::new()),
            generation: const_mutex(1),
        }
    }
}

static REGISTRY: Registry = Registry::new();

#[test]
fn statics_and_const_fn_constructors() {
    // covers: Mutex::lock, MutexGuard: DerefMut, MutexGuard: Deref, MutexGuard: Drop
    *COUNTER.lock() += 2;
    *COUNTER.lock() += 3;
    assert_eq!(*COUNTER.lock(), 5);
    assert_eq!(*CONST_BUILT.lock(), "static");
    REGISTRY.names.lock().push("a");
    *REGISTRY.generation.lock() += 1;
    assert_eq!(*REGISTRY.names.lock(), ["a"]);
    assert_eq!(*REGISTRY.generation.lock(), 2);
    // A `const` item (not only a `static`) built by the const constructors: the way to fill
    // a static array of locks. Each use of the const is a fresh lock, as intended here.
    #[allow(clippy::declare_interior_mutable_const)]
    const FRESH: Registry = Registry::new();
    static SHARDS: [Registry; 3] = [FRESH; 3];
    SHARDS[1].names.lock().push("b");
    assert!(SHARDS[0].names.lock().is_empty() && SHARDS[2].names.lock().is_empty());
    assert_eq!(*SHARDS[1].names.lock(), ["b"]);
}

#[test]
fn const_new_and_from_raw() {
    // covers: Mutex::const_new, Mutex::from_raw, RawMutex::INIT, Mutex::into_inner
    static BUILT: Mutex<i32> =
        Mutex::const_new(<RawMutex as parking_lot::lock_api::RawMutex>::INIT, 7);
    assert_eq!(*BUILT.lock(), 7);
    let m = Mutex::from_raw(RawMutex::INIT, String::from("raw"));
    assert_eq!(m.into_inner(), "raw");
}

#[test]
fn lock_and_try_lock() {
    // covers: Mutex::lock, Mutex::try_lock, Mutex::is_locked
    let m = Mutex::new(1);
    assert!(!m.is_locked());
    let mut g = m.lock();
    *g += 1;
    assert!(m.is_locked());
    assert!(m.try_lock().is_none());
    drop(g);
    assert!(!m.is_locked());
    let g = m.try_lock().expect("free mutex");
    assert_eq!(*g, 2);
}

#[test]
fn contended_try_lock_fails_and_timed_waits_time_out() {
    // covers: Mutex::try_lock, Mutex::try_lock_for, Mutex::try_lock_until, Mutex: Sync
    let m = Mutex::new(0);
    while_held_elsewhere(
        || m.lock(),
        || {
            assert!(m.is_locked());
            assert!(m.try_lock().is_none());
            assert!(m.try_lock_for(SHORT).is_none());
            assert!(m.try_lock_until(soon()).is_none());
        },
    );
    // Free again: the timed forms succeed at once.
    // covers: Mutex::try_lock_for, Mutex::try_lock_until
    *m.try_lock_for(LONG).expect("free mutex") += 1;
    *m.try_lock_until(later()).expect("free mutex") += 1;
    assert_eq!(*m.lock(), 2);
}

#[test]
fn get_mut_and_into_inner() {
    // covers: Mutex::get_mut, Mutex::into_inner
    let mut m = Mutex::new(vec![1]);
    m.get_mut().push(2);
    assert_eq!(m.into_inner(), [1, 2]);
}

#[test]
fn default_from_and_debug() {
    // covers: Mutex: Default, Mutex: From, Mutex: Debug
    let d: Mutex<u8> = Mutex::default();
    assert_eq!(*d.lock(), 0);
    let f = Mutex::from(5u8);
    let i: Mutex<u8> = 6u8.into();
    assert_eq!(*f.lock() + *i.lock(), 11);
    assert_eq!(format!("{:?}", f), "Mutex { data: 5 }");
    let _g = f.lock();
    assert_eq!(format!("{:?}", f), "Mutex { data: <locked> }");
}

#[test]
fn guard_debug_and_display() {
    // covers: MutexGuard: Debug, MutexGuard: Display
    let m = Mutex::new(String::from("hi"));
    let g = m.lock();
    assert_eq!(format!("{:?}", g), "\"hi\"");
    assert_eq!(format!("{}", g), "hi");
    assert_eq!(g.to_string(), "hi");
}

#[test]
fn unsized_contents() {
    // covers: Mutex::lock, MutexGuard: DerefMut
    let m: &Mutex<[i32]> = &Mutex::new([1, 2, 3]);
    m.lock()[1] = 20;
    assert_eq!(&*m.lock(), &[1, 20, 3][..]);
}

#[test]
fn guard_mutex_leak_and_force_unlock() {
    // covers: MutexGuard::mutex, MutexGuard::leak, Mutex::force_unlock
    let m = Mutex::new(3);
    let g = m.lock();
    assert!(ptr::eq(MutexGuard::mutex(&g), &m));
    let leaked: &mut i32 = MutexGuard::leak(g);
    *leaked = 4;
    assert!(m.is_locked(), "leak keeps the mutex locked");
    // SAFETY: the mutex is locked by this thread (the guard was leaked) and no guard for it
    // exists; `leaked` is not used after this point.
    unsafe { m.force_unlock() };
    assert!(!m.is_locked());
    assert_eq!(*m.lock(), 4);
}

#[test]
fn force_unlock_fair_after_forget() {
    // covers: Mutex::force_unlock_fair
    let m = Mutex::new(());
    std::mem::forget(m.lock());
    assert!(m.is_locked());
    // SAFETY: locked by this thread through a guard that was forgotten; no guard exists.
    unsafe { m.force_unlock_fair() };
    assert!(!m.is_locked());
}

#[test]
fn make_guard_unchecked_raw_and_data_ptr() {
    // covers: Mutex::raw, Mutex::make_guard_unchecked, Mutex::data_ptr
    let m = Mutex::new(10);
    // SAFETY: the raw mutex is only locked here and handed to a guard below, which unlocks it.
    let raw: &RawMutex = unsafe { m.raw() };
    raw.lock();
    assert!(m.is_locked());
    // SAFETY: this thread holds the lock (taken just above) and no guard owns it yet.
    let g = unsafe { m.make_guard_unchecked() };
    assert_eq!(*g, 10);
    let p: *mut i32 = m.data_ptr();
    assert!(ptr::eq(p, &*g));
    drop(g);
    assert!(!m.is_locked());
    let g = m.lock();
    // SAFETY: this thread holds the lock through `g` and `g` is not used while `p` writes.
    unsafe { *p = 11 };
    assert_eq!(*g, 11);
}

#[test]
fn map_try_map_and_try_map_or_err() {
    // covers: MutexGuard::map, MutexGuard::try_map, MutexGuard::try_map_or_err
    // covers: MappedMutexGuard: Deref, MappedMutexGuard: DerefMut, MappedMutexGuard: Drop
    let m = Mutex::new((1, [2, 3]));
    let mut first: MappedMutexGuard<'_, i32> = MutexGuard::map(m.lock(), |v| &mut v.0);
    *first += 10;
    assert!(m.is_locked());
    drop(first);
    assert!(!m.is_locked());

    let ok = MutexGuard::try_map(m.lock(), |v| v.1.get_mut(1));
    *ok.ok().expect("index 1 exists") = 30;
    let back = MutexGuard::try_map(m.lock(), |v| v.1.get_mut(5));
    let back: MutexGuard<'_, _> = back.err().expect("index 5 does not exist");
    assert_eq!(*back, (11, [2, 30]));
    drop(back);

    let err = MutexGuard::try_map_or_err(m.lock(), |v| v.1.get_mut(9).ok_or("no 9"));
    let (guard, e) = err.err().expect("index 9 does not exist");
    assert_eq!(e, "no 9");
    assert!(m.is_locked());
    drop(guard);
    let mut ok = MutexGuard::try_map_or_err(m.lock(), |v| v.1.get_mut(0).ok_or("no 0"))
        .ok()
        .expect("index 0 exists");
    *ok = 20;
    drop(ok);
    assert_eq!(*m.lock(), (11, [20, 30]));
}

#[test]
fn mapped_guard_maps_again() {
    // covers: MappedMutexGuard::map, MappedMutexGuard::try_map, MappedMutexGuard::try_map_or_err
    // covers: MappedMutexGuard::unlock_fair, MappedMutexGuard: Debug, MappedMutexGuard: Display
    let m = Mutex::new(((1, 2), String::from("s")));
    let outer = MutexGuard::map(m.lock(), |v| &mut v.0);
    let mut inner = MappedMutexGuard::map(outer, |p| &mut p.1);
    *inner = 5;
    assert_eq!(format!("{:?}", inner), "5");
    assert_eq!(format!("{}", inner), "5");
    drop(inner);

    let outer = MutexGuard::map(m.lock(), |v| &mut v.0);
    let outer = MappedMutexGuard::try_map(outer, |_| None::<&mut u8>)
        .err()
        .expect("None");
    let mut second = MappedMutexGuard::try_map(outer, |p| Some(&mut p.0))
        .ok()
        .expect("Some");
    *second = 4;
    let (second, e) = MappedMutexGuard::try_map_or_err(second, |_| Err::<&mut u8, _>(7))
        .err()
        .expect("Err");
    assert_eq!((*second, e), (4, 7));
    let s = MappedMutexGuard::try_map_or_err(second, |v| Ok::<_, ()>(v))
        .ok()
        .expect("Ok");
    MappedMutexGuard::unlock_fair(s);
    assert!(!m.is_locked());
    assert_eq!(m.lock().0, (4, 5));
}

#[test]
fn unlocked_releases_for_the_closure() {
    // covers: MutexGuard::unlocked, MutexGuard::unlocked_fair
    let m = Mutex::new(0);
    let mut g = m.lock();
    *g = 1;
    let seen = MutexGuard::unlocked(&mut g, || {
        let mut other = m.try_lock().expect("unlocked while the closure runs");
        *other += 1;
        *other
    });
    assert_eq!(seen, 2);
    assert!(m.is_locked(), "relocked after the closure");
    let seen = MutexGuard::unlocked_fair(&mut g, || *m.try_lock().expect("unlocked") + 1);
    assert_eq!(seen, 3);
    assert_eq!(*g, 2);
    assert!(m.try_lock().is_none());
}

#[test]
fn unlock_fair_and_bump() {
    // covers: MutexGuard::unlock_fair, MutexGuard::bump
    let m = Mutex::new(0);
    let mut g = m.lock();
    MutexGuard::bump(&mut g);
    assert!(m.is_locked(), "bump gives the lock back to this guard");
    *g += 1;
    MutexGuard::unlock_fair(g);
    assert!(!m.is_locked());
    assert_eq!(*m.lock(), 1);
}

#[test]
fn lock_excludes_other_threads() {
    // covers: Mutex::lock, Mutex: Sync
    const THREADS: usize = 4;
    const ROUNDS: usize = 500;
    let m = Mutex::new(0usize);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..ROUNDS {
                    let mut g = m.lock();
                    let before = *g;
                    *g = before + 1;
                }
            });
        }
    });
    assert_eq!(m.into_inner(), THREADS * ROUNDS);
}

#[test]
fn raw_mutex_used_directly() {
    // covers: RawMutex::lock, RawMutex::unlock, RawMutex::unlock_fair
    let m = Mutex::new(());
    // SAFETY: the raw mutex is locked and unlocked here in balanced pairs while no guard exists.
    let raw = unsafe { m.raw() };
    raw.lock();
    assert!(m.try_lock().is_none());
    // SAFETY: this thread locked it just above.
    unsafe { raw.unlock() };
    raw.lock();
    // SAFETY: this thread locked it just above.
    unsafe { raw.unlock_fair() };
    assert!(!m.is_locked());
}
