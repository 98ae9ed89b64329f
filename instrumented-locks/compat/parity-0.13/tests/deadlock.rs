//! Feature `deadlock_detection` (`--features dd`; parking_lot 0.13 refuses it together with
//! `send_guard`): `parking_lot::deadlock::check_deadlock` finds nothing where nothing is
//! deadlocked, and reports a real two-thread cycle with both threads.
//!
//! This file holds one test: the detector's state is process-wide, and the deadlocked threads
//! stay blocked until the test process exits.
#![cfg(feature = "dd")]

use parking_lot::{deadlock, Mutex, RwLock};
use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn check_deadlock_reports_only_real_cycles() {
    assert!(
        deadlock::check_deadlock().is_empty(),
        "nothing is locked yet"
    );

    // Ordinary locking, nested and contended, but no cycle.
    let (a, b) = (Mutex::new(0), RwLock::new(0));
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..100 {
                    let mut ga = a.lock();
                    let mut gb = b.write();
                    *ga += 1;
                    *gb += 1;
                }
            });
        }
    });
    let held = a.lock();
    assert!(
        deadlock::check_deadlock().is_empty(),
        "a held lock is not a deadlock"
    );
    drop(held);

    // A real cycle: each thread holds one mutex and waits for the other's.
    let m1 = Arc::new(Mutex::new(()));
    let m2 = Arc::new(Mutex::new(()));
    let both_hold = Arc::new(Barrier::new(2));
    let mut ids = HashSet::new();
    for (first, second) in [(m1.clone(), m2.clone()), (m2.clone(), m1.clone())] {
        let both_hold = both_hold.clone();
        let t = thread::spawn(move || {
            let _g1 = first.lock();
            both_hold.wait();
            let _g2 = second.lock(); // Blocks forever: the other thread holds it.
        });
        ids.insert(t.thread().id());
        // The handle is dropped: the threads stay blocked until the test process exits.
    }
    // The detector sees the cycle once both threads are parked; nothing signals that moment,
    // so poll it, with a deadline far beyond any scheduling delay.
    let deadline = Instant::now() + Duration::from_secs(60);
    let cycles = loop {
        let found = deadlock::check_deadlock();
        if !found.is_empty() {
            break found;
        }
        assert!(Instant::now() < deadline, "the deadlock was not detected");
        thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(cycles.len(), 1, "one cycle");
    let found: HashSet<_> = cycles[0].iter().map(|t| t.thread_id()).collect();
    assert_eq!(found, ids, "both threads of the cycle");
    for t in &cycles[0] {
        assert!(!format!("{:?}", t.backtrace()).is_empty());
    }
}
