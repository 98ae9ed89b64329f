//! Write-locks every shard of a sharded map at once, in shard order: N locks of one class
//! held together (instance-order nesting), then drops the guards. Prints the time per lock
//! (lock and unlock) of the first round (new instance pairs recorded) and the median of the
//! later rounds (all pairs known), beside the same loop over plain `parking_lot` locks, and
//! the validator's report count (0: shards taken in one order are valid). `fifo` drops the
//! guards' `Vec` as is (first taken, first released: every release is out of order), `lifo`
//! pops them (last taken, first released).
//!
//! Run: `cargo run --release -p instrumented-locks --example lock_all_shards -- 256 fifo [rounds]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use instrumented_locks::RwLock;

fn per_lock(d: Duration, n: usize) -> f64 {
    d.as_nanos() as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    lockdep::set_max_depth(n + 8);
    let shards: Vec<RwLock<u64>> = (0..n).map(|_| RwLock::new(0)).collect();
    let peers: Vec<real_parking_lot::RwLock<u64>> =
        (0..n).map(|_| real_parking_lot::RwLock::new(0)).collect();
    let mut ours = Vec::new();
    let mut peer = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let mut gs: Vec<_> = shards.iter().map(|l| l.write()).collect();
        if lifo {
            while let Some(g) = gs.pop() {
                drop(black_box(g));
            }
        }
        drop(black_box(gs));
        ours.push(per_lock(t.elapsed(), n));
        let t = Instant::now();
        let mut gs: Vec<_> = peers.iter().map(|l| l.write()).collect();
        if lifo {
            while let Some(g) = gs.pop() {
                drop(black_box(g));
            }
        }
        drop(black_box(gs));
        peer.push(per_lock(t.elapsed(), n));
    }
    let first = ours[0];
    let later = median(ours[1..].to_vec());
    let peer_med = median(peer);
    println!(
        "N={n} {}: first round {first:.0} ns/lock, later rounds (median) {later:.0} ns/lock, \
         parking_lot {peer_med:.0} ns/lock, later/parking_lot {:.1}; reports={}",
        if lifo { "lifo" } else { "fifo" },
        later / peer_med,
        lockdep::stats().reports
    );
}
