//! `raw::RawMutex` and `raw::RawFairMutex`: exclusion under stress, try/timed locks, fair
//! handoff, bump, and the `lock_api` wrappers over them.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::raw::{key_of, parked_on, wait_parked, wait_until, Gate, HANG};
use instrumented_locks::raw::{RawFairMutex, RawMutex, RawThreadId};
use lock_api::{RawMutex as _, RawMutexFair as _, RawMutexTimed as _};

const THREADS: usize = 4;
/// Far fewer under Miri, which checks the same code for data races and UB, slowly.
const ROUNDS: usize = if cfg!(miri) { 200 } else { 20_000 };

/// Counts with a non-atomic read-modify-write under the lock; the `inside` flag catches two
/// threads in the critical section at once. Each thread mixes the entry points.
fn exclusion<R: lock_api::RawMutexFair + lock_api::RawMutexTimed<Duration = Duration> + Sync>() {
    let m = lock_api::Mutex::<R, u64>::new(0);
    let inside = AtomicBool::new(false);
    let start = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (m, inside, start) = (&m, &inside, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..ROUNDS {
                    let mut g = match (t + i) % 4 {
                        0 | 1 => m.lock(),
                        2 => loop {
                            if let Some(g) = m.try_lock() {
                                break g;
                            }
                            thread::yield_now();
                        },
                        _ => m
                            .try_lock_for(HANG)
                            .expect("try_lock_for within the hang guard"),
                    };
                    assert!(!inside.swap(true, Ordering::Relaxed), "two threads inside");
                    let v = std::hint::black_box(*g);
                    *g = v + 1;
                    inside.store(false, Ordering::Relaxed);
                    match i % 5 {
                        0 => lock_api::MutexGuard::unlock_fair(g),
                        1 => lock_api::MutexGuard::bump(&mut g),
                        _ => drop(g),
                    }
                }
            });
        }
    });
    assert_eq!(m.into_inner(), (THREADS * ROUNDS) as u64);
}

#[test]
fn mutex_excludes() {
    exclusion::<RawMutex>();
}

#[test]
fn fair_mutex_excludes() {
    exclusion::<RawFairMutex>();
}

#[test]
fn try_and_timed_locks_fail_while_held_and_succeed_when_free() {
    let m = RawMutex::INIT;
    assert!(!m.is_locked());
    m.lock();
    assert!(m.is_locked());
    thread::scope(|s| {
        s.spawn(|| {
            assert!(!m.try_lock());
            assert!(!m.try_lock_for(Duration::from_millis(5)));
            assert!(!m.try_lock_until(Instant::now() + Duration::from_millis(5)));
            assert!(!m.try_lock_until(Instant::now() - Duration::from_millis(5)));
        })
        .join()
        .unwrap();
    });
    // SAFETY: locked above on this thread.
    unsafe { m.unlock() };
    assert!(!m.is_locked());
    thread::scope(|s| {
        s.spawn(|| {
            assert!(m.try_lock_for(Duration::from_millis(5)));
            // SAFETY: just locked.
            unsafe { m.unlock() };
            assert!(m.try_lock_until(Instant::now()));
            // SAFETY: just locked.
            unsafe { m.unlock() };
            assert!(
                m.try_lock_for(Duration::MAX),
                "an unrepresentable deadline waits forever"
            );
            // SAFETY: just locked.
            unsafe { m.unlock() };
            assert!(m.try_lock());
            // SAFETY: just locked.
            unsafe { m.unlock() };
        })
        .join()
        .unwrap();
    });
}

/// A waiter that times out while parked beside an untimed one (queued before it, or after
/// it) must not leave the mutex in a state where the holder's unlock forgets the untimed one.
fn timed_out_waiter_beside_untimed(timed_first: bool) {
    let m = RawMutex::INIT;
    let m = &m;
    m.lock();
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        let untimed = move || {
            m.lock();
            tx.send(()).unwrap();
            // SAFETY: just locked.
            unsafe { m.unlock() };
        };
        let timed = if timed_first {
            let timed = s.spawn(|| m.try_lock_for(Duration::from_millis(20)));
            // On a slow machine its deadline may pass before we look; that is a run where
            // the untimed waiter simply queues alone.
            wait_until("the timed waiter parked or gone", || {
                parked_on(key_of(m)) == 1 || timed.is_finished()
            });
            s.spawn(untimed);
            timed
        } else {
            s.spawn(untimed);
            wait_parked(key_of(m), 1);
            s.spawn(|| m.try_lock_for(Duration::from_millis(20)))
        };
        // We hold the mutex until the timed waiter is gone, so it can only time out.
        assert!(!timed.join().unwrap());
        wait_parked(key_of(m), 1);
        // SAFETY: locked above.
        unsafe { m.unlock() };
        rx.recv_timeout(HANG)
            .expect("the untimed waiter got the mutex");
    });
    assert!(m.try_lock());
}

#[test]
fn timed_out_waiter_queued_first_leaves_the_mutex_usable() {
    timed_out_waiter_beside_untimed(true);
}

#[test]
fn timed_out_waiter_queued_last_leaves_the_mutex_usable() {
    timed_out_waiter_beside_untimed(false);
}

/// `unlock` of `R` with one parked waiter: with a handoff the waiter owns the mutex before
/// it even runs, so the unlocker's immediate `try_lock` must fail.
fn hands_off(unlock: impl FnOnce(&RawMutex)) {
    let m = RawMutex::INIT;
    m.lock();
    let (got, got_rx) = mpsc::channel();
    let release = Gate::default();
    thread::scope(|s| {
        s.spawn(|| {
            m.lock();
            got.send(()).unwrap();
            release.wait();
            // SAFETY: locked above.
            unsafe { m.unlock() };
        });
        wait_parked(key_of(&m), 1);
        unlock(&m);
        assert!(m.is_locked(), "handed over, not released");
        assert!(!m.try_lock(), "the parked thread owns the mutex");
        got_rx.recv_timeout(HANG).unwrap();
        release.open();
    });
    assert!(m.try_lock());
}

#[test]
fn unlock_fair_hands_the_mutex_to_the_parked_thread() {
    // SAFETY: the test thread locked `m` in `hands_off`.
    hands_off(|m| unsafe { m.unlock_fair() });
}

#[test]
fn fair_mutex_unlock_hands_off() {
    let m = RawFairMutex::INIT;
    m.lock();
    let (got, got_rx) = mpsc::channel();
    let release = Gate::default();
    thread::scope(|s| {
        s.spawn(|| {
            m.lock();
            got.send(()).unwrap();
            release.wait();
            // SAFETY: locked above.
            unsafe { m.unlock() };
        });
        // `RawFairMutex` is a newtype over `RawMutex`: same address, same key.
        wait_parked(key_of(&m), 1);
        // SAFETY: locked above.
        unsafe { m.unlock() };
        assert!(!m.try_lock(), "the parked thread owns the mutex");
        got_rx.recv_timeout(HANG).unwrap();
        release.open();
    });
}

#[test]
fn bump_lets_the_parked_thread_run_first() {
    let m = lock_api::Mutex::<RawMutex, Vec<&str>>::new(Vec::new());
    let mut g = m.lock();
    g.push("holder");
    thread::scope(|s| {
        s.spawn(|| m.lock().push("waiter"));
        // SAFETY: reading the raw lock's address only.
        wait_parked(key_of(unsafe { m.raw() }), 1);
        lock_api::MutexGuard::bump(&mut g);
        g.push("holder again");
    });
    drop(g);
    assert_eq!(*m.lock(), ["holder", "waiter", "holder again"]);
}

#[test]
fn bump_without_waiters_keeps_the_lock() {
    let m = RawMutex::INIT;
    m.lock();
    // SAFETY: locked above.
    unsafe { m.bump() };
    assert!(m.is_locked());
    // SAFETY: still ours.
    unsafe { m.unlock() };
    assert!(!m.is_locked());
}

#[test]
fn many_waiters_all_get_through() {
    // Waiters park behind a held mutex, then a chain of unlocks wakes every one.
    const N: usize = 8;
    let m = lock_api::Mutex::<RawMutex, usize>::new(0);
    let g = m.lock();
    thread::scope(|s| {
        for _ in 0..N {
            s.spawn(|| *m.lock() += 1);
        }
        // SAFETY: reading the raw lock's address only.
        wait_parked(key_of(unsafe { m.raw() }), N);
        drop(g);
    });
    assert_eq!(*m.lock(), N);
}

static GLOBAL: lock_api::Mutex<RawMutex, u32> = lock_api::Mutex::new(7);

#[test]
fn const_static_and_wrappers() {
    *GLOBAL.lock() += 1;
    assert_eq!(*GLOBAL.lock(), 8);
    let fair = lock_api::Mutex::<RawFairMutex, u32>::new(1);
    *fair.lock() += 1;
    assert_eq!(
        fair.try_lock_for(Duration::from_millis(1)).map(|g| *g),
        Some(2)
    );
    assert!(!fair.is_locked());
}

#[test]
fn reentrant_mutex_reenters_on_one_thread_only() {
    let m = lock_api::ReentrantMutex::<RawMutex, RawThreadId, u32>::new(5);
    let a = m.lock();
    let b = m.lock();
    assert_eq!(*a + *b, 10);
    assert!(m.is_owned_by_current_thread());
    thread::scope(|s| {
        s.spawn(|| {
            assert!(m.try_lock().is_none());
            assert!(!m.is_owned_by_current_thread());
        });
    });
    drop(a);
    assert!(m.is_locked());
    drop(b);
    assert!(!m.is_locked());
    thread::scope(|s| {
        s.spawn(|| assert_eq!(*m.lock(), 5));
    });
}

#[test]
fn thread_ids_differ_between_live_threads() {
    use lock_api::GetThreadId as _;
    let here = RawThreadId::INIT.nonzero_thread_id();
    assert_eq!(here, RawThreadId::INIT.nonzero_thread_id());
    let ids = AtomicUsize::new(0);
    let both = Barrier::new(2);
    thread::scope(|s| {
        s.spawn(|| {
            ids.store(
                RawThreadId::INIT.nonzero_thread_id().get(),
                Ordering::Relaxed,
            );
            both.wait();
        });
        both.wait();
    });
    assert_ne!(ids.load(Ordering::Relaxed), here.get());
}

#[test]
fn send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<RawMutex>();
    send_sync::<RawFairMutex>();
    send_sync::<RawThreadId>();
    send_sync::<lock_api::Mutex<RawMutex, u8>>();
}

#[test]
fn arc_guards_work_over_the_raw_locks() {
    use std::sync::Arc;
    let m = Arc::new(lock_api::Mutex::<RawMutex, u32>::new(1));
    let g = m.lock_arc();
    let m2 = Arc::clone(&m);
    thread::spawn(move || assert!(m2.try_lock_arc().is_none()))
        .join()
        .unwrap();
    drop(g);
    *m.lock_arc() += 1;
    assert_eq!(*m.lock(), 2);

    let rw = Arc::new(lock_api::RwLock::<instrumented_locks::raw::RawRwLock, u32>::new(3));
    let r = rw.read_arc();
    let u = rw.upgradable_read_arc();
    assert!(rw.try_write_arc().is_none());
    drop(r);
    let mut w = lock_api::ArcRwLockUpgradableReadGuard::upgrade(u);
    *w += 1;
    drop(w);
    assert_eq!(*rw.read_arc(), 4);
}
