//! `raw::RawRwLock`: reader/writer exclusion under stress, upgradable rules, writer
//! preference, downgrades, timed and fair operations, and `lock_api::RwLock` over it.
//!
//! Interleavings are set up with channels and by watching the parking lot (a writer waiting
//! for readers parks on the lock's address + 1, everybody else on the address), never by
//! sleeping.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::raw::{key_of, wait_parked, wait_until, Gate, HANG};
use instrumented_locks::raw::RawRwLock;
use lock_api::{
    RawRwLock as _, RawRwLockDowngrade as _, RawRwLockFair as _, RawRwLockRecursive as _,
    RawRwLockRecursiveTimed as _, RawRwLockTimed as _, RawRwLockUpgrade as _,
    RawRwLockUpgradeDowngrade as _, RawRwLockUpgradeFair as _, RawRwLockUpgradeTimed as _,
};

type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// The queue key (readers, upgradable readers, writers claiming the lock).
fn queue(l: &RawRwLock) -> usize {
    key_of(l)
}

/// The writer key (a writer that claimed the lock waits there for the readers).
fn writer(l: &RawRwLock) -> usize {
    key_of(l) + 1
}

/// Who is inside, counted by the threads themselves and checked on every entry.
#[derive(Default)]
struct Inside {
    readers: AtomicUsize,
    upgradable: AtomicUsize,
    writers: AtomicUsize,
}

impl Inside {
    fn enter_read(&self) {
        self.readers.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            self.writers.load(Ordering::SeqCst),
            0,
            "reader beside a writer"
        );
    }
    fn leave_read(&self) {
        self.readers.fetch_sub(1, Ordering::SeqCst);
    }
    fn enter_upgradable(&self) {
        assert_eq!(
            self.upgradable.fetch_add(1, Ordering::SeqCst),
            0,
            "two upgradables"
        );
        assert_eq!(
            self.writers.load(Ordering::SeqCst),
            0,
            "upgradable beside a writer"
        );
    }
    fn leave_upgradable(&self) {
        self.upgradable.fetch_sub(1, Ordering::SeqCst);
    }
    fn enter_write(&self) {
        assert_eq!(
            self.writers.fetch_add(1, Ordering::SeqCst),
            0,
            "two writers"
        );
        assert_eq!(
            self.readers.load(Ordering::SeqCst),
            0,
            "writer beside a reader"
        );
        assert_eq!(
            self.upgradable.load(Ordering::SeqCst),
            0,
            "writer beside an upgradable"
        );
    }
    fn leave_write(&self) {
        self.writers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn readers_writers_and_upgradables_exclude_each_other() {
    const THREADS: usize = 4;
    // Far fewer under Miri (see raw_mutex.rs).
    const ROUNDS: usize = if cfg!(miri) { 120 } else { 6_000 };
    let lock = RwLock::new(0u64);
    let inside = Inside::default();
    let writes = AtomicUsize::new(0);
    let start = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (lock, inside, writes, start) = (&lock, &inside, &writes, &start);
            s.spawn(move || {
                start.wait();
                let write = |g: &mut u64| {
                    let v = std::hint::black_box(*g);
                    *g = v + 1;
                    writes.fetch_add(1, Ordering::Relaxed);
                };
                for i in 0..ROUNDS {
                    match (t * 7 + i) % 12 {
                        0 | 1 => {
                            let mut g = lock.write();
                            inside.enter_write();
                            write(&mut g);
                            inside.leave_write();
                            if i % 2 == 0 {
                                lock_api::RwLockWriteGuard::unlock_fair(g);
                            }
                        }
                        2 | 3 => {
                            let g = lock.read();
                            inside.enter_read();
                            std::hint::black_box(*g);
                            inside.leave_read();
                        }
                        4 => {
                            let g = lock.read_recursive();
                            inside.enter_read();
                            std::hint::black_box(*g);
                            inside.leave_read();
                        }
                        5 => {
                            let g = lock.upgradable_read();
                            inside.enter_upgradable();
                            inside.leave_upgradable();
                            let mut g = lock_api::RwLockUpgradableReadGuard::upgrade(g);
                            inside.enter_write();
                            write(&mut g);
                            inside.leave_write();
                        }
                        6 => {
                            let g = lock.upgradable_read();
                            inside.enter_upgradable();
                            inside.leave_upgradable();
                            let g = lock_api::RwLockUpgradableReadGuard::downgrade(g);
                            inside.enter_read();
                            inside.leave_read();
                            drop(g);
                        }
                        7 => {
                            let mut g = lock.write();
                            inside.enter_write();
                            write(&mut g);
                            inside.leave_write();
                            let g = lock_api::RwLockWriteGuard::downgrade(g);
                            inside.enter_read();
                            inside.leave_read();
                            drop(g);
                        }
                        8 => {
                            let mut g = lock.write();
                            inside.enter_write();
                            write(&mut g);
                            inside.leave_write();
                            let g = lock_api::RwLockWriteGuard::downgrade_to_upgradable(g);
                            inside.enter_upgradable();
                            inside.leave_upgradable();
                            if i % 2 == 0 {
                                lock_api::RwLockUpgradableReadGuard::unlock_fair(g);
                            }
                        }
                        9 => {
                            if let Some(mut g) = lock.try_write_for(Duration::from_millis(1)) {
                                inside.enter_write();
                                write(&mut g);
                                inside.leave_write();
                            }
                        }
                        10 => {
                            if let Some(g) = lock.try_upgradable_read() {
                                inside.enter_upgradable();
                                inside.leave_upgradable();
                                match lock_api::RwLockUpgradableReadGuard::try_upgrade_for(
                                    g,
                                    Duration::from_micros(200),
                                ) {
                                    Ok(mut g) => {
                                        inside.enter_write();
                                        write(&mut g);
                                        inside.leave_write();
                                    }
                                    Err(g) => {
                                        inside.enter_upgradable();
                                        inside.leave_upgradable();
                                        drop(g);
                                    }
                                }
                            }
                        }
                        _ => {
                            if let Some(g) = lock.try_read_for(Duration::from_millis(1)) {
                                inside.enter_read();
                                inside.leave_read();
                                drop(g);
                            }
                        }
                    }
                }
            });
        }
    });
    assert_eq!(lock.into_inner(), writes.load(Ordering::Relaxed) as u64);
}

#[test]
fn at_most_one_upgradable_and_it_shares_with_readers_only() {
    let l = RawRwLock::INIT;
    l.lock_upgradable();
    thread::scope(|s| {
        s.spawn(|| {
            assert!(!l.try_lock_upgradable());
            assert!(!l.try_lock_upgradable_for(Duration::from_millis(5)));
            assert!(!l.try_lock_exclusive());
            assert!(!l.try_lock_exclusive_for(Duration::from_millis(5)));
            assert!(
                l.try_lock_shared(),
                "readers share with the upgradable holder"
            );
            // SAFETY: just locked.
            unsafe { l.unlock_shared() };
        });
    });
    assert!(l.is_locked() && !l.is_locked_exclusive());
    // SAFETY: locked above.
    unsafe { l.unlock_upgradable() };
    assert!(!l.is_locked());
    assert!(l.try_lock_upgradable());
    // SAFETY: just locked.
    unsafe { l.unlock_upgradable() };
}

#[test]
fn second_upgradable_waits_for_the_first() {
    let lock = RwLock::new(0);
    let first = lock.upgradable_read();
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| {
            let g = lock.upgradable_read();
            tx.send(*g).unwrap();
        });
        // SAFETY: reading the raw lock's address only.
        wait_parked(queue(unsafe { lock.raw() }), 1);
        assert!(
            rx.try_recv().is_err(),
            "the second upgradable got in beside the first"
        );
        let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(first);
        *w = 9;
        drop(w);
        assert_eq!(rx.recv_timeout(HANG).unwrap(), 9);
    });
}

#[test]
fn upgrade_waits_for_readers_and_blocks_new_ones() {
    let lock = RwLock::new(0);
    // SAFETY: reading the raw lock only (its address, `is_locked*`, try-locks we undo).
    let raw = unsafe { lock.raw() };
    let reader = lock.read();
    let (upgraded_tx, upgraded_rx) = mpsc::channel();
    let release = Gate::default();
    thread::scope(|s| {
        s.spawn(|| {
            let g = lock.upgradable_read();
            let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(g);
            *w = 1;
            upgraded_tx.send(()).unwrap();
            release.wait();
        });
        // The upgrader has swapped its upgradable read for `WRITER` and sleeps until our
        // read ends.
        wait_parked(writer(raw), 1);
        assert!(raw.is_locked_exclusive());
        assert!(upgraded_rx.try_recv().is_err());
        assert!(
            !raw.try_lock_shared(),
            "a new plain reader must wait for the upgrade"
        );
        assert!(!raw.try_lock_shared_for(Duration::from_millis(2)));
        assert!(
            raw.try_lock_shared_recursive(),
            "a recursive reader passes while readers are inside"
        );
        // SAFETY: just locked.
        unsafe { raw.unlock_shared() };
        drop(reader);
        upgraded_rx.recv_timeout(HANG).unwrap();
        assert!(
            !raw.try_lock_shared_recursive(),
            "no reader inside now: it waits"
        );
        release.open();
    });
    assert_eq!(*lock.read(), 1);
}

#[test]
fn waiting_writer_blocks_plain_readers_but_not_recursive_ones() {
    let l = RawRwLock::INIT;
    l.lock_shared();
    let log = std::sync::Mutex::new(Vec::new());
    thread::scope(|s| {
        s.spawn(|| {
            l.lock_exclusive();
            log.lock().unwrap().push("writer");
            // SAFETY: just locked.
            unsafe { l.unlock_exclusive() };
        });
        wait_parked(writer(&l), 1);
        assert!(!l.try_lock_shared());
        assert!(!l.try_lock_shared_until(Instant::now() + Duration::from_millis(2)));
        // Does not block: the lock is read-held.
        l.lock_shared_recursive();
        assert!(l.try_lock_shared_recursive_for(Duration::from_millis(2)));
        // SAFETY: the two recursive reads above.
        unsafe { l.unlock_shared() };
        // SAFETY: as above.
        unsafe { l.unlock_shared() };
        // A plain reader queues behind the writer.
        s.spawn(|| {
            l.lock_shared();
            log.lock().unwrap().push("reader");
            // SAFETY: just locked.
            unsafe { l.unlock_shared() };
        });
        wait_parked(queue(&l), 1);
        assert!(log.lock().unwrap().is_empty());
        // SAFETY: our first read.
        unsafe { l.unlock_shared() };
    });
    assert_eq!(*log.lock().unwrap(), ["writer", "reader"]);
    assert!(!l.is_locked());
}

#[test]
fn writer_blocked_by_an_upgradable_does_not_block_readers() {
    let l = RawRwLock::INIT;
    l.lock_upgradable();
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| {
            l.lock_exclusive();
            tx.send(()).unwrap();
            // SAFETY: just locked.
            unsafe { l.unlock_exclusive() };
        });
        wait_parked(queue(&l), 1);
        assert!(!l.is_locked_exclusive());
        assert!(l.try_lock_shared());
        // SAFETY: just locked.
        unsafe { l.unlock_shared() };
        // SAFETY: locked above.
        unsafe { l.unlock_upgradable() };
        rx.recv_timeout(HANG).unwrap();
    });
}

#[test]
fn downgrade_write_to_read_admits_queued_readers() {
    let lock = RwLock::new(0);
    // SAFETY: reading the raw lock only.
    let raw = unsafe { lock.raw() };
    let mut w = lock.write();
    *w = 3;
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| tx.send(*lock.read()).unwrap());
        wait_parked(queue(raw), 1);
        let r = lock_api::RwLockWriteGuard::downgrade(w);
        // The reader gets in while we still hold our read.
        assert_eq!(rx.recv_timeout(HANG).unwrap(), 3);
        assert!(raw.is_locked() && !raw.is_locked_exclusive());
        assert!(raw.try_lock_shared());
        // SAFETY: just locked.
        unsafe { raw.unlock_shared() };
        assert!(!raw.try_lock_exclusive());
        assert!(raw.try_lock_upgradable());
        // SAFETY: just locked.
        unsafe { raw.unlock_upgradable() };
        drop(r);
    });
    assert!(!raw.is_locked());
}

#[test]
fn downgrade_upgradable_to_read_admits_a_queued_upgradable() {
    let lock = RwLock::new(0);
    // SAFETY: reading the raw lock only.
    let raw = unsafe { lock.raw() };
    let u = lock.upgradable_read();
    let (tx, rx) = mpsc::channel();
    let release = Gate::default();
    thread::scope(|s| {
        s.spawn(|| {
            let g = lock.upgradable_read();
            tx.send(()).unwrap();
            release.wait();
            drop(g);
        });
        wait_parked(queue(raw), 1);
        let r = lock_api::RwLockUpgradableReadGuard::downgrade(u);
        rx.recv_timeout(HANG).unwrap();
        assert!(
            !raw.try_lock_upgradable(),
            "the other thread holds the upgradable read"
        );
        assert!(!raw.try_lock_exclusive());
        release.open();
        drop(r);
    });
    assert!(!raw.is_locked());
}

#[test]
fn downgrade_write_to_upgradable_admits_readers_not_writers() {
    let lock = RwLock::new(0);
    // SAFETY: reading the raw lock only.
    let raw = unsafe { lock.raw() };
    let mut w = lock.write();
    *w = 5;
    let (read_tx, read_rx) = mpsc::channel();
    let (write_tx, write_rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| read_tx.send(*lock.read()).unwrap());
        wait_parked(queue(raw), 1);
        s.spawn(|| {
            let mut g = lock.write();
            *g += 1;
            write_tx.send(()).unwrap();
        });
        wait_parked(queue(raw), 2);
        let u = lock_api::RwLockWriteGuard::downgrade_to_upgradable(w);
        assert_eq!(read_rx.recv_timeout(HANG).unwrap(), 5);
        assert!(!raw.try_lock_upgradable());
        assert!(
            write_rx.try_recv().is_err(),
            "a writer got in beside the upgradable"
        );
        // Upgrade again (the queued writer cannot claim the lock meanwhile).
        let mut w = lock_api::RwLockUpgradableReadGuard::upgrade(u);
        *w *= 10;
        drop(w);
        write_rx.recv_timeout(HANG).unwrap();
    });
    assert_eq!(*lock.read(), 51);
}

#[test]
fn timed_and_try_ops_on_a_held_and_a_free_lock() {
    let l = RawRwLock::INIT;
    let soon = || Instant::now() + Duration::from_millis(2);
    let short = Duration::from_millis(2);
    l.lock_exclusive();
    assert!(l.is_locked_exclusive());
    thread::scope(|s| {
        s.spawn(|| {
            assert!(!l.try_lock_shared());
            assert!(!l.try_lock_shared_for(short));
            assert!(!l.try_lock_shared_until(soon()));
            assert!(!l.try_lock_shared_recursive());
            assert!(!l.try_lock_shared_recursive_for(short));
            assert!(!l.try_lock_shared_recursive_until(soon()));
            assert!(!l.try_lock_exclusive());
            assert!(!l.try_lock_exclusive_for(short));
            assert!(!l.try_lock_exclusive_until(soon()));
            assert!(!l.try_lock_upgradable());
            assert!(!l.try_lock_upgradable_for(short));
            assert!(!l.try_lock_upgradable_until(soon()));
        });
    });
    // SAFETY: locked above.
    unsafe { l.unlock_exclusive() };
    assert!(!l.is_locked());
    // SAFETY (every unlock below): undoes the successful lock just before it.
    assert!(l.try_lock_shared_for(short));
    assert!(l.try_lock_shared_until(soon()));
    assert!(l.try_lock_shared_recursive_for(short));
    assert!(l.try_lock_shared_recursive_until(soon()));
    assert!(l.try_lock_upgradable_for(short));
    assert!(!l.try_lock_exclusive_for(short), "readers inside");
    // SAFETY: see above.
    unsafe {
        l.unlock_shared();
        l.unlock_shared();
        l.unlock_shared();
        l.unlock_shared();
        assert!(
            l.try_upgrade_for(short),
            "the only reader left is the upgradable one"
        );
        l.unlock_exclusive();
    }
    assert!(l.try_lock_exclusive_until(soon()));
    // SAFETY: see above.
    unsafe { l.unlock_exclusive() };
    assert!(l.try_lock_upgradable_until(soon()));
    // SAFETY: see above.
    unsafe {
        assert!(l.try_upgrade_until(Instant::now()));
        l.downgrade_to_upgradable();
        assert!(l.try_upgrade());
        l.downgrade();
        assert!(l.try_lock_shared());
        l.unlock_shared();
        l.unlock_shared();
    }
    assert!(!l.is_locked());
    assert!(
        l.try_lock_exclusive_for(Duration::MAX),
        "no deadline when unrepresentable"
    );
    // SAFETY: see above.
    unsafe { l.unlock_exclusive() };
}

#[test]
fn timed_out_upgrade_stays_upgradable_and_readmits_readers() {
    let l = RawRwLock::INIT;
    l.lock_upgradable();
    l.lock_shared();
    thread::scope(|s| {
        // The upgrade claims `WRITER`, waits for the reader, times out, gives `WRITER` back.
        // SAFETY: this thread holds the upgradable lock (taken on its behalf below).
        s.spawn(|| assert!(!unsafe { l.try_upgrade_for(Duration::from_millis(10)) }))
            .join()
            .unwrap();
    });
    assert!(!l.is_locked_exclusive());
    assert!(!l.try_lock_upgradable(), "still upgradable-held");
    assert!(l.try_lock_shared(), "readers enter again");
    // SAFETY: undo the try above, then our first read; the upgradable lock is then upgraded
    // and released.
    unsafe {
        l.unlock_shared();
        l.unlock_shared();
        assert!(l.try_upgrade());
        l.unlock_exclusive();
    }
    assert!(!l.is_locked());
}

#[test]
fn timed_out_writer_wakes_the_readers_queued_behind_it() {
    let l = RawRwLock::INIT;
    l.lock_shared();
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        let w = s.spawn(|| l.try_lock_exclusive_for(Duration::from_millis(30)));
        // The writer claims `WRITER` and waits for our read. A plain reader that arrives
        // meanwhile queues behind it; when the writer times out it must let that reader in,
        // although we still hold our read (otherwise this test hangs).
        s.spawn(|| {
            l.lock_shared();
            tx.send(()).unwrap();
            // SAFETY: just locked.
            unsafe { l.unlock_shared() };
        });
        assert!(!w.join().unwrap(), "the writer cannot get in while we read");
        rx.recv_timeout(HANG).expect("the queued reader got in");
        assert!(!l.is_locked_exclusive());
    });
    // SAFETY: our read.
    unsafe { l.unlock_shared() };
    assert!(!l.is_locked());
}

/// Hands the lock over on a fair unlock: the woken thread owns it before it even runs, so
/// the unlocker's immediate try-lock must fail.
#[test]
fn fair_unlocks_hand_over() {
    // Writer -> queued reader.
    let l = RawRwLock::INIT;
    l.lock_exclusive();
    let release = Gate::default();
    thread::scope(|s| {
        s.spawn(|| {
            l.lock_shared();
            release.wait();
            // SAFETY: just locked.
            unsafe { l.unlock_shared() };
        });
        wait_parked(queue(&l), 1);
        // SAFETY: locked above.
        unsafe { l.unlock_exclusive_fair() };
        assert!(l.is_locked(), "handed to the reader");
        assert!(!l.try_lock_exclusive());
        release.open();
    });
    assert!(!l.is_locked());

    // Upgradable -> queued writer.
    l.lock_upgradable();
    let release = Gate::default();
    thread::scope(|s| {
        s.spawn(|| {
            l.lock_exclusive();
            release.wait();
            // SAFETY: just locked.
            unsafe { l.unlock_exclusive() };
        });
        wait_parked(queue(&l), 1);
        // SAFETY: locked above.
        unsafe { l.unlock_upgradable_fair() };
        assert!(l.is_locked_exclusive(), "handed to the writer");
        assert!(!l.try_lock_shared());
        release.open();
    });
    assert!(!l.is_locked());
}

#[test]
fn fair_unlock_hands_over_to_the_queued_readers_and_the_writer_behind_them() {
    let lock = RwLock::new(());
    // SAFETY: reading the raw lock only.
    let raw = unsafe { lock.raw() };
    let w = lock.write();
    let readers_in = AtomicUsize::new(0);
    let release = Gate::default();
    thread::scope(|s| {
        for n in 0..3 {
            s.spawn(|| {
                let _g = lock.read();
                readers_in.fetch_add(1, Ordering::SeqCst);
                release.wait();
            });
            wait_parked(queue(raw), n + 1);
        }
        s.spawn(|| drop(lock.write()));
        wait_parked(queue(raw), 4);
        lock_api::RwLockWriteGuard::unlock_fair(w);
        // All three readers own the lock now, and the writer behind them was handed `WRITER`:
        // it waits for them on the writer key, and no new plain reader may enter.
        wait_until("three readers inside", || {
            readers_in.load(Ordering::SeqCst) == 3
        });
        wait_parked(writer(raw), 1);
        assert_eq!(common::raw::parked_on(queue(raw)), 0);
        assert!(raw.is_locked_exclusive());
        assert!(!raw.try_lock_shared());
        release.open();
    });
    assert!(!raw.is_locked());
}

#[test]
fn bumps_yield_to_waiters() {
    let lock = RwLock::new(Vec::new());
    // SAFETY: reading the raw lock only.
    let raw = unsafe { lock.raw() };
    let mut w = lock.write();
    w.push("writer");
    thread::scope(|s| {
        s.spawn(|| lock.write().push("other writer"));
        wait_parked(queue(raw), 1);
        lock_api::RwLockWriteGuard::bump(&mut w);
        w.push("writer again");
    });
    drop(w);

    let r = lock.read();
    let mut r = r;
    thread::scope(|s| {
        s.spawn(|| lock.write().push("writer after bump_shared"));
        wait_parked(writer(raw), 1);
        lock_api::RwLockReadGuard::bump(&mut r);
        assert_eq!(r.last(), Some(&"writer after bump_shared"));
    });
    drop(r);

    let mut u = lock.upgradable_read();
    thread::scope(|s| {
        s.spawn(|| lock.write().push("writer after bump_upgradable"));
        wait_parked(queue(raw), 1);
        lock_api::RwLockUpgradableReadGuard::bump(&mut u);
        assert_eq!(u.last(), Some(&"writer after bump_upgradable"));
    });
    drop(u);
    assert_eq!(lock.read().len(), 5);
}

static GLOBAL: RwLock<u32> = RwLock::new(1);

#[test]
fn const_static_and_send_sync() {
    *GLOBAL.write() += 1;
    assert_eq!(*GLOBAL.read(), 2);
    fn send_sync<T: Send + Sync>() {}
    send_sync::<RawRwLock>();
    send_sync::<RwLock<u8>>();
}

#[test]
fn many_waiters_of_every_kind_all_get_through() {
    const EACH: usize = 3;
    let lock = RwLock::new(0usize);
    // SAFETY: reading the raw lock only.
    let raw = unsafe { lock.raw() };
    let w = lock.write();
    thread::scope(|s| {
        for _ in 0..EACH {
            s.spawn(|| drop(lock.read()));
            s.spawn(|| *lock.write() += 1);
            s.spawn(|| {
                let u = lock.upgradable_read();
                *lock_api::RwLockUpgradableReadGuard::upgrade(u) += 1;
            });
        }
        wait_parked(queue(raw), 3 * EACH);
        drop(w);
    });
    assert_eq!(*lock.read(), 2 * EACH);
}
