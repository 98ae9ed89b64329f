//! Behaviour of the public API: protect, nesting past the primary slots, detach,
//! self-protection misuse, record reuse, fence modes. Interleavings are forced with
//! channels and by watching the domain's counters, never by sleeping.
#![cfg(not(hazptr_loom))]

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode, SynchronizeError, PRIMARY_SLOTS};

/// Spin until `cond` holds; fail the test (instead of hanging) after 20 s.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        thread::yield_now();
    }
}

fn leak<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

#[test]
fn protect_returns_the_published_pointer_and_none_for_null() {
    let d = Domain::new(FenceMode::Symmetric);
    let p = leak(7u64);
    let src = AtomicPtr::new(p);
    let g = d.protect(&src).expect("non-null");
    assert_eq!(g.as_ptr(), p);
    // SAFETY: `p` is live for the whole test.
    assert_eq!(unsafe { *g.as_ref() }, 7);
    drop(g);
    let null: AtomicPtr<u64> = AtomicPtr::new(std::ptr::null_mut());
    assert!(d.protect(&null).is_none());
    assert_eq!(d.stats().slow_path_acquires, 0);
    // SAFETY: allocated above, freed once.
    drop(unsafe { Box::from_raw(p) });
}

#[test]
fn synchronize_with_nothing_protected_returns_at_once() {
    let d = Domain::new(FenceMode::Symmetric);
    let x = leak(1u64);
    for _ in 0..10 {
        d.synchronize(x).unwrap();
    }
    d.synchronize(std::ptr::null::<u64>()).unwrap();
    let s = d.stats();
    assert_eq!(s.synchronize_calls, 11);
    assert_eq!(s.synchronize_waits, 0);
    assert_eq!(s.slot_polls, 0);
    // SAFETY: allocated above, freed once.
    drop(unsafe { Box::from_raw(x) });
}

/// Case "H23 (a)" of the project's hazard-pointer case list (synchronize inside one's
/// own protection): synchronize on an address the caller itself protects is refused, on a
/// primary slot and on a backup slot alike, and nothing is waited for.
#[test]
fn synchronize_while_self_protected_is_an_error_not_a_hang() {
    let d = Domain::new(FenceMode::Symmetric);
    let x = leak(5u64);
    let src = AtomicPtr::new(x);
    let g = d.protect(&src).unwrap();
    let err = d.synchronize(x).unwrap_err();
    assert_eq!(err, SynchronizeError::SelfProtected { addr: x as usize });
    assert!(err.to_string().contains("itself protects"), "{err}");
    drop(g);
    d.synchronize(x).unwrap();

    // Same on the slow path: fill the primary slots, then protect `x` in a backup slot.
    let others: Vec<u64> = vec![0; PRIMARY_SLOTS];
    let held: Vec<_> = others
        .iter()
        .map(|o| d.protect_addr(o as *const u64))
        .collect();
    let g = d.protect_addr(x);
    assert_eq!(d.stats().slow_path_acquires, 1);
    assert!(matches!(
        d.synchronize(x),
        Err(SynchronizeError::SelfProtected { .. })
    ));
    drop(g);
    drop(held);
    d.synchronize(x).unwrap();
    // SAFETY: allocated above, freed once.
    drop(unsafe { Box::from_raw(x) });
}

/// Cases "H23 (b)" and "H21 (b)" of the project's hazard-pointer case list (a writer
/// waits for its reader): a writer's synchronize returns only after the reader's release.
fn writer_waits_for_reader(d: &'static Domain, nest: usize) {
    writer_waits_for_reader_with(d, nest, false)
}

fn writer_waits_for_reader_with(d: &'static Domain, nest: usize, direct: bool) {
    let x = leak(11u64);
    let src = Arc::new(AtomicPtr::new(x));
    let released = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let reader = {
        let (src, released) = (src.clone(), released.clone());
        thread::spawn(move || {
            // Nest `nest` other guards first so the guard on x may land in a backup slot.
            let pad: Vec<u64> = vec![0; nest];
            let _pad: Vec<_> = pad
                .iter()
                .map(|p| d.protect_addr(p as *const u64))
                .collect();
            let g = d.protect(&src).unwrap();
            tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // SAFETY: the writer frees x only after synchronize returns.
            assert_eq!(unsafe { *g.as_ref() }, 11);
            // Relaxed is enough: the release of `g` orders it before synchronize returns.
            released.store(true, Ordering::Relaxed);
            drop(g);
        })
    };
    rx.recv().unwrap();
    let y = leak(12u64);
    let old = src.swap(y, Ordering::AcqRel) as usize;
    let polls_before = d.stats().slot_polls;
    let writer = {
        let released = released.clone();
        thread::spawn(move || {
            if direct {
                d.synchronize_direct(old as *const u64).unwrap();
            } else {
                d.synchronize(old as *const u64).unwrap();
            }
            // The reader's release happens-before synchronize's return.
            assert!(
                released.load(Ordering::Relaxed),
                "synchronize returned early"
            );
            // SAFETY: no reader protects `old` any more.
            drop(unsafe { Box::from_raw(old as *mut u64) });
        })
    };
    // The writer is provably waiting on the reader's slot before we let the reader go.
    wait_until("the writer to poll the blocking slot", || {
        d.stats().slot_polls > polls_before
    });
    assert!(!writer.is_finished());
    go_tx.send(()).unwrap();
    reader.join().unwrap();
    writer.join().unwrap();
    // SAFETY: y was never handed out after this point.
    drop(unsafe { Box::from_raw(src.load(Ordering::Relaxed)) });
}

fn leaked_domain(mode: FenceMode) -> &'static Domain {
    Box::leak(Box::new(Domain::new(mode)))
}

#[test]
fn writer_waits_for_reader_on_primary_slot() {
    let d = leaked_domain(FenceMode::Symmetric);
    writer_waits_for_reader(d, 0);
    let s = d.stats();
    assert_eq!(
        (s.synchronize_waits, s.shared_batches, s.self_scan_returns),
        (1, 1, 0)
    );
}

#[test]
fn writer_waits_for_reader_with_direct_scan() {
    let d = leaked_domain(FenceMode::Symmetric);
    writer_waits_for_reader_with(d, 0, true);
    let s = d.stats();
    assert_eq!((s.synchronize_waits, s.shared_batches), (1, 0));
}

#[test]
fn writer_waits_for_reader_on_backup_slot() {
    let d = leaked_domain(FenceMode::Symmetric);
    writer_waits_for_reader(d, PRIMARY_SLOTS);
    assert!(d.stats().slow_path_acquires >= 1);
}

#[test]
fn writer_waits_for_reader_with_forced_slow_path() {
    let d = leaked_domain(FenceMode::Symmetric);
    d.set_force_slow_path(true);
    writer_waits_for_reader(d, 0);
    assert!(d.stats().slow_path_acquires >= 1);
}

#[test]
fn writer_waits_for_reader_in_asymmetric_mode() {
    let d = leaked_domain(FenceMode::Asymmetric);
    writer_waits_for_reader(d, 0);
    let s = d.stats();
    match d.fence_mode() {
        // One membarrier for the writer's self-scan; the shared scan's combiner relies on
        // it and issues none of its own (every waiter of its batch had one).
        FenceMode::Asymmetric => assert_eq!(s.heavy_barriers + s.shared_barriers, 1),
        FenceMode::Symmetric => assert_eq!(s.heavy_barriers, 0),
    }
}

#[test]
fn nesting_past_the_primary_slots_uses_backup_slots_and_reuses_them() {
    let d = Domain::new(FenceMode::Symmetric);
    let words: Vec<u64> = vec![0; PRIMARY_SLOTS + 3];
    for round in 1..=3u64 {
        let guards: Vec<_> = words
            .iter()
            .map(|w| d.protect_addr(w as *const u64))
            .collect();
        assert_eq!(d.stats().slow_path_acquires, 3 * round);
        drop(guards);
    }
    // Three backup slots were enough for all rounds: they are reused, not reallocated.
    assert_eq!(d.stats().backup_slots, 3);
}

/// A detached guard moves to another thread and keeps protecting; synchronize from the
/// thread that detached it is not misuse and waits for the new holder.
#[test]
fn detached_guard_moves_threads_and_still_blocks() {
    let d = leaked_domain(FenceMode::Symmetric);
    let x = leak(3u64);
    let src = AtomicPtr::new(x);
    let detached = d.protect(&src).unwrap().detach(d);
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let holder = thread::spawn(move || {
        go_rx.recv().unwrap();
        // SAFETY: x is freed only after synchronize returns, which waits for this guard.
        assert_eq!(unsafe { *detached.as_ref() }, 3);
        drop(detached);
    });
    let polls_before = d.stats().slot_polls;
    let xa = x as usize;
    let writer = thread::spawn(move || d.synchronize(xa as *const u64).unwrap());
    wait_until("the writer to wait on the backup slot", || {
        d.stats().slot_polls > polls_before
    });
    go_tx.send(()).unwrap();
    holder.join().unwrap();
    writer.join().unwrap();
    // SAFETY: no protection of x remains.
    drop(unsafe { Box::from_raw(x) });
}

#[test]
fn thread_records_are_reused_after_threads_exit() {
    let d = leaked_domain(FenceMode::Symmetric);
    let word = 0u64;
    let addr = &word as *const u64 as usize;
    for _ in 0..20 {
        thread::spawn(move || drop(d.protect_addr(addr as *const u64)))
            .join()
            .unwrap();
    }
    assert_eq!(d.stats().records, 1);
    // Four threads alive at once need four records.
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let barrier = barrier.clone();
            thread::spawn(move || {
                let g = d.protect_addr(addr as *const u64);
                barrier.wait();
                drop(g);
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(d.stats().records, 4);
}

/// Readers that keep re-taking a permanent address (a bucket head) do not starve
/// synchronize: each blocking slot only has to be seen released once. The reader holds
/// the address until the writer is seen waiting on it, then keeps re-taking it until the
/// writer returns.
#[test]
fn readers_retaking_a_permanent_address_do_not_starve_synchronize() {
    let d = leaked_domain(FenceMode::Symmetric);
    static HEAD: u64 = 0;
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = {
        let done = done.clone();
        thread::spawn(move || {
            let mut g = d.protect_addr(&HEAD as *const u64);
            let polls_before = d.stats().slot_polls;
            ready_tx.send(()).unwrap();
            wait_until("the writer to wait on the head", || {
                d.stats().slot_polls > polls_before
            });
            let mut retakes = 0u64;
            // Relaxed: a stop flag with no data attached.
            while !done.load(Ordering::Relaxed) {
                drop(g);
                g = d.protect_addr(&HEAD as *const u64);
                retakes += 1;
            }
            retakes
        })
    };
    ready_rx.recv().unwrap();
    d.synchronize(&HEAD as *const u64).unwrap();
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() >= 1);
    assert_eq!(d.stats().synchronize_waits, 1);
}

#[test]
#[should_panic(expected = "protect_addr(null)")]
fn protect_addr_null_panics_with_a_clear_message() {
    let d = Domain::new(FenceMode::Symmetric);
    let _ = d.protect_addr(std::ptr::null::<u64>());
}

#[test]
fn asymmetric_mode_resolves_to_a_working_mode() {
    let d = Domain::new(FenceMode::Asymmetric);
    // Either membarrier works here, or the domain fell back; both must synchronize.
    let x = 0u64;
    d.synchronize(&x as *const u64).unwrap();
    let expected = u64::from(d.fence_mode() == FenceMode::Asymmetric);
    assert_eq!(d.stats().heavy_barriers, expected);
}

#[test]
fn global_domain_is_one_symmetric_domain() {
    let a = Domain::global() as *const Domain;
    let b = thread::spawn(|| Domain::global() as *const Domain as usize)
        .join()
        .unwrap();
    assert_eq!(a as usize, b);
    assert_eq!(Domain::global().fence_mode(), FenceMode::Symmetric);
}
