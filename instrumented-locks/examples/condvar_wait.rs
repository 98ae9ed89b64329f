//! A condvar bug: a consumer locks the queue, then the statistics, and waits on the queue's
//! condvar *still holding the statistics lock*. The wait re-locks the queue under the
//! statistics lock: stats -> queue, the inverse of queue -> stats. A reporter thread that
//! takes queue then stats while the consumer sleeps deadlocks with it. Lockdep validates the
//! re-lock of every wait, so the bug is reported on the first wait, even though this run
//! completes. The fix (drop the statistics guard before waiting) is silent.
//!
//! Run: `cargo run -p instrumented-locks --example condvar_wait`

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use instrumented_locks::{Condvar, Mutex};

struct Shared {
    queue: Mutex<VecDeque<u32>>,
    ready: Condvar,
    stats: Mutex<u64>,
}

static REPORTS: AtomicUsize = AtomicUsize::new(0);

fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        queue: Mutex::named(VecDeque::new(), "queue"),
        ready: Condvar::new(),
        stats: Mutex::named(0, "stats"),
    })
}

fn producer(s: Arc<Shared>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        s.queue.lock().push_back(42);
        s.ready.notify_one();
    })
}

/// The bug: the statistics guard is alive across the wait.
fn consume_buggy(s: &Arc<Shared>) -> u32 {
    let mut q = s.queue.lock();
    let p = producer(s.clone()); // blocks on the queue until we wait
    let mut stats = s.stats.lock();
    *stats += 1;
    while q.is_empty() {
        s.ready.wait(&mut q);
    }
    let v = q.pop_front().unwrap();
    drop((stats, q));
    p.join().unwrap();
    v
}

/// The fix: wait first, then take the statistics lock.
fn consume_fixed(s: &Arc<Shared>) -> u32 {
    let mut q = s.queue.lock();
    let p = producer(s.clone());
    s.ready.wait_while(&mut q, |q| q.is_empty());
    *s.stats.lock() += 1;
    let v = q.pop_front().unwrap();
    drop(q);
    p.join().unwrap();
    v
}

fn main() {
    lockdep::set_policy(lockdep::Policy::Callback(Arc::new(
        |r: &lockdep::Report| {
            // Relaxed: a counter read after the threads are joined.
            REPORTS.fetch_add(1, Ordering::Relaxed);
            eprintln!("{r}");
        },
    )));

    println!("waiting with the statistics lock held:");
    let v = consume_buggy(&shared());
    // Relaxed: see above.
    let buggy = REPORTS.swap(0, Ordering::Relaxed);
    println!("=> got {v}, {buggy} report(s)\n");

    lockdep::reset();
    println!("waiting first, statistics after:");
    let v = consume_fixed(&shared());
    // Relaxed: see above.
    let fixed = REPORTS.load(Ordering::Relaxed);
    println!("=> got {v}, {fixed} report(s)");
    assert_eq!((buggy, fixed), (1, 0));
}
