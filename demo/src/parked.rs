//! `demo scale`'s parked-reader cells: one reader parks on one address for a long time
//! (it sleeps while protecting it, then lets go and parks again at once), one writer
//! waits on that address, and `nw` other writers keep waiting on *other* addresses, which
//! short readers keep protecting so that those writers really wait (and, in hazptr's
//! shared scan, share batches with each other). The other writers' latency must not
//! contain the parked reader's hold time: an address-based wait never waits for a reader
//! of another address. liburcu's `synchronize_rcu`, a grace period, must wait for every
//! reader, the parked one included; it runs in the same process for comparison.
//!
//! Two levels:
//! - **hazptr**: `Domain::synchronize` (shared scan, both fence modes) and
//!   `synchronize_direct` on plain addresses; urcu-memb with `rcu_read_lock` sections.
//! - **lockdep**: dynamic keys. The parked reader is a lookup parked inside one bucket
//!   (`DynamicKey::with_bucket_protected`, the hook lockdep's own tests park readers with);
//!   the writers register and unregister keys of other buckets while lookups of those keys
//!   run; the key table waits with hazptr (the default) or with liburcu.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hazptr::{Domain, FenceMode};

use crate::latency::Histogram;
use crate::modes::WaitMode;
use crate::rcu;

/// The flavour of one parked-reader cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Shared,
    SharedAsym,
    Direct,
    Rcu,
    LockdepHazptr,
    LockdepRcu,
}

impl Kind {
    /// Every cell this binary can run, in table order.
    pub fn available() -> Vec<Kind> {
        let mut kinds = vec![Kind::Shared, Kind::SharedAsym, Kind::Direct];
        if rcu::AVAILABLE {
            kinds.push(Kind::Rcu);
        }
        kinds.push(Kind::LockdepHazptr);
        if rcu::AVAILABLE {
            kinds.push(Kind::LockdepRcu);
        }
        kinds
    }

    /// Row label.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Shared => "hazptr shared",
            Kind::SharedAsym => "hazptr shared asym",
            Kind::Direct => "hazptr direct",
            Kind::Rcu => "urcu-memb",
            Kind::LockdepHazptr => "lockdep key, hazptr",
            Kind::LockdepRcu => "lockdep key, urcu",
        }
    }
}

/// Parameters of one cell.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Timed window.
    pub window: Duration,
    /// How long the parked reader holds its address each time.
    pub hold: Duration,
    /// Writers on other addresses (one address each).
    pub nw: usize,
    /// How long a short reader holds an address (busy wait).
    pub short_hold: Duration,
}

/// What one cell measured.
pub struct Cell {
    /// Latency of the writers on other addresses.
    pub others: Histogram,
    /// Calls of those writers that took at least the parked reader's hold time.
    pub others_over_hold: u64,
    /// Latency of the writer on the parked address.
    pub parked: Histogram,
    /// hazptr domain counters over the window (none for the liburcu rows).
    pub stats: Option<hazptr::Stats>,
}

/// Busy-waits for `d`.
fn spin_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The start and stop flags of a window, and the barrier every thread passes first.
struct Window {
    start: Barrier,
    stop: AtomicBool,
}

impl Window {
    fn running(&self) -> bool {
        // Relaxed: a stop flag with no data attached.
        !self.stop.load(Ordering::Relaxed)
    }
}

/// One timed loop of `op`, recording each call's latency; also returns how many calls
/// took at least `hold`.
/// Runs the measured writers of one cell inside `s`: the parked one calls `op(0)`, the
/// others `op(1..=nw)`, all timed from the window's start to its stop. Returns the other
/// writers' merged histogram, how many of their calls lasted at least the parked hold, the
/// parked writer's histogram, and `domain`'s statistics over the window (none with `rcu`).
fn measure<'s, 'e: 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    w: &'e Window,
    cfg: &'e Config,
    rcu: bool,
    op: impl Fn(usize) + Send + Sync + Copy + 'e,
    domain: &Domain,
) -> (Histogram, u64, Histogram, Option<hazptr::Stats>) {
    let thread = move |i: usize| {
        s.spawn(move || {
            if rcu {
                rcu::register_thread();
            }
            timed_loop(w, cfg.hold, || op(i))
        })
    };
    let parked_writer = thread(0);
    let writers: Vec<_> = (1..=cfg.nw).map(thread).collect();
    w.start.wait();
    let before = domain.stats();
    // The measurement window (a duration, not a synchronization device).
    std::thread::sleep(cfg.window);
    // Relaxed: a stop flag.
    w.stop.store(true, Ordering::Relaxed);
    let (mut others, mut over_hold) = (Histogram::default(), 0u64);
    for h in writers {
        let (h, over) = h.join().expect("writer panicked");
        others.merge(&h);
        over_hold += over;
    }
    let parked = parked_writer.join().expect("parked writer panicked").0;
    let stats = (!rcu).then(|| delta(&domain.stats(), &before));
    (others, over_hold, parked, stats)
}

fn timed_loop(w: &Window, hold: Duration, mut op: impl FnMut()) -> (Histogram, u64) {
    let (mut h, mut over) = (Histogram::default(), 0u64);
    w.start.wait();
    while w.running() {
        let t = Instant::now();
        op();
        let took = t.elapsed();
        over += u64::from(took >= hold);
        h.record(took.as_nanos() as u64);
    }
    (h, over)
}

/// Runs the cell `kind`.
pub fn run_cell(kind: Kind, cfg: &Config) -> Cell {
    match kind {
        Kind::LockdepHazptr | Kind::LockdepRcu => run_lockdep(kind, cfg),
        _ => run_hazptr(kind, cfg),
    }
}

/// hazptr-level cell: address 0 is the parked one; writer `i` waits on address `i`.
fn run_hazptr(kind: Kind, cfg: &Config) -> Cell {
    let domain = Domain::new(if kind == Kind::SharedAsym {
        FenceMode::Asymmetric
    } else {
        FenceMode::Symmetric
    });
    let words: Vec<u64> = vec![0; cfg.nw + 1];
    let addr = |i: usize| &words[i] as *const u64;
    let rcu = kind == Kind::Rcu;
    // Threads: parked reader, parked writer, nw writers, nw short readers, this one.
    let w = Window {
        start: Barrier::new(2 * cfg.nw + 3),
        stop: AtomicBool::new(false),
    };
    let (others, over_hold, parked, stats) = std::thread::scope(|s| {
        let (w, domain, addr) = (&w, &domain, &addr);
        s.spawn(move || {
            // Parked before the window opens, so that no writer starts while it is not.
            let mut first = true;
            let mut park = || {
                if first {
                    w.start.wait();
                    first = false;
                }
                std::thread::sleep(cfg.hold);
            };
            loop {
                if rcu {
                    let entered = rcu::read_lock();
                    park();
                    if entered {
                        rcu::read_unlock();
                    }
                } else {
                    let g = domain.protect_addr(addr(0));
                    park();
                    drop(g);
                }
                if !w.running() {
                    break;
                }
            }
        });
        for i in 1..=cfg.nw {
            s.spawn(move || {
                if rcu {
                    rcu::register_thread();
                }
                w.start.wait();
                while w.running() {
                    if rcu {
                        let entered = rcu::read_lock();
                        spin_for(cfg.short_hold);
                        if entered {
                            rcu::read_unlock();
                        }
                    } else {
                        let g = domain.protect_addr(addr(i));
                        spin_for(cfg.short_hold);
                        drop(g);
                    }
                }
            });
        }
        let sync = move |i: usize| match kind {
            Kind::Direct => domain.synchronize_direct(addr(i)).expect("no guard held"),
            Kind::Rcu => rcu::synchronize_rcu(),
            _ => domain.synchronize(addr(i)).expect("no guard held"),
        };
        measure(s, w, cfg, rcu, sync, domain)
    });
    Cell {
        others,
        others_over_hold: over_hold,
        parked,
        stats,
    }
}

/// `n` registered keys whose buckets differ from `avoid` and from each other. Rejected
/// keys stay alive until the end, so the allocator cannot hand out a rejected address
/// again.
fn keys_outside(n: usize, avoid: usize) -> Vec<lockdep::DynamicKey> {
    let (mut keys, mut rejected) = (Vec::new(), Vec::new());
    let mut used = vec![avoid];
    while keys.len() < n {
        let key = lockdep::DynamicKey::new_unregistered("writer");
        if used.contains(&key.bucket()) {
            rejected.push(key);
        } else {
            used.push(key.bucket());
            key.register();
            keys.push(key);
        }
    }
    keys
}

/// lockdep-level cell: a lookup parks in the bucket of key `x`; a writer unregisters and
/// re-registers `x`; `nw` writers do the same with keys of other buckets, each looked up by
/// its own traffic thread.
fn run_lockdep(kind: Kind, cfg: &Config) -> Cell {
    let mode = if kind == Kind::LockdepRcu {
        WaitMode::Rcu
    } else {
        WaitMode::Hazptr
    };
    mode.install();
    let rcu = kind == Kind::LockdepRcu;
    // The parked lookup walks `x`'s bucket; the parked writer unregisters and registers
    // `x` itself (its bucket is a function of its address, registered or not).
    let x = lockdep::DynamicKey::new("parked-bucket");
    let keys = keys_outside(cfg.nw, x.bucket());
    let w = Window {
        start: Barrier::new(2 * cfg.nw + 3),
        stop: AtomicBool::new(false),
    };
    let global = Domain::global();
    let (others, over_hold, parked, stats) = std::thread::scope(|s| {
        let (w, x, keys) = (&w, &x, &keys);
        s.spawn(move || {
            if rcu {
                rcu::register_thread();
            }
            // Parked before the window opens, as in the hazptr-level cell.
            let mut first = true;
            loop {
                x.with_bucket_protected(|| {
                    if first {
                        w.start.wait();
                        first = false;
                    }
                    std::thread::sleep(cfg.hold);
                });
                if !w.running() {
                    break;
                }
            }
        });
        for key in keys {
            s.spawn(move || {
                if rcu {
                    rcu::register_thread();
                }
                w.start.wait();
                while w.running() {
                    std::hint::black_box(key.is_registered());
                    spin_for(cfg.short_hold);
                }
            });
        }
        let cycle = |k: &lockdep::DynamicKey| {
            k.unregister();
            k.register();
        };
        let op = move |i: usize| {
            if i == 0 {
                cycle(x)
            } else {
                cycle(&keys[i - 1])
            }
        };
        measure(s, w, cfg, rcu, op, global)
    });
    drop(keys);
    drop(x);
    WaitMode::Hazptr.install();
    Cell {
        others,
        others_over_hold: over_hold,
        parked,
        stats,
    }
}

/// `after - before`, counter by counter (the counters the table prints).
fn delta(after: &hazptr::Stats, before: &hazptr::Stats) -> hazptr::Stats {
    let mut d = *after;
    d.synchronize_calls -= before.synchronize_calls;
    d.synchronize_waits -= before.synchronize_waits;
    d.heavy_barriers -= before.heavy_barriers;
    d.shared_batches -= before.shared_batches;
    d.batch_waiters -= before.batch_waiters;
    d.handoffs -= before.handoffs;
    d.released_early -= before.released_early;
    d.bloom_false_positives -= before.bloom_false_positives;
    d
}
