//! The hung-lock watchdog sees the waits that are not a plain `lock()`: a condvar wait's
//! re-lock of its mutex, stalled behind a holder after the notification, is reported as a hung
//! wait with its chain; a blocking upgrade that waits for a reader which waits for the
//! upgrader's other lock is reported as a deadlock happening now (and `deadlocks_now` sees
//! it). One test: the watchdog and its handler are process-wide, and the deadlocked threads
//! stay blocked until the process ends.
#![cfg(feature = "validate")]

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{next_about, start};
use instrumented_locks::{Condvar, Mutex, RwLock, RwLockUpgradableReadGuard};
use lockdep::WatchdogReport;

const THRESHOLD: Duration = Duration::from_millis(800);

#[test]
fn the_watchdog_sees_condvar_relocks_and_upgrades() {
    let _h = start();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    lockdep::set_watchdog_handler(Some(Arc::new(move |r: &WatchdogReport| {
        let _ = tx.lock().unwrap().send(r.clone());
    })));
    lockdep::start_watchdog(THRESHOLD).unwrap();

    // A condvar waiter is notified by a thread that then stalls holding the mutex: the
    // waiter's re-lock waits behind it, and is reported with the chain waiter -> holder.
    let m = Arc::new(Mutex::named(false, "cv M"));
    let cv = Arc::new(Condvar::new());
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let waiter = {
        let (m, cv) = (Arc::clone(&m), Arc::clone(&cv));
        std::thread::Builder::new()
            .name("cv-waiter".into())
            .spawn(move || {
                let mut g = m.lock();
                ready_tx.send(()).unwrap();
                cv.wait_while(&mut g, |notified| !*notified);
            })
            .unwrap()
    };
    ready_rx.recv().unwrap();
    let (stall_tx, stall_rx) = mpsc::channel::<()>();
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let holder = {
        let (m, cv) = (Arc::clone(&m), Arc::clone(&cv));
        std::thread::Builder::new()
            .name("cv-holder".into())
            .spawn(move || {
                // The waiter sent `ready` holding `m`, so this lock succeeds only once the
                // waiter's wait released it: the notification finds it waiting.
                let mut g = m.lock();
                *g = true;
                assert!(cv.notify_one(), "the waiter is waiting");
                held_tx.send(()).unwrap();
                stall_rx.recv().unwrap(); // stalls holding `m`, without lock operations
            })
            .unwrap()
    };
    held_rx.recv().unwrap();
    match next_about(&rx, "cv-") {
        WatchdogReport::Hung(h) => {
            let names: Vec<_> = h.chain.iter().map(|t| t.thread.name.as_str()).collect();
            assert_eq!(names, ["cv-waiter", "cv-holder"], "{h}");
            assert_eq!(h.chain[0].waiting.as_ref().unwrap().lock.name, Some("cv M"));
            let held: Vec<_> = h.chain[1].held.iter().map(|l| l.name).collect();
            assert_eq!(held, [Some("cv M")]);
            assert!(h.stalled_for >= THRESHOLD);
        }
        other => panic!("expected a hung wait, got {other:#?}"),
    }
    stall_tx.send(()).unwrap();
    holder.join().unwrap();
    waiter.join().unwrap();

    // The upgrader holds X and an upgradable read of RW; the reader holds a read of RW. Then
    // the reader waits for X and the upgrade waits for the reader to leave: a deadlock.
    let rw = Arc::new(RwLock::named(0u8, "upg RW"));
    let x = Arc::new(Mutex::named(0u8, "upg X"));
    let barrier = Arc::new(Barrier::new(2));
    {
        let (rw, x, barrier) = (Arc::clone(&rw), Arc::clone(&x), Arc::clone(&barrier));
        std::thread::Builder::new()
            .name("upg-reader".into())
            .spawn(move || {
                let _r = rw.read();
                barrier.wait();
                let _x = x.lock(); // blocks forever
            })
            .unwrap();
    }
    {
        let (rw, x, barrier) = (Arc::clone(&rw), Arc::clone(&x), Arc::clone(&barrier));
        std::thread::Builder::new()
            .name("upg-upgrader".into())
            .spawn(move || {
                let _x = x.lock();
                let u = rw.upgradable_read();
                barrier.wait();
                let _w = RwLockUpgradableReadGuard::upgrade(u); // blocks forever
            })
            .unwrap();
    }
    match next_about(&rx, "upg-") {
        WatchdogReport::Deadlock(d) => {
            assert_eq!(d.threads.len(), 2, "{d}");
            let by_name = |n: &str| d.threads.iter().find(|t| t.thread.name == n).unwrap();
            let (reader, upgrader) = (by_name("upg-reader"), by_name("upg-upgrader"));
            let up_wait = &upgrader.waiting.as_ref().unwrap().lock;
            assert_eq!(up_wait.name, Some("upg RW"));
            assert_eq!(up_wait.instance, reader.held[0].instance);
            let rd_wait = &reader.waiting.as_ref().unwrap().lock;
            assert_eq!(rd_wait.name, Some("upg X"));
            let up_held: Vec<_> = upgrader.held.iter().map(|l| l.name).collect();
            assert_eq!(up_held, [Some("upg X")], "{d}");
            assert!(d.to_string().contains("deadlock happening now"), "{d}");
        }
        other => panic!("expected a deadlock, got {other:#?}"),
    }
    let now = lockdep::deadlocks_now();
    assert!(
        now.iter()
            .any(|d| d.threads.iter().all(|t| t.thread.name.starts_with("upg-"))),
        "deadlocks_now sees it too: {now:#?}"
    );
    lockdep::stop_watchdog();
}
