//! Every lock kind of the 0.13 compat crate is validated: lock-order inversions are reported
//! (between 0.13 locks, and between a 0.13 lock and a 0.12 compat crate's lock, as in a
//! program that patches both majors), plain reads of an `RwLock` taken again are reported,
//! `RecursiveRwLock`'s recursive reads are not, and a `Condvar` wait's re-lock is checked.
//!
//! One test function: the validator and its policy are process-wide.

use std::sync::{Arc, Mutex as StdMutex};

use instrumented_locks::lockdep::{self, Policy, Report, ReportKind};

/// Collects reports from here on (the validator reset first).
fn collect() -> Arc<StdMutex<Vec<Report>>> {
    lockdep::reset();
    let reports = Arc::new(StdMutex::new(Vec::new()));
    let sink = Arc::clone(&reports);
    lockdep::set_policy(Policy::Callback(Arc::new(move |r: &Report| {
        sink.lock().unwrap().push(r.clone());
    })));
    reports
}

/// The kinds of the reports collected since the last call, and whether each names this file.
fn take(reports: &StdMutex<Vec<Report>>) -> Vec<(ReportKind, bool)> {
    std::mem::take(&mut *reports.lock().unwrap())
        .into_iter()
        .map(|r| (r.kind(), r.to_string().contains("tests/validation.rs")))
        .collect()
}

#[test]
fn acquisitions_of_every_kind_are_validated() {
    let reports = collect();

    // Two 0.13 mutexes in both orders (one thread, never a deadlock).
    let a = parking_lot::Mutex::new(1u8);
    let b = parking_lot::FairMutex::new(2u16);
    drop((a.lock(), b.lock()));
    assert_eq!(take(&reports), []);
    drop((b.lock(), a.lock()));
    assert_eq!(take(&reports), [(ReportKind::CircularDependency, true)]);

    // A 0.12 lock and a 0.13 lock: one validator, one graph.
    let old = parking_lot_012::Mutex::new(3u32);
    let new = parking_lot::RwLock::new(4u64);
    drop((old.lock(), new.write()));
    drop((new.read(), old.lock()));
    assert_eq!(take(&reports), [(ReportKind::CircularDependency, true)]);

    // `RecursiveRwLock`: a read taken again by its holder is fine, and an inversion against
    // its write is still one.
    let rec = parking_lot::RecursiveRwLock::new(5u8);
    let m = parking_lot::Mutex::new(6i8);
    {
        let _r1 = rec.read();
        let _r2 = rec.read();
        let _up = rec.try_read().expect("no writer");
    }
    assert_eq!(take(&reports), []);
    drop((rec.write(), m.lock()));
    drop((m.lock(), rec.write()));
    assert_eq!(take(&reports), [(ReportKind::CircularDependency, true)]);

    // A plain `RwLock` read taken again can deadlock behind a queued writer: reported (the
    // second read is taken, so nothing hangs here: no writer waits).
    let plain = parking_lot::RwLock::new(7i16);
    {
        let _r1 = plain.read();
        let _r2 = plain.read();
    }
    assert_eq!(take(&reports), [(ReportKind::RecursiveLocking, true)]);

    // The re-entrant mutex is validated too.
    let re = parking_lot::ReentrantMutex::new(8i32);
    let cm = parking_lot::Mutex::new(false);
    drop((re.lock(), cm.lock()));
    drop((cm.lock(), re.lock()));
    assert_eq!(take(&reports), [(ReportKind::CircularDependency, true)]);

    // A condvar wait re-locks its mutex under what the thread still holds: waiting on
    // `outer` while holding `inner` (taken after it) inverts the order. The wait times out at
    // once; `outer` is free for the re-lock, so nothing blocks.
    let cv = parking_lot::Condvar::new();
    let outer = parking_lot::Mutex::new(0u8);
    let inner = parking_lot::Mutex::new(0u16);
    let mut g = outer.lock();
    let h = inner.lock();
    assert!(cv.wait_for(&mut g, std::time::Duration::ZERO).timed_out());
    drop((h, g));
    assert_eq!(take(&reports), [(ReportKind::CircularDependency, true)]);

    lockdep::set_policy(Policy::Stderr);
}
