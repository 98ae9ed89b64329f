//! When an Asymmetric combiner waits for more callers to join its batch (the shared scan's
//! gather, counted in `Stats::gather_waits`): only when other callers are inside
//! `synchronize` and a slot may block its batch. A caller alone, or a batch that nothing
//! protects, is served at once. The tests assert on the counter, never on time; each wait
//! for another thread is bounded, so a broken implementation fails instead of hanging.
//!
//! Where `membarrier` is unavailable the domain falls back to Symmetric mode, which never
//! gathers; the tests that need an Asymmetric domain then check only that and return.
#![cfg(not(hazptr_loom))]

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode, Stats};

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

/// A leaked Asymmetric domain, or `None` (after checking that the fallback never gathers)
/// where `membarrier` is unavailable.
fn asymmetric_domain() -> Option<&'static Domain> {
    let d: &'static Domain = Box::leak(Box::new(Domain::new(FenceMode::Asymmetric)));
    if d.fence_mode() == FenceMode::Asymmetric {
        return Some(d);
    }
    eprintln!(
        "membarrier unavailable: the domain fell back to Symmetric mode, which never gathers"
    );
    let word = 0u64;
    d.synchronize(&word).expect("nothing protects it");
    assert_eq!(d.stats().gather_waits, 0);
    None
}

/// A reader thread that protects `addr` until the returned sender is dropped or sent to.
fn park_reader(d: &'static Domain, addr: usize) -> (mpsc::Sender<()>, thread::JoinHandle<()>) {
    let (parked_tx, parked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let reader = thread::spawn(move || {
        let guard = d.protect_addr(addr as *const u64);
        parked_tx.send(()).expect("the test waits for the reader");
        let _ = release_rx.recv();
        drop(guard);
    });
    parked_rx.recv().expect("the reader parks");
    (release_tx, reader)
}

#[test]
fn a_lone_synchronize_with_nothing_protected_returns_without_a_gather_wait() {
    let Some(d) = asymmetric_domain() else { return };
    let word = 0u64;
    d.synchronize(&word).expect("nothing protects it");
    let s: Stats = d.stats();
    assert_eq!(s.gather_waits, 0, "a caller alone gathered: {s:?}");
    assert_eq!(
        s.shared_batches, 1,
        "Asymmetric calls are served by a batch"
    );
    assert_eq!(s.heavy_barriers, 1, "one membarrier for the batch");
}

#[test]
fn a_batch_nothing_protects_does_not_gather_while_another_caller_waits_elsewhere() {
    let Some(d) = asymmetric_domain() else { return };
    let words: &'static [u64; 2] = Box::leak(Box::new([0u64; 2]));
    let (parked, other): (&'static u64, &'static u64) = (&words[0], &words[1]);
    let (release, reader) = park_reader(d, parked as *const u64 as usize);
    // Another caller is inside `synchronize`, waiting for the parked reader.
    let blocked = thread::spawn(move || d.synchronize(parked));
    wait_until("the other caller to be handed to the poller", || {
        d.stats().handoffs >= 1
    });
    // Alone in its batch, on an address nothing protects: served without a gather.
    d.synchronize(other).expect("nothing protects it");
    let s = d.stats();
    assert_eq!(
        s.gather_waits, 0,
        "gathered for a batch nothing protects: {s:?}"
    );
    assert_eq!(s.shared_batches, 2);
    release.send(()).expect("the reader is parked");
    reader.join().expect("reader");
    assert_eq!(blocked.join().expect("blocked caller"), Ok(()));
}

#[test]
fn a_batch_whose_address_is_protected_gathers_while_another_caller_waits() {
    let Some(d) = asymmetric_domain() else { return };
    let word: &'static u64 = Box::leak(Box::new(0u64));
    let (release, reader) = park_reader(d, word as *const u64 as usize);
    let sync = move || d.synchronize(word);
    let first = thread::spawn(sync);
    wait_until("the first caller to be handed to the poller", || {
        d.stats().handoffs >= 1
    });
    // The second caller's batch has an address a reader protects, and the first caller is
    // inside `synchronize`: its combiner gathers once before its barrier.
    let second = thread::spawn(sync);
    wait_until("the second caller to be handed to the poller", || {
        d.stats().handoffs >= 2
    });
    release.send(()).expect("the reader is parked");
    reader.join().expect("reader");
    assert_eq!(first.join().expect("first caller"), Ok(()));
    assert_eq!(second.join().expect("second caller"), Ok(()));
    let s = d.stats();
    assert_eq!(s.gather_waits, 1, "{s:?}");
    assert_eq!(s.shared_batches, 2);
}
