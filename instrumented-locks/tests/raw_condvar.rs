//! `raw::Condvar` with `lock_api::Mutex<raw::RawMutex, T>`: producer/consumer with exact
//! counts, notify_all/notify_one wake counts (both with the mutex held, when waiters are
//! requeued onto it, and without), `wait_while*`, timeouts, two mutexes on one condvar, and
//! `wait_raw`.

mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::raw::{key_of, wait_parked, wait_until, HANG};
use instrumented_locks::raw::{Condvar, RawMutex};
use lock_api::RawMutex as _;

type Mutex<T> = lock_api::Mutex<RawMutex, T>;

#[test]
fn producers_and_consumers_exchange_every_item_once() {
    const PRODUCERS: usize = 3;
    const CONSUMERS: usize = 3;
    // Far fewer under Miri, which runs the same interleavings checks much more slowly.
    const ITEMS: u64 = if cfg!(miri) { 30 } else { 3_000 };
    struct Queue {
        items: VecDeque<u64>,
        producers_left: usize,
    }
    let q = Mutex::new(Queue {
        items: VecDeque::new(),
        producers_left: PRODUCERS,
    });
    let not_empty = Condvar::new();
    let not_full = Condvar::new();
    let consumed = AtomicUsize::new(0);
    let sum = AtomicUsize::new(0);
    thread::scope(|s| {
        for p in 0..PRODUCERS as u64 {
            let (q, not_empty, not_full) = (&q, &not_empty, &not_full);
            s.spawn(move || {
                for i in 0..ITEMS {
                    let mut g = q.lock();
                    // A bounded queue, so producers wait too.
                    not_full.wait_while(&mut g, |q| q.items.len() >= 8);
                    g.items.push_back(p * ITEMS + i);
                    drop(g);
                    not_empty.notify_one();
                }
                q.lock().producers_left -= 1;
                not_empty.notify_all();
            });
        }
        for _ in 0..CONSUMERS {
            let (q, not_empty, not_full, consumed, sum) =
                (&q, &not_empty, &not_full, &consumed, &sum);
            s.spawn(move || loop {
                let mut g = q.lock();
                not_empty.wait_while(&mut g, |q| q.items.is_empty() && q.producers_left > 0);
                match g.items.pop_front() {
                    Some(v) => {
                        drop(g);
                        not_full.notify_one();
                        consumed.fetch_add(1, Ordering::Relaxed);
                        sum.fetch_add(v as usize, Ordering::Relaxed);
                    }
                    None => break,
                }
            });
        }
    });
    let n = PRODUCERS as u64 * ITEMS;
    assert_eq!(consumed.load(Ordering::Relaxed) as u64, n);
    assert_eq!(sum.load(Ordering::Relaxed) as u64, n * (n - 1) / 2);
}

/// `N` threads wait for a flag; the test notifies all of them, with the mutex held (they are
/// requeued onto it) or not (one is woken, the rest requeued).
fn notify_all_wakes_all(notify_with_mutex_held: bool) {
    const N: usize = 6;
    let state = Mutex::new((0usize, false)); // (waiting, go)
    let cv = Condvar::new();
    let woken = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..N {
            s.spawn(|| {
                let mut g = state.lock();
                g.0 += 1;
                while !g.1 {
                    cv.wait(&mut g);
                }
                woken.fetch_add(1, Ordering::SeqCst);
            });
        }
        // Under the mutex, `waiting == N` means all N are queued on the condvar: each
        // released the mutex only once queued.
        wait_until("all waiters queued", || state.lock().0 == N);
        let mut g = state.lock();
        g.1 = true;
        let n = if notify_with_mutex_held {
            cv.notify_all()
        } else {
            drop(g);
            cv.notify_all()
        };
        assert_eq!(n, N);
        assert_eq!(cv.notify_all(), 0, "nobody waits any more");
    });
    assert_eq!(woken.load(Ordering::SeqCst), N);
}

#[test]
fn notify_all_with_the_mutex_held_wakes_all() {
    notify_all_wakes_all(true);
}

#[test]
fn notify_all_with_the_mutex_free_wakes_all() {
    notify_all_wakes_all(false);
}

#[test]
fn notify_one_wakes_one_per_call() {
    const N: usize = 5;
    let state = Mutex::new((0usize, 0usize)); // (waiting, permits)
    let cv = Condvar::new();
    let done = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..N {
            s.spawn(|| {
                let mut g = state.lock();
                g.0 += 1;
                while g.1 == 0 {
                    cv.wait(&mut g);
                }
                g.1 -= 1;
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        wait_until("all waiters queued", || state.lock().0 == N);
        for i in 0..N {
            let mut g = state.lock();
            g.1 += 1;
            // Alternate: notify with the mutex held (requeue) and after releasing it.
            let woke = if i % 2 == 0 {
                let woke = cv.notify_one();
                drop(g);
                woke
            } else {
                drop(g);
                cv.notify_one()
            };
            assert!(woke, "a waiter was queued for notification {i}");
            wait_until("the permit was taken", || state.lock().1 == 0);
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), N);
    assert!(!cv.notify_one());
}

#[test]
fn waits_time_out_when_nobody_notifies() {
    let m = Mutex::new(7);
    let cv = Condvar::new();
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(5)).timed_out());
    assert!(cv
        .wait_until(&mut g, Instant::now() + Duration::from_millis(5))
        .timed_out());
    assert!(cv.wait_until(&mut g, Instant::now()).timed_out());
    assert!(cv
        .wait_while_for(&mut g, |_| true, Duration::from_millis(5))
        .timed_out());
    assert!(cv
        .wait_while_until(&mut g, |_| true, Instant::now() + Duration::from_millis(5))
        .timed_out());
    assert!(!cv
        .wait_while_for(&mut g, |v| *v != 7, Duration::from_millis(5))
        .timed_out());
    // The guard still holds the mutex after every wait.
    // SAFETY: reading the raw lock only.
    assert!(unsafe { m.raw() }.is_locked());
    *g += 1;
    drop(g);
    assert_eq!(*m.lock(), 8);
    assert!(!cv.notify_one(), "timed-out waiters left the queue");
}

#[test]
fn wait_while_returns_once_the_condition_fails() {
    let m = Mutex::new(0u32);
    let cv = Condvar::new();
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..10 {
                *m.lock() += 1;
                cv.notify_all();
            }
        });
        let mut g = m.lock();
        cv.wait_while(&mut g, |v| *v < 10);
        assert_eq!(*g, 10);
    });
}

#[test]
fn timed_wait_notified_under_the_mutex_reports_no_timeout() {
    // The waiter is requeued onto the held mutex by the notification, and its deadline
    // passes while it waits there: it was notified, so it is not timed out. (On a slow
    // machine the deadline may pass before the notification; then `notify_one` finds nobody
    // and the waiter must report the timeout. Either way the two answers must agree.)
    let m = Mutex::new(false);
    let cv = Condvar::new();
    let deadline = Instant::now() + Duration::from_millis(20);
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut g = m.lock();
            cv.wait_while_until(&mut g, |notified| !*notified, deadline)
                .timed_out()
        });
        wait_until("the waiter queued or gone", || {
            common::raw::parked_on(key_of(&cv)) == 1 || waiter.is_finished()
        });
        let mut g = m.lock();
        *g = true;
        let woke = cv.notify_one();
        // Keep the mutex past the deadline, so the waiter's timer fires on the mutex's queue.
        wait_until("the deadline", || Instant::now() > deadline);
        drop(g);
        assert_eq!(waiter.join().unwrap(), !woke);
    });
    assert_eq!(cv.notify_all(), 0);
}

#[test]
fn one_condvar_with_two_mutexes_at_once_is_defined() {
    let a = Mutex::new(0usize); // waiting on a, then go
    let b = Mutex::new(0usize);
    let cv = Condvar::new();
    let woken = AtomicUsize::new(0);
    thread::scope(|s| {
        for m in [&a, &b, &a, &b] {
            let (cv, woken) = (&cv, &woken);
            s.spawn(move || {
                let mut g = m.lock();
                *g += 1;
                while *g < 100 {
                    cv.wait(&mut g);
                }
                woken.fetch_add(1, Ordering::SeqCst);
            });
        }
        wait_until("all four waiting", || *a.lock() == 2 && *b.lock() == 2);
        let (mut ga, mut gb) = (a.lock(), b.lock());
        *ga = 100;
        *gb = 100;
        drop((ga, gb));
        // Wake them one at a time first, then the rest at once.
        assert!(cv.notify_one());
        assert!(cv.notify_one());
        wait_until("two woken", || woken.load(Ordering::SeqCst) == 2);
        assert_eq!(cv.notify_all(), 2);
    });
    assert_eq!(woken.load(Ordering::SeqCst), 4);
    // Back to one mutex: requeueing works again.
    let go = Mutex::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let mut g = go.lock();
            cv.wait_while(&mut g, |go| !*go);
        });
        wait_parked(key_of(&cv), 1);
        let mut g = go.lock();
        *g = true;
        assert_eq!(cv.notify_all(), 1);
    });
}

#[test]
fn wait_raw_on_a_bare_raw_mutex() {
    let m = RawMutex::INIT;
    let cv = Condvar::new();
    let flag = AtomicUsize::new(0);
    m.lock();
    thread::scope(|s| {
        s.spawn(|| {
            m.lock();
            flag.store(1, Ordering::Relaxed);
            // SAFETY: just locked.
            unsafe { m.unlock() };
            while !cv.notify_one() {
                thread::yield_now();
            }
        });
        let start = Instant::now();
        while flag.load(Ordering::Relaxed) == 0 {
            assert!(start.elapsed() < HANG);
            // SAFETY: this thread holds `m`; it holds it again on return.
            let r = unsafe { cv.wait_raw(&m, None) };
            assert!(!r.timed_out());
            assert!(m.is_locked());
        }
    });
    // SAFETY: locked above, and held again after each wait.
    unsafe { m.unlock() };
    // SAFETY: as above.
    assert!(unsafe { cv.wait_raw(lock_first(&m), Some(Instant::now())) }.timed_out());
    // SAFETY: locked by `lock_first`, held again after the wait.
    unsafe { m.unlock() };
}

fn lock_first(m: &RawMutex) -> &RawMutex {
    m.lock();
    m
}

static GLOBAL_CV: Condvar = Condvar::new();

#[test]
fn const_debug_send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Condvar>();
    assert!(!GLOBAL_CV.notify_one());
    assert_eq!(format!("{:?}", Condvar::default()), "Condvar { .. }");
    let m = Mutex::new(());
    let mut g = m.lock();
    let r = GLOBAL_CV.wait_for(&mut g, Duration::from_millis(1));
    assert_eq!(format!("{r:?}"), "WaitTimeoutResult(true)");
}
