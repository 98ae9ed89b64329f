//! Concurrency: several threads take random subsets of locks that always respect one global
//! order (the validator must stay silent), while another thread churns dynamic keys; then a
//! single inversion is reported exactly once.

mod common;

use std::panic::Location;
use std::sync::{Arc, Barrier};

use common::*;
use lockdep::{DynamicKey, LockClassKey, LockMap, Mode};

const CLASSES: usize = 8;
static KEYS: [LockClassKey; CLASSES] = [const { LockClassKey::new() }; CLASSES];
const NAMES: [&str; CLASSES] = ["K0", "K1", "K2", "K3", "K4", "K5", "K6", "K7"];

#[test]
fn ordered_random_nesting_from_many_threads_is_silent() {
    let _h = start();
    const THREADS: usize = 4;
    const ROUNDS: usize = 3000;
    let maps: Arc<Vec<LockMap>> = Arc::new(
        (0..CLASSES)
            .map(|i| LockMap::with_key(NAMES[i], &KEYS[i]))
            .collect(),
    );
    let go = Arc::new(Barrier::new(THREADS + 1));
    let mut threads = Vec::new();
    for t in 0..THREADS {
        let (maps, go) = (maps.clone(), go.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng(0x9e37_79b9 + t as u64);
            go.wait();
            for _ in 0..ROUNDS {
                // A random ascending subset, with random modes and trylocks.
                let mut taken = Vec::new();
                for (i, m) in maps.iter().enumerate() {
                    let r = rng.next();
                    if matches!(r % 3, 0) {
                        continue;
                    }
                    let mode = match (r >> 8) % 3 {
                        0 => Mode::Exclusive,
                        1 => Mode::Read,
                        _ => Mode::RecursiveRead,
                    };
                    let try_ = matches!((r >> 16) % 5, 0);
                    lockdep::acquire(m, 0, mode, try_, None, Location::caller());
                    taken.push(i);
                }
                // Release in a random rotation of the acquisition order (not always LIFO).
                let k = if taken.is_empty() {
                    0
                } else {
                    rng.next() as usize % taken.len()
                };
                taken.rotate_left(k);
                for i in taken {
                    lockdep::release(&maps[i], Location::caller());
                }
                assert_eq!(lockdep::held_count(), 0);
            }
        }));
    }
    // Key churn alongside.
    let churn = {
        let go = go.clone();
        std::thread::spawn(move || {
            go.wait();
            for _ in 0..500 {
                let k = DynamicKey::new("churn");
                let m = LockMap::with_dynamic_key("churn", &k);
                lockdep::acquire(&m, 0, Mode::Exclusive, false, None, Location::caller());
                lockdep::release(&m, Location::caller());
            }
        })
    };
    for t in threads {
        t.join().expect("worker panicked");
    }
    churn.join().expect("churner panicked");
    let r = take();
    assert!(r.is_empty(), "{} reports, first: {}", r.len(), r[0]);
    // Some dependencies were learned, all ascending.
    let deps = lockdep::dependencies();
    assert!(deps.len() >= CLASSES - 1);
    assert!(deps.iter().all(|d| d.from < d.to), "{deps:?}");
    // One inversion, from two threads at once: reported once.
    let m = maps.clone();
    let go2 = Arc::new(Barrier::new(2));
    let inverters: Vec<_> = (0..2)
        .map(|_| {
            let (m, go2) = (m.clone(), go2.clone());
            std::thread::spawn(move || {
                go2.wait();
                lockdep::acquire(&m[7], 0, Mode::Exclusive, false, None, Location::caller());
                lockdep::acquire(&m[0], 0, Mode::Exclusive, false, None, Location::caller());
                lockdep::release(&m[0], Location::caller());
                lockdep::release(&m[7], Location::caller());
            })
        })
        .collect();
    for t in inverters {
        t.join().unwrap();
    }
    assert_eq!(count_cycles(&take()), 1);
}
