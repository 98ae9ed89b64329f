//! Dynamic keys under load: lookups racing register/unregister (freed key nodes are poisoned
//! and every walk checks the poison), classes and dependencies of dropped keys disappear, and
//! an unregister waits only for readers of its own bucket.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};

use common::*;
use lockdep::{DynamicKey, KeyHandle, KeyMisuse, LockMap, Report};

#[test]
fn lookups_race_register_and_unregister() {
    let _h = start();
    const READERS: usize = 2;
    const CHURNERS: usize = 2;
    const CHURN: usize = 1500;
    const SLOTS: usize = 64;
    let outer: &'static LockMap = Box::leak(Box::new(LockMap::new("outer")));
    // Long-lived keys, which must always be found.
    let stable: Arc<Vec<DynamicKey>> = Arc::new(
        (0..256)
            .map(|i| DynamicKey::new(&format!("stable{i}")))
            .collect(),
    );
    // Handles of churned keys, published while the keys live (and left behind after they
    // die): readers walk exactly the buckets where nodes are being unlinked and freed.
    let published: Arc<Mutex<Vec<KeyHandle>>> =
        Arc::new(Mutex::new(vec![stable[0].handle(); SLOTS]));
    let baseline = lockdep::stats();
    let stop = Arc::new(AtomicBool::new(false));
    let start_line = Arc::new(Barrier::new(READERS + CHURNERS));
    let mut readers = Vec::new();
    for _ in 0..READERS {
        let (stable, published, stop, start_line) = (
            stable.clone(),
            published.clone(),
            stop.clone(),
            start_line.clone(),
        );
        readers.push(std::thread::spawn(move || {
            start_line.wait();
            let (mut lookups, mut found) = (0u64, 0u64);
            // Relaxed: a stop flag; the join provides the synchronization that matters.
            while !stop.load(Ordering::Relaxed) {
                for k in stable.iter() {
                    assert!(k.is_registered(), "a stable key vanished");
                }
                let handles = published.lock().unwrap().clone();
                for h in handles {
                    // Any answer is fine; the walk must not touch freed memory (the freed
                    // nodes are poisoned and every walk checks the poison).
                    found += u64::from(h.is_registered());
                    lookups += 1;
                }
            }
            (lookups, found)
        }));
    }
    let mut churners = Vec::new();
    for t in 0..CHURNERS {
        let (start_line, published) = (start_line.clone(), published.clone());
        churners.push(std::thread::spawn(move || {
            start_line.wait();
            for i in 0..CHURN {
                let key = DynamicKey::new(&format!("churn{t}.{i}"));
                assert!(key.is_registered());
                published.lock().unwrap()[(t * 31 + i) % SLOTS] = key.handle();
                let map = Box::new(LockMap::with_dynamic_key("churned", &key));
                // outer -> churned: a dependency that must die with the key.
                pair(outer, &map);
                drop(map);
                let h = key.handle();
                drop(key);
                assert!(!h.is_registered());
            }
        }));
    }
    for c in churners {
        c.join().expect("churner panicked");
    }
    // Relaxed: see the readers' loop.
    stop.store(true, Ordering::Relaxed);
    let lookups: u64 = readers
        .into_iter()
        .map(|r| r.join().expect("reader").0)
        .sum();
    assert!(lookups >= SLOTS as u64 * READERS as u64);
    let after = lockdep::stats();
    assert_eq!(
        after.keys, baseline.keys,
        "every churned key was unregistered"
    );
    // Only `outer`'s class remains beyond the baseline, with no dependency left.
    assert_eq!(after.classes, baseline.classes + 1);
    assert_eq!(after.dependencies, 0);
    assert_reports!();
}

#[test]
fn unregister_waits_only_for_readers_of_its_own_bucket() {
    let _h = start();
    let x = DynamicKey::new("X");
    let mut y = DynamicKey::new("Y");
    while y.bucket() == x.bucket() {
        y = DynamicKey::new("Y");
    }
    let x = Arc::new(x);
    let (parked_tx, parked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let reader = {
        let x = x.clone();
        std::thread::spawn(move || {
            x.with_bucket_protected(|| {
                parked_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            });
        })
    };
    parked_rx.recv().unwrap();
    // The reader is parked inside bucket X. Unregistering Y must not wait for it. (If it
    // did, this would hang; run it on a thread and bound the wait so the test fails
    // instead.)
    let waits_before = lockdep::stats().hazptr_waits;
    let (done_tx, done_rx) = mpsc::channel();
    let y_thread = std::thread::spawn(move || {
        y.unregister();
        done_tx.send(()).unwrap();
        y
    });
    done_rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("unregister in bucket Y was delayed by a reader in bucket X");
    let y = y_thread.join().unwrap();
    assert!(!y.is_registered());
    assert_eq!(
        lockdep::stats().hazptr_waits,
        waits_before,
        "Y's synchronize found a blocking slot"
    );
    // Unregistering X does wait for that reader: start it, see its synchronize find the
    // parked reader's slot (hazptr counts a wait, or polls the blocking slot), then release
    // the reader. Bounded, so a synchronize that never sees the reader fails the test.
    let before = hazptr::Domain::global().stats();
    let x_thread = {
        let x = x.clone();
        std::thread::spawn(move || x.unregister())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let s = hazptr::Domain::global().stats();
        if s.synchronize_waits > before.synchronize_waits || s.slot_polls > before.slot_polls {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "unregister of X never waited for the reader parked in X's bucket"
        );
        std::thread::yield_now();
    }
    release_tx.send(()).unwrap();
    x_thread.join().unwrap();
    reader.join().unwrap();
    assert!(!x.is_registered());
    assert_eq!(lockdep::stats().hazptr_waits, waits_before + 1);
    assert_reports!();
}

#[test]
fn new_key_at_reused_address_starts_clean() {
    let _h = start();
    let a: &'static LockMap = Box::leak(Box::new(LockMap::new("A")));
    let mut seen_reuse = false;
    for _ in 0..64 {
        let k = Box::new(DynamicKey::new("K"));
        let m = Box::new(LockMap::with_dynamic_key("K", &k));
        // K -> A
        pair(&m, a);
        let addr = &*k as *const DynamicKey as usize;
        drop(m);
        drop(k);
        let k2 = Box::new(DynamicKey::new("K2"));
        seen_reuse |= &*k2 as *const DynamicKey as usize == addr;
        let m2 = Box::new(LockMap::with_dynamic_key("K2", &k2));
        // A -> K2 would close a cycle if K2 inherited K's dependency.
        pair(a, &m2);
        drop(m2);
        drop(k2);
    }
    assert_reports!();
    // Not required for the verdict, but the allocator normally reuses the slot.
    let _ = seen_reuse;
}

/// A new lock's first acquisition creates its class and validates its new chain in one
/// graph-lock section (the other threads' slow paths, key unregisters among them, wait for
/// each one); its later acquisitions, and a new lock taken with nothing held, take at most
/// that one, and a cached chain none.
#[test]
fn a_new_lock_costs_one_graph_lock_section() {
    let _h = start();
    let root_key = DynamicKey::new("root");
    let queue_key = DynamicKey::new("queue");
    let root = LockMap::with_dynamic_key("root", &root_key);
    let queue = LockMap::with_dynamic_key("queue", &queue_key);
    let sections = lockdep::graph_lock_sections;

    // A chain head: its class only.
    let before = sections();
    lock(&root);
    assert_eq!(sections() - before, 1, "new class, chain head");
    // A new class on a new chain: both in one section.
    let before = sections();
    lock(&queue);
    assert_eq!(sections() - before, 1, "new class and new chain");
    unlock(&queue);
    unlock(&root);

    // Both cached: no section at all.
    let before = sections();
    pair(&root, &queue);
    assert_eq!(sections() - before, 0, "cached classes, cached chain");

    // A cached class on a new chain: the chain's section only.
    let other = LockMap::new("other");
    lock(&other);
    let before = sections();
    lock(&queue);
    assert_eq!(sections() - before, 1, "cached class, new chain");
    unlock(&queue);
    unlock(&other);

    // The dependencies were recorded in those sections: the inverse order is a cycle.
    pair(&queue, &root);
    assert_one_cycle(&["root", "queue"]);

    // A key's unregister (unlink, the holder check, the zap of its classes) is one section.
    drop((root, queue));
    let before = sections();
    queue_key.unregister();
    assert_eq!(sections() - before, 1, "unregister");
    assert!(!queue_key.is_registered());
}

/// A new lock of a class this thread resolved before takes no graph-lock section: its class
/// comes from the thread's class cache, checked live (kernel: `look_up_lock_class()` is
/// lock-free). Once the key is unregistered (its classes zapped), a lock of it is refused
/// again, and a re-registered key gets a new class through the graph lock.
#[test]
fn a_new_lock_of_a_known_class_takes_no_graph_lock_section() {
    let _h = start();
    let sections = lockdep::graph_lock_sections;
    let key = DynamicKey::new("per-connection");
    let maps = || LockMap::with_dynamic_key("conn", &key);

    let first = maps();
    let before = sections();
    lock(&first);
    unlock(&first);
    assert_eq!(sections() - before, 1, "the class is made");
    drop(first);

    for _ in 0..3 {
        let next = maps();
        let before = sections();
        lock(&next);
        unlock(&next);
        assert_eq!(sections() - before, 0, "known class, chain head");
    }
    // Site-keyed locks too: one construction line, many locks.
    let site_maps: Vec<LockMap> = (0..3).map(|_| LockMap::new("from one line")).collect();
    lock(&site_maps[0]);
    unlock(&site_maps[0]);
    let before = sections();
    for m in &site_maps[1..] {
        lock(m);
        unlock(m);
    }
    assert_eq!(sections() - before, 0, "known site class");

    // Unregistered: its class is dead, so the cache does not answer, and the lock of the
    // unregistered key is refused with a report, as before.
    key.unregister();
    let stale = LockMap::with_dynamic_key("conn", &key);
    assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::NotRegistered,
        ..
    });
    lock(&stale);
    unlock(&stale);
    assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::NotRegistered,
        ..
    });
    drop(stale);
    // Registered again: a new class, made under the graph lock.
    key.register();
    let again = maps();
    let before = sections();
    lock(&again);
    unlock(&again);
    assert_eq!(sections() - before, 1, "a new class after the zap");
    assert_reports!();
}

/// A new lock of a known class is pushed as the fast path pushes (its class from the thread's
/// class cache, no general path), held or not: the orders it takes part in still count, and
/// the one that closes a cycle is reported.
#[test]
fn new_locks_of_a_known_class_still_make_the_dependencies() {
    let _h = start();
    let sections = lockdep::graph_lock_sections;
    // One construction line: one class.
    let conn = || Box::new(LockMap::new("conn"));
    let a = Box::new(LockMap::new("A"));
    let first = conn();
    lock(&first);
    unlock(&first);
    drop(first);
    // A → conn, through a new conn lock taken under A.
    let c1 = conn();
    lock(&a);
    lock(&c1);
    unlock(&c1);
    unlock(&a);
    assert_reports!();
    // Another new conn lock, first taken with nothing held: no section at all.
    let c2 = conn();
    let before = sections();
    lock(&c2);
    assert_eq!(sections() - before, 0, "known class, chain head");
    assert_eq!(lockdep::held_count(), 1);
    // conn → A closes the cycle.
    lock(&a);
    assert_one_cycle(&["A", "conn"]);
    unlock(&a);
    unlock(&c2);
    assert_eq!(lockdep::held_count(), 0);
}

/// An unregister finds another thread's held lock of the key (read from its record in
/// place) and names that thread and lock; a lock of another key held meanwhile, and a key
/// whose classes nobody holds or that has none, are not reported.
#[test]
fn unregister_reports_another_threads_held_lock_of_the_key() {
    let _h = start();
    let held_key = DynamicKey::new("held key");
    let free_key = DynamicKey::new("free key");
    let unused_key = DynamicKey::new("unused key");
    let held: &'static LockMap =
        Box::leak(Box::new(LockMap::with_dynamic_key("held lock", &held_key)));
    let other: &'static LockMap =
        Box::leak(Box::new(LockMap::with_dynamic_key("other lock", &free_key)));
    // `free key` gets a class (taken and released once), then only `held lock` stays held.
    pair(other, held);
    let (locked_tx, locked_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let holder = std::thread::Builder::new()
        .name("key holder".into())
        .spawn(move || {
            lock(held);
            locked_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            unlock(held);
        })
        .unwrap();
    locked_rx.recv().unwrap();

    free_key.unregister();
    unused_key.unregister();
    assert_reports!();
    held_key.unregister();
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::UnregisterWhileHeld,
        ..
    });
    let Report::KeyMisuse { held_by, key, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!(key, "held key");
    assert_eq!(held_by.len(), 1, "{held_by:#?}");
    assert_eq!(held_by[0].thread.name, "key holder");
    let names: Vec<_> = held_by[0].held.iter().map(|l| l.name).collect();
    assert_eq!(names, [Some("held lock")]);
    assert!(!held_key.is_registered());

    done_tx.send(()).unwrap();
    holder.join().unwrap();
    take();
}

/// A lock held while its key is unregistered keeps its entry, with its class dead: the walk
/// for new dependencies skips it from then on, so a lock taken over it depends on the held
/// lock below. The chain ("s, the key's lock, t") was cached while the class lived (then it
/// gave only "the key's lock -> t"); the cache must not answer for it now, or "s -> t" is
/// never recorded and the inversion "t then s" goes unreported. For the unregistering thread
/// itself and for another thread that holds the lock (told by mail).
#[test]
fn a_chain_cached_before_a_held_locks_key_went_is_validated_again() {
    for holder_is_me in [true, false] {
        let _h = start();
        let key: &'static DynamicKey = Box::leak(Box::new(DynamicKey::new("churned")));
        let c: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key("c", key)));
        let (s, t) = (new_lock("s"), new_lock("t"));
        let chain = move || {
            for _ in 0..3 {
                lock(t);
                unlock(t);
            }
        };
        let held_over = move |then: &dyn Fn()| {
            lock(s);
            lock(c);
            chain();
            then();
            chain();
            unlock(c);
            unlock(s);
        };
        if holder_is_me {
            held_over(&|| {});
            held_over(&|| key.unregister());
        } else {
            let (locked_tx, locked_rx) = mpsc::channel();
            let (gone_tx, gone_rx) = mpsc::channel::<()>();
            let holder = std::thread::spawn(move || {
                held_over(&|| {});
                held_over(&|| {
                    locked_tx.send(()).unwrap();
                    gone_rx.recv().unwrap();
                });
            });
            locked_rx.recv().unwrap();
            key.unregister();
            gone_tx.send(()).unwrap();
            holder.join().unwrap();
        }
        assert_reports!(Report::KeyMisuse {
            kind: KeyMisuse::UnregisterWhileHeld,
            ..
        });
        assert!(
            lockdep::dependencies()
                .iter()
                .any(|d| d.from == "s" && d.to == "t"),
            "holder is the unregistering thread: {holder_is_me}; {:?}",
            lockdep::dependencies()
        );
        pair(t, s);
        assert_one_cycle(&["s", "t"]);
    }
}

/// A thread blocked waiting for a lock of the key (validated, on its stack, announced with
/// `lock_contended`) is named by the unregister too: it holds the lock as soon as the holder
/// lets go.
#[test]
fn unregister_reports_a_thread_waiting_for_a_lock_of_the_key() {
    let _h = start();
    let key = DynamicKey::new("awaited key");
    let lock_of_key: &'static LockMap =
        Box::leak(Box::new(LockMap::with_dynamic_key("awaited lock", &key)));
    let (waiting_tx, waiting_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let waiter = std::thread::Builder::new()
        .name("key waiter".into())
        .spawn(move || {
            lock(lock_of_key);
            lockdep::lock_contended(lock_of_key, std::panic::Location::caller());
            waiting_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            lockdep::lock_acquired(lock_of_key);
            unlock(lock_of_key);
        })
        .unwrap();
    waiting_rx.recv().unwrap();
    key.unregister();
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::UnregisterWhileHeld,
        ..
    });
    let Report::KeyMisuse { held_by, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!(held_by.len(), 1, "{held_by:#?}");
    assert_eq!(held_by[0].thread.name, "key waiter");
    let waiting = held_by[0].waiting.as_ref().expect("shown waiting");
    assert_eq!(waiting.lock.name, Some("awaited lock"));
    done_tx.send(()).unwrap();
    waiter.join().unwrap();
    take();
}

/// A map of a dynamic key with no name of its own: its class reads as the key's name (it read
/// as an empty name, printed `()`).
#[test]
fn an_unnamed_map_of_a_dynamic_key_is_named_after_the_key() {
    let _h = start();
    let key = DynamicKey::new("eth0 queue");
    let m: &'static LockMap = Box::leak(Box::new(LockMap::with_dynamic_key("", &key)));
    lock(m);
    let held = lockdep::held_locks();
    assert_eq!(held[0].class_name, "eth0 queue");
    unlock(m);
}
