//! Write-locks every shard of a sharded map at once, in shard order: N locks of one class
//! held together (instance-order nesting), then drops the guards. Prints the time per lock
//! (lock and unlock) of the first round (new instance pairs recorded) and the median of the
//! later rounds (all pairs known; each later round repeated to span about 65,536 locks), beside the same loop over plain `parking_lot` locks, and
//! the validator's report count (0: shards taken in one order are valid). `fifo` drops the
//! guards' `Vec` as is (first taken, first released: every release is out of order), `lifo`
//! pops them (last taken, first released). With `threads` > 1, that many threads do the same
//! at once, each over shards of its own (one class for all: one construction line), started
//! together by a barrier before every round; one line per thread.
//!
//! Run: `cargo run --release -p instrumented-locks --example lock_all_shards -- 256 fifo
//! [rounds] [threads]`

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use instrumented_locks::RwLock;

fn per_lock(d: Duration, n: usize) -> f64 {
    d.as_nanos() as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Takes and releases all `n` shards, in `lifo` order or as the `Vec` drops.
fn round<G>(guards: Vec<G>, lifo: bool) {
    let mut gs = guards;
    if lifo {
        while let Some(g) = gs.pop() {
            drop(black_box(g));
        }
    }
    drop(black_box(gs));
}

/// One thread's rounds: ns per lock of each round over the validated shards, and over
/// plain parking_lot ones.
fn rounds_of(n: usize, lifo: bool, rounds: usize, start: &Barrier) -> (Vec<f64>, Vec<f64>) {
    let shards: Vec<RwLock<u64>> = (0..n).map(|_| RwLock::new(0)).collect();
    let peers: Vec<real_parking_lot::RwLock<u64>> =
        (0..n).map(|_| real_parking_lot::RwLock::new(0)).collect();
    let mut ours = Vec::new();
    let mut peer = Vec::new();
    for r in 0..rounds {
        // The first round once (its pairs are new); each later one repeated, so that a
        // measurement spans about 64 Ki locks, and the threads overlap between barriers.
        let reps = if r == 0 { 1 } else { (65_536 / n).max(1) };
        start.wait();
        let t = Instant::now();
        for _ in 0..reps {
            round(shards.iter().map(|l| l.write()).collect(), lifo);
        }
        ours.push(per_lock(t.elapsed(), n * reps));
        start.wait();
        let t = Instant::now();
        for _ in 0..reps {
            round(peers.iter().map(|l| l.write()).collect(), lifo);
        }
        peer.push(per_lock(t.elapsed(), n * reps));
    }
    (ours, peer)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(256, |s| s.parse().expect("N"));
    let lifo = match args.next().as_deref() {
        None | Some("fifo") => false,
        Some("lifo") => true,
        Some(other) => panic!("release order: fifo or lifo, not {other}"),
    };
    let rounds: usize = args.next().map_or(9, |s| s.parse().expect("rounds"));
    assert!(
        rounds >= 2,
        "rounds: at least 2 (the first is reported apart from the later ones)"
    );
    let threads: usize = args.next().map_or(1, |s| s.parse().expect("threads"));
    lockdep::set_max_depth(n + 8);
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || rounds_of(n, lifo, rounds, &start))
        })
        .collect();
    for (i, w) in workers.into_iter().enumerate() {
        let (ours, peer) = w.join().expect("a worker panicked");
        let first = ours[0];
        let later = median(ours[1..].to_vec());
        let peer_med = median(peer);
        let who = if threads > 1 {
            format!(" thread {i}/{threads}")
        } else {
            String::new()
        };
        println!(
            "N={n} {}{who}: first round {first:.0} ns/lock, later rounds (median) {later:.0} \
             ns/lock, parking_lot {peer_med:.0} ns/lock, later/parking_lot {:.1}; reports={}",
            if lifo { "lifo" } else { "fifo" },
            later / peer_med,
            lockdep::stats().reports
        );
    }
}
