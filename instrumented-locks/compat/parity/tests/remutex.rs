//! `ReentrantMutex`, its guards, `const_reentrant_mutex`, `RawThreadId`, and lock_api's
//! `RawReentrantMutex` and `GetThreadId` as parking_lot's types instantiate them.
//!
//! A reentrant mutex is always free for the thread that holds it, so "is it released?" is
//! asked from a second thread (`free_elsewhere`).

// `.ok().expect(..)` / `.err().expect(..)` throughout: `expect_err` needs the `Ok` side to be
// `Debug`, which not every guard type is, so one form serves every guard.
#![allow(clippy::ok_expect, clippy::err_expect)]

mod common;

use common::{later, soon, while_held_elsewhere, LONG, SHORT};
use parking_lot::lock_api::{self, GetThreadId as _, RawMutex as _};
use parking_lot::{
    const_reentrant_mutex, MappedReentrantMutexGuard, RawMutex, RawThreadId, ReentrantMutex,
    ReentrantMutexGuard,
};
use std::cell::{Cell, RefCell};
use std::ptr;
use std::thread;

/// Whether another thread can take `m` now (it releases it at once).
fn free_elsewhere<T: Send>(m: &ReentrantMutex<T>) -> bool {
    thread::scope(|s| {
        s.spawn(|| m.try_lock().is_some())
            .join()
            .expect("probe thread")
    })
}

// covers: const_reentrant_mutex, ReentrantMutex::new
static LOG: ReentrantMutex<RefCell<Vec<u8>>> = const_reentrant_mutex(RefCell::new(Vec::new()));
static DEPTH: ReentrantMutex<Cell<u32>> = ReentrantMutex::new(Cell::new(0));

struct Logger {
    /// Built with `const_new` in the `const fn` too. A field rather than a local: the
    /// compat crate's locks have a destructor (their validator map), which a `const fn`
    /// cannot run.
    also: ReentrantMutex<()>,
    lines: ReentrantMutex<RefCell<u32>>,
}

impl Logger {
    // covers: const_reentrant_mutex, ReentrantMutex::const_new, RawMutex::INIT, RawThreadId::INIT
    const fn new() -> Self {
        Logger {
            also: ReentrantMutex::const_new(RawMutex::INIT, RawThreadId::INIT, ()),
            lines: const_reentrant_mutex(RefCell::new(0)),
        }
    }
}

static LOGGER: Logger = Logger::new();

#[test]
fn statics_and_reentrancy() {
    // covers: ReentrantMutex::lock, ReentrantMutexGuard: Deref, ReentrantMutexGuard: Drop
    let outer = LOG.lock();
    outer.borrow_mut().push(1);
    {
        let inner = LOG.lock();
        inner.borrow_mut().push(2);
    }
    assert_eq!(*outer.borrow(), [1, 2]);
    drop(outer);
    let a = DEPTH.lock();
    let b = DEPTH.lock();
    a.set(a.get() + 1);
    b.set(b.get() + 1);
    assert_eq!(DEPTH.lock().get(), 2);
    *LOGGER.lines.lock().borrow_mut() += 1;
    assert_eq!(*LOGGER.lines.lock().borrow(), 1);
    assert!(!LOGGER.also.is_locked());
}

#[test]
fn lock_counts_and_ownership() {
    // covers: ReentrantMutex::lock, ReentrantMutex::try_lock, ReentrantMutex::is_locked
    // covers: ReentrantMutex::is_owned_by_current_thread
    let m = ReentrantMutex::new(0);
    assert!(!m.is_locked() && !m.is_owned_by_current_thread());
    let g1 = m.lock();
    let g2 = m.try_lock().expect("reentrant for the owner");
    assert!(m.is_locked() && m.is_owned_by_current_thread());
    assert!(!free_elsewhere(&m));
    drop(g1);
    assert!(m.is_locked(), "one level is still held");
    assert!(!free_elsewhere(&m));
    drop(g2);
    assert!(!m.is_locked() && !m.is_owned_by_current_thread());
    assert!(free_elsewhere(&m));
}

#[test]
fn contended_and_timed() {
    // covers: ReentrantMutex::try_lock, ReentrantMutex::try_lock_for, ReentrantMutex::try_lock_until
    // covers: ReentrantMutex::is_owned_by_current_thread, ReentrantMutex: Sync
    let m = ReentrantMutex::new(1);
    while_held_elsewhere(
        || m.lock(),
        || {
            assert!(m.is_locked());
            assert!(!m.is_owned_by_current_thread());
            assert!(m.try_lock().is_none());
            assert!(m.try_lock_for(SHORT).is_none());
            assert!(m.try_lock_until(soon()).is_none());
        },
    );
    let g = m.try_lock_for(LONG).expect("free");
    let g2 = m.try_lock_until(later()).expect("reentrant");
    assert_eq!(*g + *g2, 2);
}

#[test]
fn construction_inner_value_and_traits() {
    // covers: ReentrantMutex::from_raw, ReentrantMutex::get_mut, ReentrantMutex::into_inner
    // covers: ReentrantMutex: Default, ReentrantMutex: From, ReentrantMutex: Debug
    let mut m = ReentrantMutex::from_raw(RawMutex::INIT, RawThreadId::INIT, String::from("a"));
    m.get_mut().push('b');
    assert_eq!(m.into_inner(), "ab");
    let d: ReentrantMutex<u8> = ReentrantMutex::default();
    let f = ReentrantMutex::from(2u8);
    let i: ReentrantMutex<u8> = 3u8.into();
    assert_eq!(*d.lock() + *f.lock() + *i.lock(), 5);
    assert_eq!(format!("{:?}", f), "ReentrantMutex { data: 2 }");
    // Locked by this thread: Debug still shows the data (the owner may lock again).
    let _g = f.lock();
    assert_eq!(format!("{:?}", f), "ReentrantMutex { data: 2 }");
    let shown = thread::scope(|s| s.spawn(|| format!("{:?}", f)).join().expect("debug thread"));
    assert_eq!(shown, "ReentrantMutex { data: <locked> }");
}

#[test]
fn raw_unchecked_guard_data_ptr_and_force_unlock() {
    // covers: ReentrantMutex::raw, ReentrantMutex::make_guard_unchecked, ReentrantMutex::data_ptr
    // covers: ReentrantMutex::force_unlock, ReentrantMutex::force_unlock_fair
    let m = ReentrantMutex::new(7);
    std::mem::forget(m.lock());
    // SAFETY: read-only use of the raw lock: it is only asked whether it is locked.
    assert!(unsafe { m.raw() }.is_locked());
    // SAFETY: this thread holds the lock through the guard forgotten above; that guard is
    // replaced by this one.
    let g = unsafe { m.make_guard_unchecked() };
    assert!(ptr::eq(m.data_ptr(), &*g));
    drop(g);
    assert!(!m.is_locked());
    std::mem::forget(m.lock());
    // SAFETY: this thread holds one level through a forgotten guard; no guard exists.
    unsafe { m.force_unlock() };
    assert!(!m.is_locked());
    std::mem::forget(m.lock());
    // SAFETY: as above.
    unsafe { m.force_unlock_fair() };
    assert!(free_elsewhere(&m));
}

#[test]
fn guard_methods() {
    // covers: ReentrantMutexGuard::remutex, ReentrantMutexGuard::unlocked
    // covers: ReentrantMutexGuard::unlocked_fair, ReentrantMutexGuard::bump
    // covers: ReentrantMutexGuard::unlock_fair, ReentrantMutexGuard: Debug, ReentrantMutexGuard: Display
    let m = ReentrantMutex::new(4);
    let mut g = m.lock();
    assert!(ptr::eq(ReentrantMutexGuard::remutex(&g), &m));
    assert_eq!(format!("{:?} {}", g, g), "4 4");
    assert!(ReentrantMutexGuard::unlocked(&mut g, || free_elsewhere(&m)));
    assert!(ReentrantMutexGuard::unlocked_fair(&mut g, || {
        free_elsewhere(&m)
    }));
    ReentrantMutexGuard::bump(&mut g);
    assert!(m.is_owned_by_current_thread());
    assert!(!free_elsewhere(&m));
    ReentrantMutexGuard::unlock_fair(g);
    assert!(!m.is_locked());
}

#[test]
fn guard_maps() {
    // covers: ReentrantMutexGuard::map, ReentrantMutexGuard::try_map, ReentrantMutexGuard::try_map_or_err
    // covers: MappedReentrantMutexGuard::map, MappedReentrantMutexGuard::try_map
    // covers: MappedReentrantMutexGuard::try_map_or_err, MappedReentrantMutexGuard::unlock_fair
    // covers: MappedReentrantMutexGuard: Deref, MappedReentrantMutexGuard: Drop
    // covers: MappedReentrantMutexGuard: Debug, MappedReentrantMutexGuard: Display
    let m = ReentrantMutex::new((1, (2, 3)));
    let a: MappedReentrantMutexGuard<'_, i32> = ReentrantMutexGuard::map(m.lock(), |v| &v.0);
    assert_eq!(format!("{:?} {}", a, a), "1 1");
    assert!(!free_elsewhere(&m));
    drop(a);
    assert!(!m.is_locked());

    let g = ReentrantMutexGuard::try_map(m.lock(), |_| None::<&u8>)
        .err()
        .expect("None");
    let pair = ReentrantMutexGuard::try_map(g, |v| Some(&v.1))
        .ok()
        .expect("Some");
    let pair = MappedReentrantMutexGuard::try_map(pair, |_| None::<&u8>)
        .err()
        .expect("None");
    let second = MappedReentrantMutexGuard::map(pair, |p| &p.1);
    assert_eq!(*second, 3);
    drop(second);

    let (g, e) = ReentrantMutexGuard::try_map_or_err(m.lock(), |_| Err::<&u8, _>("e"))
        .err()
        .expect("Err");
    assert_eq!(e, "e");
    let pair = ReentrantMutexGuard::try_map_or_err(g, |v| Ok::<_, ()>(&v.1))
        .ok()
        .expect("Ok");
    let (pair, e) = MappedReentrantMutexGuard::try_map_or_err(pair, |_| Err::<&u8, _>(5))
        .err()
        .expect("Err");
    assert_eq!(e, 5);
    let first = MappedReentrantMutexGuard::try_map_or_err(pair, |p| Ok::<_, ()>(&p.0))
        .ok()
        .expect("Ok");
    assert_eq!(*first, 2);
    MappedReentrantMutexGuard::unlock_fair(first);
    assert!(!m.is_locked());
}

#[test]
fn raw_thread_id_is_per_thread() {
    // covers: RawThreadId, RawThreadId::nonzero_thread_id, RawThreadId::INIT, lock_api::GetThreadId
    let here = RawThreadId.nonzero_thread_id();
    assert_eq!(here, RawThreadId::INIT.nonzero_thread_id());
    let there = thread::spawn(|| RawThreadId.nonzero_thread_id().get())
        .join()
        .expect("thread");
    assert_ne!(here.get(), there);
    fn id_of<G: lock_api::GetThreadId>(g: &G) -> usize {
        g.nonzero_thread_id().get()
    }
    assert_eq!(id_of(&RawThreadId), here.get());
}

#[test]
fn raw_reentrant_mutex_with_parking_lot_parts() {
    // covers: lock_api::RawReentrantMutex, lock_api::RawReentrantMutex::INIT
    // covers: lock_api::RawReentrantMutex::lock, lock_api::RawReentrantMutex::try_lock
    // covers: lock_api::RawReentrantMutex::is_locked, lock_api::RawReentrantMutex::is_owned_by_current_thread
    // covers: lock_api::RawReentrantMutex::unlock, lock_api::RawReentrantMutex::unlock_fair
    // covers: lock_api::RawReentrantMutex::bump, lock_api::RawReentrantMutex::try_lock_for
    // covers: lock_api::RawReentrantMutex::try_lock_until
    // covers: lock_api::RawReentrantMutex: Send, lock_api::RawReentrantMutex: Sync
    type Raw = lock_api::RawReentrantMutex<RawMutex, RawThreadId>;
    static_assertions::assert_impl_all!(Raw: Send, Sync);
    let raw: Raw = lock_api::RawReentrantMutex::INIT;
    assert!(!raw.is_locked());
    raw.lock();
    assert!(raw.try_lock(), "reentrant for the owner");
    assert!(raw.try_lock_for(LONG));
    assert!(raw.try_lock_until(later()));
    assert!(raw.is_locked() && raw.is_owned_by_current_thread());
    let elsewhere = thread::scope(|s| {
        s.spawn(|| {
            (
                raw.is_owned_by_current_thread(),
                raw.try_lock(),
                raw.try_lock_for(SHORT),
            )
        })
        .join()
        .expect("probe thread")
    });
    assert_eq!(elsewhere, (false, false, false));
    // SAFETY: each unlock below matches one of the four acquisitions above, on this thread.
    unsafe {
        raw.unlock();
        raw.unlock_fair();
        raw.unlock();
        raw.bump();
        assert!(
            raw.is_owned_by_current_thread(),
            "bump keeps the last level"
        );
        raw.unlock();
    }
    assert!(!raw.is_locked());
    let until_elsewhere = thread::scope(|s| {
        s.spawn(|| {
            let got = raw.try_lock_until(soon());
            if got {
                // SAFETY: acquired on this thread just above.
                unsafe { raw.unlock() };
            }
            got
        })
        .join()
        .expect("probe thread")
    });
    assert!(until_elsewhere, "free again for other threads");
}
