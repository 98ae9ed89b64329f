//! A bounded stress test in the style of the kernel's hazptrtorture.
//!
//! One writer repeatedly publishes a fresh element, unpublishes the old one, synchronizes
//! on it, and then ages it through a pipe of `PIPE_LEN` stages, one stage per later
//! synchronize; at the end of the pipe the element is poisoned and recycled. Readers
//! protect the current element and check, while protected, that it is neither poisoned
//! nor aged: hazard pointers promise that a protected element has not passed a single
//! synchronize, so every reader must see pipe count 0 (the kernel's RCU torture tolerates
//! 1; we can be stricter). Readers also hold nested guards and detach some, so backup
//! slots and promotion are exercised, and a variant forces every acquire onto the slow
//! path.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use hazptr::{Domain, FenceMode};

const PIPE_LEN: usize = 10;
const ALIVE: u64 = 0x600d_600d_600d_600d;
const POISON: u64 = 0xdead_dead_dead_dead;

struct Elem {
    canary: AtomicU64,
    pipe_count: AtomicUsize,
}

struct Outcome {
    reads: u64,
    bad_pipe: u64,
    poisoned: u64,
}

fn torture(mode: FenceMode, force_slow: bool, readers: usize, updates: usize) {
    let d: &'static Domain = Box::leak(Box::new(Domain::new(mode)));
    d.set_force_slow_path(force_slow);
    let pool: Vec<*mut Elem> = (0..PIPE_LEN + 4)
        .map(|_| {
            Box::into_raw(Box::new(Elem {
                canary: AtomicU64::new(ALIVE),
                pipe_count: AtomicUsize::new(0),
            }))
        })
        .collect();
    let current = Arc::new(AtomicPtr::new(pool[0]));
    let stop = Arc::new(AtomicBool::new(false));

    let handles: Vec<_> = (0..readers)
        .map(|r| {
            let (current, stop) = (current.clone(), stop.clone());
            thread::spawn(move || {
                let mut out = Outcome {
                    reads: 0,
                    bad_pipe: 0,
                    poisoned: 0,
                };
                let filler = [0u64; 4];
                let mut i = 0u64;
                // Relaxed: a stop flag with no data attached.
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    // Every 7th read nests past the primary slots (backup slot).
                    let _nest: Vec<_> = if i.is_multiple_of(7) {
                        filler
                            .iter()
                            .map(|f| d.protect_addr(f as *const u64))
                            .collect()
                    } else {
                        Vec::new()
                    };
                    let Some(g) = d.protect(&current) else {
                        continue;
                    };
                    // Every 5th read of reader 0 detaches (promotion to a backup slot).
                    let check = |e: &Elem, out: &mut Outcome| {
                        // Relaxed loads: the guard's ordering argument, not these, is
                        // what forbids seeing the writer's later stores.
                        if e.canary.load(Ordering::Relaxed) != ALIVE {
                            out.poisoned += 1;
                        }
                        if e.pipe_count.load(Ordering::Relaxed) != 0 {
                            out.bad_pipe += 1;
                        }
                        out.reads += 1;
                    };
                    if r == 0 && i.is_multiple_of(5) {
                        let g = g.detach(d);
                        for _ in 0..(i % 64) {
                            std::hint::spin_loop();
                        }
                        // SAFETY: elements are never freed during the run.
                        check(unsafe { g.as_ref() }, &mut out);
                    } else {
                        for _ in 0..(i % 64) {
                            std::hint::spin_loop();
                        }
                        // SAFETY: elements are never freed during the run.
                        check(unsafe { g.as_ref() }, &mut out);
                    }
                }
                out
            })
        })
        .collect();

    // Writer.
    let mut free: Vec<*mut Elem> = pool[1..].to_vec();
    let mut pipe: Vec<*mut Elem> = Vec::new();
    for _ in 0..updates {
        let next = free.pop().expect("pool sized for the pipe");
        // SAFETY: `next` is unpublished and unprotected (it left the pipe).
        let e = unsafe { &*next };
        // Relaxed: published below with the Release of `swap`.
        e.pipe_count.store(0, Ordering::Relaxed);
        e.canary.store(ALIVE, Ordering::Relaxed);
        let old = current.swap(next, Ordering::AcqRel);
        d.synchronize(old).unwrap();
        for &p in &pipe {
            // SAFETY: pool elements live for the whole test.
            unsafe { &*p }.pipe_count.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { &*old }.pipe_count.store(1, Ordering::Relaxed);
        pipe.insert(0, old);
        if pipe.len() == PIPE_LEN {
            let aged = pipe.pop().unwrap();
            // SAFETY: as above.
            unsafe { &*aged }.canary.store(POISON, Ordering::Relaxed);
            free.insert(0, aged);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = Outcome {
        reads: 0,
        bad_pipe: 0,
        poisoned: 0,
    };
    for h in handles {
        let o = h.join().unwrap();
        total.reads += o.reads;
        total.bad_pipe += o.bad_pipe;
        total.poisoned += o.poisoned;
    }
    let s = d.stats();
    eprintln!(
        "torture mode={mode:?} slow={force_slow} readers={readers} updates={updates}: \
         reads={} bad_pipe={} poisoned={} waits={} polls={} slow_path={}",
        total.reads,
        total.bad_pipe,
        total.poisoned,
        s.synchronize_waits,
        s.slot_polls,
        s.slow_path_acquires
    );
    assert_eq!(
        total.bad_pipe, 0,
        "a reader held an element that had passed synchronize"
    );
    assert_eq!(total.poisoned, 0, "a reader saw a poisoned element");
    assert_eq!(s.synchronize_calls, updates as u64);
    if readers > 0 {
        assert!(total.reads > 0);
    }
    if force_slow && total.reads > 0 {
        assert!(s.slow_path_acquires > 0);
    }
    for p in pool {
        // SAFETY: all readers joined; each element freed once.
        drop(unsafe { Box::from_raw(p) });
    }
}

#[test]
fn torture_symmetric_readers4() {
    torture(FenceMode::Symmetric, false, 4, 20_000);
}

#[test]
fn torture_symmetric_slowpath() {
    torture(FenceMode::Symmetric, true, 4, 20_000);
}

#[test]
fn torture_asymmetric_readers4() {
    torture(FenceMode::Asymmetric, false, 4, 20_000);
}

#[test]
fn torture_readers0() {
    torture(FenceMode::Symmetric, false, 0, 20_000);
}
