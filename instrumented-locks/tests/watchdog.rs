//! The hung-lock watchdog: a two- and a three-thread deadlock are reported as happening now
//! (with the potential deadlock the validator reported before), a wait behind a stalled
//! holder is reported with its wait-for chain, and a long wait whose holder makes progress is
//! not. One test: the watchdog and its handler are process-wide, and the deadlocked threads
//! stay blocked until the process ends.
#![cfg(feature = "validate")]

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{next_about, start};
use instrumented_locks::Mutex;
use lockdep::{Report, WatchdogReport};

const THRESHOLD: Duration = Duration::from_millis(800);

/// Starts `n` threads named `prefix-0..n`, thread `i` locking `locks[i]` then, after all did,
/// `locks[(i + 1) % n]`: a cycle of waits.
fn deadlock(prefix: &str, locks: &[Arc<Mutex<u8>>]) {
    let n = locks.len();
    let barrier = Arc::new(Barrier::new(n));
    for i in 0..n {
        let (first, second) = (Arc::clone(&locks[i]), Arc::clone(&locks[(i + 1) % n]));
        let barrier = Arc::clone(&barrier);
        std::thread::Builder::new()
            .name(format!("{prefix}-{i}"))
            .spawn(move || {
                let _a = first.lock();
                barrier.wait();
                let _b = second.lock(); // blocks forever
            })
            .unwrap();
    }
}

#[test]
fn the_watchdog_reports_deadlocks_and_stalled_waits_but_not_progressing_ones() {
    let _h = start();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    lockdep::set_watchdog_handler(Some(Arc::new(move |r: &WatchdogReport| {
        let _ = tx.lock().unwrap().send(r.clone());
    })));
    lockdep::start_watchdog(THRESHOLD).unwrap();

    // A long wait whose holder makes progress (takes and releases another lock) all along:
    // nothing. Then the same wait behind a holder that stalls: reported, with its chain.
    let l = Arc::new(Mutex::named(0u8, "progress L"));
    let k = Mutex::named(0u8, "progress K");
    let g = l.lock();
    let waiter = {
        let l = Arc::clone(&l);
        std::thread::Builder::new()
            .name("progress-waiter".into())
            .spawn(move || drop(l.lock()))
            .unwrap()
    };
    let t0 = Instant::now();
    while t0.elapsed() < THRESHOLD * 4 {
        drop(k.lock());
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(g);
    waiter.join().unwrap();
    assert!(rx.try_recv().is_err(), "a progressing wait was reported");

    let (stall_tx, stall_rx) = mpsc::channel::<()>();
    let holder = {
        let l = Arc::clone(&l);
        let (held_tx, held_rx) = mpsc::channel();
        let h = std::thread::Builder::new()
            .name("stall-holder".into())
            .spawn(move || {
                let _g = l.lock();
                held_tx.send(()).unwrap();
                stall_rx.recv().unwrap(); // stalls without lock operations
            })
            .unwrap();
        held_rx.recv().unwrap();
        h
    };
    let waiter = {
        let l = Arc::clone(&l);
        std::thread::Builder::new()
            .name("stall-waiter".into())
            .spawn(move || drop(l.lock()))
            .unwrap()
    };
    match next_about(&rx, "stall-") {
        WatchdogReport::Hung(h) => {
            let names: Vec<_> = h.chain.iter().map(|t| t.thread.name.as_str()).collect();
            assert_eq!(names, ["stall-waiter", "stall-holder"]);
            assert_eq!(
                h.chain[0].waiting.as_ref().unwrap().lock.name,
                Some("progress L")
            );
            assert_eq!(h.chain[1].held[0].name, Some("progress L"));
            assert!(h.stalled_for >= THRESHOLD);
            assert!(h.to_string().contains("is blocked on"), "{h}");
        }
        other => panic!("expected a hung wait, got {other:#?}"),
    }
    stall_tx.send(()).unwrap();
    holder.join().unwrap();
    waiter.join().unwrap();

    // Two threads: AB-BA. The validator reports the order before the second thread blocks;
    // the watchdog reports the deadlock and names that earlier report.
    let two = [
        Arc::new(Mutex::named(0u8, "dl2 A")),
        Arc::new(Mutex::named(0u8, "dl2 B")),
    ];
    deadlock("dl2", &two);
    match next_about(&rx, "dl2-") {
        WatchdogReport::Deadlock(d) => {
            assert_eq!(d.threads.len(), 2, "{d}");
            for t in &d.threads {
                assert_eq!(t.held.len(), 1);
                let w = &t.waiting.as_ref().unwrap().lock;
                // Each waits for the lock the other holds.
                let other = d.threads.iter().find(|o| o.thread != t.thread).unwrap();
                assert_eq!(w.instance, other.held[0].instance);
            }
            assert!(
                matches!(d.earlier.as_deref(), Some(Report::CircularDependency(_))),
                "the earlier potential report: {:#?}",
                d.earlier
            );
            let text = d.to_string();
            assert!(text.contains("deadlock happening now"), "{text}");
            assert!(
                text.contains("possible before") || text.contains("before:"),
                "{text}"
            );
        }
        other => panic!("expected a deadlock, got {other:#?}"),
    }
    let now = lockdep::deadlocks_now();
    assert!(
        now.iter()
            .any(|d| d.threads.iter().all(|t| t.thread.name.starts_with("dl2-"))),
        "deadlocks_now sees it too: {now:#?}"
    );

    // Three threads in a ring.
    let three = [
        Arc::new(Mutex::named(0u8, "dl3 A")),
        Arc::new(Mutex::named(0u8, "dl3 B")),
        Arc::new(Mutex::named(0u8, "dl3 C")),
    ];
    deadlock("dl3", &three);
    match next_about(&rx, "dl3-") {
        WatchdogReport::Deadlock(d) => {
            let mut names: Vec<_> = d.threads.iter().map(|t| t.thread.name.clone()).collect();
            names.sort();
            assert_eq!(names, ["dl3-0", "dl3-1", "dl3-2"]);
            // Cycle order: each waits for a lock the next one holds.
            for (i, t) in d.threads.iter().enumerate() {
                let next = &d.threads[(i + 1) % 3];
                assert_eq!(
                    t.waiting.as_ref().unwrap().lock.instance,
                    next.held[0].instance
                );
            }
            assert!(matches!(
                d.earlier.as_deref(),
                Some(Report::CircularDependency(_))
            ));
        }
        other => panic!("expected a deadlock, got {other:#?}"),
    }
    // Each deadlock is reported once.
    std::thread::sleep(THRESHOLD * 2);
    if let Ok(r) = rx.try_recv() {
        panic!("reported twice: {r}");
    }
    lockdep::stop_watchdog();
}
