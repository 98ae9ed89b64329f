//! Per-address independence of `synchronize`, as a bounded stress run in both fence modes:
//! a reader parks on one address for the whole run, a writer synchronizes on that address
//! (and so waits for the whole run), and other writers synchronize on other addresses,
//! which short readers keep protecting, so that they often have to wait and share batches
//! of the shared scan with each other. Every one of their calls must return while the
//! parked reader still holds its address: none may wait for a reader of another address.
//!
//! A broken implementation hangs here rather than returning early, so each wait is
//! bounded (a generous timeout turns the hang into a failure); nothing is timed.
#![cfg(not(hazptr_loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

/// Writers on other addresses, and the synchronize calls each makes.
const WRITERS: usize = 4;
const CALLS: u64 = 300;
/// How long a broken implementation may hang before the test fails instead.
const HANG: Duration = Duration::from_secs(120);

/// Spin until `cond` holds; fail the test (instead of hanging) after `HANG`.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG, "timed out waiting for {what}");
        thread::yield_now();
    }
}

fn parked_reader_delays_no_other_address(mode: FenceMode) {
    let d: &'static Domain = Box::leak(Box::new(Domain::new(mode)));
    let words: &'static [u64] = Box::leak(vec![0u64; 1 + WRITERS].into_boxed_slice());
    let addr = |i: usize| &words[i] as *const u64 as usize;
    let stop = Arc::new(AtomicBool::new(false));

    // The parked reader: protects word 0 until told to let go.
    let (parked_tx, parked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let parked_reader = thread::spawn(move || {
        let g = d.protect_addr(addr(0) as *const u64);
        parked_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        drop(g);
    });
    parked_rx.recv().unwrap();

    // The writer on the parked address: waits for the whole run.
    let released = Arc::new(AtomicBool::new(false));
    let parked_writer = {
        let released = released.clone();
        thread::spawn(move || {
            d.synchronize(addr(0) as *const u64).unwrap();
            // Relaxed: the parked reader's release happens-before synchronize's return.
            assert!(
                released.load(Ordering::Relaxed),
                "synchronize on the parked address returned early"
            );
        })
    };
    wait_until("the parked writer to wait", || {
        d.stats().synchronize_waits >= 1
    });

    // Short readers on the other addresses, one per address.
    let sections = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (1..=WRITERS)
        .map(|i| {
            let (stop, sections) = (stop.clone(), sections.clone());
            thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a stop flag with no data attached.
                while !stop.load(Ordering::Relaxed) {
                    let g = d.protect_addr(addr(i) as *const u64);
                    (0..(n % 200)).for_each(|_| std::hint::spin_loop());
                    drop(g);
                    n += 1;
                }
                // Relaxed: read after the join.
                sections.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();

    // Writers on the other addresses: every call must return although word 0 stays
    // protected.
    let (done_tx, done_rx) = mpsc::channel();
    let writers: Vec<_> = (1..=WRITERS)
        .map(|i| {
            let done_tx = done_tx.clone();
            thread::spawn(move || {
                for _ in 0..CALLS {
                    d.synchronize(addr(i) as *const u64).unwrap();
                }
                done_tx.send(i).unwrap();
            })
        })
        .collect();
    for _ in 0..WRITERS {
        done_rx
            .recv_timeout(HANG)
            .expect("a synchronize on another address waited for the parked reader");
    }
    assert!(
        !parked_writer.is_finished(),
        "the parked writer returned while its address was protected"
    );
    let stats = d.stats();

    // Let go: the parked writer returns now.
    // Relaxed: ordered before synchronize's return by the release of the guard.
    released.store(true, Ordering::Relaxed);
    release_tx.send(()).unwrap();
    parked_reader.join().unwrap();
    parked_writer.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    writers.into_iter().for_each(|w| w.join().unwrap());
    readers.into_iter().for_each(|r| r.join().unwrap());

    eprintln!("{mode:?} ({:?} in force): {stats:?}", d.fence_mode());
    assert_eq!(stats.synchronize_calls, 1 + WRITERS as u64 * CALLS);
    // The run exercised the shared scan, not only self-scans.
    assert!(stats.synchronize_waits > 1, "{stats:?}");
    assert!(stats.shared_batches >= 1, "{stats:?}");
    assert!(sections.load(Ordering::Relaxed) > 0);
}

#[test]
fn parked_reader_delays_no_synchronize_on_another_address_symmetric() {
    parked_reader_delays_no_other_address(FenceMode::Symmetric);
}

#[test]
fn parked_reader_delays_no_synchronize_on_another_address_asymmetric() {
    parked_reader_delays_no_other_address(FenceMode::Asymmetric);
}
