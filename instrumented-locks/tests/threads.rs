//! Other threads' held locks: the cross-thread checks (a key unregistered, a lock freed while
//! another thread holds a lock of it), the all-threads dump, and lock_stat. Interleavings are
//! made with channels and barriers; a wait for another thread to block polls the dump, with a
//! generous upper bound only as a hang guard.
#![cfg(feature = "validate")]

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};

use common::{assert_reports, dump_when, start};
use instrumented_locks::{Mutex, RwLock};
use lockdep::{AllLocks, KeyMisuse, Mode, Report};

fn thread_named<'a>(d: &'a AllLocks, name: &str) -> &'a lockdep::ThreadLocks {
    d.threads
        .iter()
        .find(|t| t.thread.name == name)
        .unwrap_or_else(|| panic!("no thread {name} in the dump:{d}"))
}

#[test]
fn a_key_unregistered_while_another_thread_holds_a_lock_of_it_is_reported() {
    let _h = start();
    let key = lockdep::DynamicKey::new("conn");
    let m = Arc::new(Mutex::with_dynamic_key(0u8, &key, "conn lock"));
    let (locked_tx, locked_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let holder = {
        let m = Arc::clone(&m);
        std::thread::Builder::new()
            .name("key-holder".into())
            .spawn(move || {
                let g = m.lock();
                locked_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                drop(g); // the holder's unlock, after the key is gone: clean
                assert_eq!(lockdep::held_count(), 0);
            })
            .unwrap()
    };
    locked_rx.recv().unwrap();
    drop(key);
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::UnregisterWhileHeld,
        ..
    });
    let Report::KeyMisuse {
        held_by, thread, ..
    } = &r[0]
    else {
        unreachable!()
    };
    assert_ne!(
        thread.name, "key-holder",
        "the unregistering thread is the reporter"
    );
    assert_eq!(held_by.len(), 1, "{r:#?}");
    assert_eq!(held_by[0].thread.name, "key-holder");
    assert_eq!(held_by[0].held.len(), 1);
    assert_eq!(held_by[0].held[0].name, Some("conn lock"));
    assert!(
        r[0].to_string().contains("1 lock held by key-holder/"),
        "{}",
        r[0]
    );
    go_tx.send(()).unwrap();
    holder.join().unwrap();
    assert_reports!();
}

#[test]
fn a_lock_freed_while_another_thread_holds_it_is_reported_and_the_holder_stays_clean() {
    let _h = start();
    let m: Arc<std::sync::Mutex<Option<Box<Mutex<u8>>>>> = Arc::new(std::sync::Mutex::new(Some(
        Box::new(Mutex::named(0u8, "doomed")),
    )));
    let other = Arc::new(Mutex::named(0u8, "other"));
    let (locked_tx, locked_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let holder = {
        let (m, other) = (Arc::clone(&m), Arc::clone(&other));
        std::thread::Builder::new()
            .name("freed-holder".into())
            .spawn(move || {
                let keep = other.lock();
                {
                    let slot = m.lock().unwrap();
                    // The lock stays locked, its entry held by this thread.
                    std::mem::forget(slot.as_ref().unwrap().lock());
                }
                locked_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                // The freed lock left this thread's stack: only `other` is held now.
                assert_eq!(lockdep::held_count(), 1);
                drop(keep);
                assert_eq!(lockdep::held_count(), 0);
            })
            .unwrap()
    };
    locked_rx.recv().unwrap();
    let doomed = m.lock().unwrap().take().unwrap();
    let addr = std::ptr::from_ref(&*doomed).addr();
    drop(doomed);
    let r = assert_reports!(Report::HeldLockFreed { .. });
    let Report::HeldLockFreed {
        thread,
        lock,
        freed_by,
        held,
        ..
    } = &r[0]
    else {
        unreachable!()
    };
    assert_eq!(thread.name, "freed-holder");
    assert_eq!(lock.name, Some("doomed"));
    assert!(lock.instance >= addr, "the lock map lives inside the mutex");
    assert!(freed_by.is_some());
    assert_eq!(held.len(), 1, "the holder's other lock: {held:?}");
    assert_eq!(held[0].name, Some("other"));
    assert!(
        r[0].to_string().contains("with a lock of freed-holder/"),
        "{}",
        r[0]
    );
    go_tx.send(()).unwrap();
    holder.join().unwrap();
    // The holder's exit: nothing held, nothing reported.
    assert_reports!();
}

#[test]
fn a_dump_of_three_threads_holding_and_waiting_is_complete_and_consistent() {
    let _h = start();
    let a = Arc::new(Mutex::named(0u8, "dump A"));
    let b = Arc::new(RwLock::named(0u8, "dump B"));
    let c = Arc::new(Mutex::named(0u8, "dump C"));
    let (c_held_tx, c_held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let barrier = Arc::new(Barrier::new(3));
    // t3 holds C and waits on a channel; t2 holds B (write) and blocks on C; t1 holds A and
    // blocks on B (read).
    let t3 = {
        let (c, barrier) = (Arc::clone(&c), Arc::clone(&barrier));
        std::thread::Builder::new()
            .name("dump-t3".into())
            .spawn(move || {
                let g = c.lock();
                c_held_tx.send(()).unwrap();
                barrier.wait();
                release_rx.recv().unwrap();
                drop(g);
            })
            .unwrap()
    };
    c_held_rx.recv().unwrap();
    let (b_held_tx, b_held_rx) = mpsc::channel();
    let t2 = {
        let (b, c, barrier) = (Arc::clone(&b), Arc::clone(&c), Arc::clone(&barrier));
        std::thread::Builder::new()
            .name("dump-t2".into())
            .spawn(move || {
                let _gb = b.write();
                b_held_tx.send(()).unwrap();
                barrier.wait();
                let _gc = c.lock();
            })
            .unwrap()
    };
    b_held_rx.recv().unwrap();
    let t1 = {
        let (a, b, barrier) = (Arc::clone(&a), Arc::clone(&b), Arc::clone(&barrier));
        std::thread::Builder::new()
            .name("dump-t1".into())
            .spawn(move || {
                let _ga = a.lock();
                barrier.wait();
                let _gb = b.read();
            })
            .unwrap()
    };
    let waiting = |d: &AllLocks, name: &str| {
        d.threads
            .iter()
            .any(|t| t.thread.name == name && t.waiting.is_some())
    };
    let d = dump_when(|d| waiting(d, "dump-t1") && waiting(d, "dump-t2"));
    let (t1d, t2d, t3d) = (
        thread_named(&d, "dump-t1"),
        thread_named(&d, "dump-t2"),
        thread_named(&d, "dump-t3"),
    );
    let names =
        |t: &lockdep::ThreadLocks| t.held.iter().map(|l| l.name.unwrap()).collect::<Vec<_>>();
    assert_eq!(names(t1d), ["dump A"]);
    assert_eq!(names(t2d), ["dump B"]);
    assert_eq!(names(t3d), ["dump C"]);
    assert_eq!(t2d.held[0].mode, Mode::Exclusive);
    let w1 = &t1d.waiting.as_ref().unwrap().lock;
    let w2 = &t2d.waiting.as_ref().unwrap().lock;
    assert_eq!((w1.name, w1.mode), (Some("dump B"), Mode::Read));
    assert_eq!((w2.name, w2.mode), (Some("dump C"), Mode::Exclusive));
    assert!(t3d.waiting.is_none());
    // Every lock held by exactly one thread, and each waiting edge points at its holder.
    for l in [&t1d.held[0], &t2d.held[0], &t3d.held[0]] {
        assert_eq!(d.holders_of(l.instance).len(), 1, "{d}");
    }
    assert_eq!(d.holders_of(w1.instance)[0].thread.name, "dump-t2");
    assert_eq!(d.holders_of(w2.instance)[0].thread.name, "dump-t3");
    // The kernel's layout.
    let text = d.to_string();
    assert!(
        text.contains("Showing all locks held in the system:"),
        "{text}"
    );
    assert!(text.contains("1 lock held by dump-t2/"), "{text}");
    assert!(text.contains(" #0: "), "{text}");
    assert!(text.contains("blocked for"), "{text}");
    release_tx.send(()).unwrap();
    for t in [t1, t2, t3] {
        t.join().unwrap();
    }
    assert_reports!();
    let d = lockdep::all_held_locks();
    assert!(
        d.threads
            .iter()
            .all(|t| !t.thread.name.starts_with("dump-")),
        "threads that exited are gone: {d}"
    );
}

#[test]
fn lock_stat_counts_match_a_workload_with_known_contention() {
    let _h = start();
    lockdep::reset_lock_stat();
    lockdep::set_lock_stat(true);
    let m = Arc::new(Mutex::named(0u32, "stat M"));
    let quiet = Mutex::named(0u32, "stat quiet");
    // 10 uncontended acquisitions of each.
    for _ in 0..10 {
        *m.lock() += 1;
        *quiet.lock() += 1;
    }
    // Exactly 3 contended ones: the main thread holds M while a waiter blocks on it.
    for _ in 0..3 {
        let g = m.lock();
        let waiter = {
            let m = Arc::clone(&m);
            std::thread::Builder::new()
                .name("stat-waiter".into())
                .spawn(move || *m.lock() += 1)
                .unwrap()
        };
        dump_when(|d| {
            d.threads
                .iter()
                .any(|t| t.thread.name == "stat-waiter" && t.waiting.is_some())
        });
        drop(g);
        waiter.join().unwrap();
    }
    assert!(quiet.try_lock().is_some());
    lockdep::set_lock_stat(false);
    drop(m.lock()); // not counted
    let s = lockdep::lock_stat();
    let ms = s.class("stat M").expect("stats of M");
    assert_eq!(ms.acquisitions, 10 + 3 + 3);
    assert_eq!(ms.contentions, 3);
    assert_eq!(ms.wait.count, 3);
    assert!(ms.wait.min_ns > 0 && ms.wait.min_ns <= ms.wait.max_ns);
    assert_eq!(ms.hold.count, 16);
    assert_eq!(
        ms.top_sites.len(),
        1,
        "one contended site: {:?}",
        ms.top_sites
    );
    assert_eq!(ms.top_sites[0].1, 3);
    let qs = s.class("stat quiet").expect("stats of quiet");
    assert_eq!((qs.acquisitions, qs.contentions, qs.wait.count), (11, 0, 0));
    assert_eq!(s.classes[0].class, "stat M", "most contended first");
    let text = s.to_string();
    assert!(
        text.contains("stat M") && text.contains("contended at"),
        "{text}"
    );
    let json = s.to_json();
    assert!(
        json.starts_with(r#"{"classes":[{"class":"stat M","acquisitions":16,"contentions":3,"#),
        "{json}"
    );
    assert_reports!();
}

#[test]
fn lock_stat_reset_while_a_lock_is_held_forgets_the_counts_and_keeps_the_holding() {
    let _h = start();
    lockdep::reset_lock_stat();
    lockdep::set_lock_stat(true);
    let m = Mutex::named(0u32, "stat reset M");
    let other = Mutex::named(0u32, "stat reset other");
    for _ in 0..5 {
        *m.lock() += 1;
    }
    let g = m.lock();
    lockdep::reset_lock_stat();
    drop(g); // its hold time is recorded against the emptied counts, without a panic
    *other.lock() += 1;
    *m.lock() += 1;
    lockdep::set_lock_stat(false);
    let s = lockdep::lock_stat();
    let ms = s.class("stat reset M").expect("stats of M");
    assert_eq!((ms.acquisitions, ms.hold.count), (1, 2));
    let os = s.class("stat reset other").expect("stats of other");
    assert_eq!((os.acquisitions, os.hold.count), (1, 1));
    assert_reports!();
}

/// A condvar wait's sleep is no part of the mutex's hold time: of three holds (the waiter's
/// before its wait, the notifier's long one while the waiter sleeps, the waiter's after it),
/// only the notifier's is long, so the median is short.
#[test]
fn lock_stat_leaves_a_condvar_sleep_out_of_the_hold_time() {
    let _h = start();
    lockdep::reset_lock_stat();
    lockdep::set_lock_stat(true);
    let pair = Arc::new((
        Mutex::named(false, "stat cv M"),
        instrumented_locks::Condvar::new(),
    ));
    let waiter = {
        let pair = Arc::clone(&pair);
        std::thread::Builder::new()
            .name("stat-cv-waiter".into())
            .spawn(move || {
                let (m, cv) = &*pair;
                let mut ready = m.lock();
                while !*ready {
                    cv.wait(&mut ready);
                }
            })
            .unwrap()
    };
    // The waiter sleeps in its wait once the dump shows it on the condvar.
    dump_when(|d| {
        d.threads
            .iter()
            .any(|t| t.thread.name == "stat-cv-waiter" && t.condvar.is_some())
    });
    let long = std::time::Duration::from_millis(200);
    {
        let mut ready = pair.0.lock();
        std::thread::sleep(long); // a long hold, while the waiter sleeps
        *ready = true;
        pair.1.notify_all();
    }
    waiter.join().unwrap();
    lockdep::set_lock_stat(false);
    let s = lockdep::lock_stat();
    let c = s.class("stat cv M").expect("stats of M");
    assert_eq!(c.hold.count, 3, "{c:?}");
    assert!(c.hold.max_ns >= long.as_nanos() as u64, "{c:?}");
    assert!(
        c.hold.p50_ns < long.as_nanos() as u64 / 2,
        "the sleep counted as a hold: {c:?}"
    );
    assert_reports!();
}

/// A release made while lock_stat is off leaves nothing that a later release times: a hold
/// of a few instructions switched around is never recorded as the time between the switches.
#[test]
fn lock_stat_switched_off_and_on_times_no_hold_across_the_switches() {
    let _h = start();
    lockdep::reset_lock_stat();
    lockdep::set_lock_stat(true);
    let m = Mutex::named(0u32, "stat toggled M");
    let g = m.lock();
    lockdep::set_lock_stat(false);
    drop(g); // not seen by lock_stat: its start stays behind in the thread's table
    let gap = std::time::Instant::now();
    while gap.elapsed() < std::time::Duration::from_millis(50) {
        std::hint::spin_loop();
    }
    lockdep::set_lock_stat(true);
    *m.lock() += 1;
    lockdep::set_lock_stat(false);
    let s = lockdep::lock_stat();
    let c = s.class("stat toggled M").expect("stats of M");
    assert_eq!((c.acquisitions, c.hold.count), (2, 1), "{c:?}");
    assert!(
        c.hold.max_ns < 25_000_000,
        "a hold across the switches: {c:?}"
    );
    assert_reports!();
}

/// lock_stat keeps exited threads' counts, merged per class, and frees their tables: many
/// short threads leave one class entry with every count.
#[test]
fn lock_stat_keeps_the_counts_of_exited_threads() {
    let _h = start();
    lockdep::reset_lock_stat();
    lockdep::set_lock_stat(true);
    let m = Arc::new(Mutex::named(0u32, "stat churn M"));
    for _ in 0..50 {
        let m = Arc::clone(&m);
        std::thread::spawn(move || {
            for _ in 0..3 {
                *m.lock() += 1;
            }
        })
        .join()
        .unwrap();
    }
    lockdep::set_lock_stat(false);
    let s = lockdep::lock_stat();
    let c = s.class("stat churn M").expect("stats of M");
    assert_eq!((c.acquisitions, c.hold.count), (150, 150), "{c:?}");
    assert_reports!();
}

/// A lower depth limit reaches a thread whose fast path already has room for the locks it
/// takes: its next acquisition past the new limit is reported.
#[test]
fn a_lower_depth_limit_takes_effect_on_the_next_acquire() {
    let _h = start();
    let a = Mutex::named(0u32, "depth limit A");
    let b = Mutex::named(0u32, "depth limit B");
    for _ in 0..3 {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    assert_reports!();
    lockdep::set_max_depth(1);
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    lockdep::set_max_depth(lockdep::DEFAULT_MAX_DEPTH);
    assert_reports!(Report::CapacityExhausted { .. });
}
