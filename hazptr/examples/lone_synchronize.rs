//! A lone `synchronize` caller with one reader: does the shared scan cost it more than the
//! direct path, which has no batching at all?
//!
//! One reader thread keeps protecting the object a shared pointer leads to, for `HOLD`
//! pause instructions at a time; one writer replaces the object and synchronizes on the old
//! one, again and again. Rounds alternate between `Domain::synchronize` (self-scan, then the
//! shared scan) and `Domain::synchronize_direct`, in the same process; the table shows the
//! medians over rounds of each round's percentiles, in µs.
//!
//! `cargo run --release -p hazptr --example lone_synchronize [HOLD] [ROUNDS]`
//! (defaults 50 and 6). Needs two free CPUs to mean anything.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

const WINDOW: Duration = Duration::from_millis(200);

/// One round's synchronize latencies, in ns, sorted.
fn round(direct: bool, hold: u32) -> Vec<u64> {
    let domain = Domain::new(FenceMode::Symmetric);
    let shared = AtomicPtr::new(Box::into_raw(Box::new(0u64)));
    let stop = AtomicBool::new(false);
    let mut latencies = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            // Relaxed: a stop flag with no data attached.
            while !stop.load(Ordering::Relaxed) {
                let guard = domain.protect(&shared).expect("never null");
                for _ in 0..hold {
                    // SAFETY: the guard keeps the object from being freed: the writer
                    // frees only after unpublishing it and synchronizing on it.
                    std::hint::black_box(unsafe { *guard.as_ref() });
                    std::hint::spin_loop();
                }
            }
        });
        let end = Instant::now() + WINDOW;
        while Instant::now() < end {
            // AcqRel: Release publishes the new object; Acquire makes the old one ours.
            let old = shared.swap(Box::into_raw(Box::new(1)), Ordering::AcqRel);
            let t = Instant::now();
            let r = if direct {
                domain.synchronize_direct(old)
            } else {
                domain.synchronize(old)
            };
            latencies.push(t.elapsed().as_nanos() as u64);
            r.expect("the writer holds no guard");
            // SAFETY: unpublished and synchronized: no reader can reach or still hold it.
            drop(unsafe { Box::from_raw(old) });
            // Let the reader move on to the new object before the next replace.
            for _ in 0..2 * hold {
                std::hint::spin_loop();
            }
        }
        // Relaxed: as above; the scope's join orders the rest.
        stop.store(true, Ordering::Relaxed);
    });
    // SAFETY: the reader has been joined; the last object is ours alone.
    drop(unsafe { Box::from_raw(shared.into_inner()) });
    latencies.sort_unstable();
    latencies
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[i] as f64 / 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let hold: u32 = args
        .next()
        .map_or(50, |s| s.parse().expect("HOLD: a number"));
    let rounds: usize = args
        .next()
        .map_or(6, |s| s.parse().expect("ROUNDS: a number"));
    println!("one reader holding {hold} pauses, one writer; medians over {rounds} rounds, µs");
    println!(
        "{:<8} {:>8} {:>8} {:>8} {:>10}",
        "path", "p50", "p90", "p99", "calls"
    );
    let mut results = [
        (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
        Default::default(),
    ];
    for r in 0..rounds {
        // Alternate which path goes first.
        for direct in [r % 2 == 1, r % 2 == 0] {
            let lat = round(direct, hold);
            let res = &mut results[usize::from(direct)];
            res.0.push(percentile(&lat, 0.5));
            res.1.push(percentile(&lat, 0.9));
            res.2.push(percentile(&lat, 0.99));
            res.3.push(lat.len() as f64);
        }
    }
    for (name, (p50, p90, p99, calls)) in ["shared", "direct"].into_iter().zip(results) {
        println!(
            "{name:<8} {:>8.2} {:>8.2} {:>8.2} {:>10.0}",
            median(p50),
            median(p90),
            median(p99),
            median(calls)
        );
    }
}
