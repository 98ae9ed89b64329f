//! Dining philosophers: each philosopher picks up the left fork, then the right one. Five
//! philosophers eating at once can deadlock, each holding one fork. Lockdep reports the
//! five-fork cycle from a run where they eat one at a time, then the classic fix (the last
//! philosopher picks up the right fork first) runs silently.
//!
//! Each fork gets its own lock class (a static key per fork), so the report names the whole
//! cycle. (With one class for all forks, lockdep would instead report the first nested fork
//! as "possible recursive locking": two locks of one class need a nesting annotation.)
//!
//! Run: `cargo run -p instrumented-locks --example dining_philosophers`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use instrumented_locks::Mutex;
use lockdep::LockClassKey;

const N: usize = 5;
static FORK_KEYS: [LockClassKey; N] = [const { LockClassKey::new() }; N];
const FORK_NAMES: [&str; N] = ["fork0", "fork1", "fork2", "fork3", "fork4"];

static REPORTS: AtomicUsize = AtomicUsize::new(0);

fn table() -> Arc<Vec<Mutex<u32>>> {
    Arc::new(
        (0..N)
            .map(|i| Mutex::with_class(0, &FORK_KEYS[i], FORK_NAMES[i]))
            .collect(),
    )
}

/// Philosopher `i` eats once: fork `first`, then fork `second`.
fn eat(forks: &[Mutex<u32>], first: usize, second: usize) {
    let mut a = forks[first].lock();
    let mut b = forks[second].lock();
    *a += 1;
    *b += 1;
}

/// Runs the philosophers one after the other (no real deadlock), each on its own thread.
fn dinner(order: fn(usize) -> (usize, usize)) -> usize {
    // Relaxed: read after the threads are joined.
    REPORTS.store(0, Ordering::Relaxed);
    let forks = table();
    for i in 0..N {
        let forks = forks.clone();
        std::thread::Builder::new()
            .name(format!("philosopher{i}"))
            .spawn(move || {
                let (first, second) = order(i);
                eat(&forks, first, second);
            })
            .unwrap()
            .join()
            .unwrap();
    }
    // Relaxed: see above.
    REPORTS.load(Ordering::Relaxed)
}

fn main() {
    lockdep::set_policy(lockdep::Policy::Callback(Arc::new(
        |r: &lockdep::Report| {
            // Relaxed: a counter read after the threads are joined.
            REPORTS.fetch_add(1, Ordering::Relaxed);
            eprintln!("{r}");
        },
    )));

    println!("left fork first, for everyone:");
    let buggy = dinner(|i| (i, (i + 1) % N));
    println!("=> {buggy} report(s)\n");

    lockdep::reset();
    println!("the last philosopher takes the lower-numbered fork first:");
    let fixed = dinner(|i| {
        let (l, r) = (i, (i + 1) % N);
        (l.min(r), l.max(r))
    });
    println!("=> {fixed} report(s)");
    assert_eq!((buggy, fixed), (1, 0));
}
