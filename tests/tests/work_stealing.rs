//! A lock held across a work-stealing fork-join, re-locked by a job the waiting thread steals:
//! to the OS, and to a per-thread validator, the same thread locking the same mutex twice.
//! Scenario C28 in the project's list of validator scenarios; public sources: rayon-rs/rayon
//! issues #592, #1174, #1181. The report must come *before* the inner lock blocks, or the
//! pool hangs; the policy here records the report and panics, so the test cannot hang.
//!
//! The schedule is forced with channels (every wait bounded): job A takes M and forks; the
//! forked half is stolen by the other worker, which queues job B; the first worker, waiting
//! for its stolen half, steals job B, which locks M.

use std::panic::Location;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lockdep::{LockMap, Mode, Policy, Report};

/// A validated `std::sync::Mutex`.
struct Tracked {
    map: LockMap,
    raw: Mutex<()>,
}

struct TrackedGuard<'a> {
    map: &'a LockMap,
    _raw: MutexGuard<'a, ()>,
}

impl Tracked {
    #[track_caller]
    fn new() -> Tracked {
        Tracked {
            map: LockMap::named_of_type::<()>("Mutex", "M"),
            raw: Mutex::new(()),
        }
    }

    #[track_caller]
    fn lock(&self) -> TrackedGuard<'_> {
        lockdep::acquire(
            &self.map,
            0,
            Mode::Exclusive,
            false,
            None,
            Location::caller(),
        );
        TrackedGuard {
            map: &self.map,
            _raw: self.raw.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

impl Drop for TrackedGuard<'_> {
    fn drop(&mut self) {
        lockdep::release(self.map, Location::caller());
    }
}

static SERIAL: Mutex<()> = Mutex::new(());
static REPORTS: Mutex<Vec<Report>> = Mutex::new(Vec::new());

fn start() -> MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockdep::reset();
    lockdep::set_policy(Policy::Callback(Arc::new(|r: &Report| {
        REPORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
        panic!("lockdep report");
    })));
    take();
    serial
}

fn take() -> Vec<Report> {
    std::mem::take(&mut *REPORTS.lock().unwrap_or_else(|e| e.into_inner()))
}

const WAIT: Duration = Duration::from_secs(20);

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .thread_name(|i| format!("worker-{i}"))
        .build()
        .expect("a pool")
}

#[test]
fn a_stolen_job_that_relocks_a_held_mutex_is_reported_before_it_blocks() {
    let _s = start();
    let m: &'static Tracked = Box::leak(Box::new(Tracked::new()));
    let (stolen_tx, stolen_rx) = mpsc::channel::<()>();
    let (b_tx, b_rx) = mpsc::channel::<()>();
    let line_a = line!() + 6;
    let line_b = line!() + 16;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool().install(|| {
            rayon::scope(|s| {
                s.spawn(move |s| {
                    let _held = m.lock(); // job A
                    let (stolen, ran) = rayon::join(
                        // Runs here: wait until the other half was stolen.
                        move || stolen_rx.recv_timeout(WAIT).map_err(|_| "not stolen"),
                        // Stolen by the other worker: queue job B there, stay busy until a
                        // thread picked it up.
                        move || {
                            stolen_tx.send(()).unwrap();
                            let b_tx = b_tx.clone();
                            s.spawn(move |_| {
                                b_tx.send(()).unwrap();
                                let _again = m.lock(); // job B
                            });
                            b_rx.recv_timeout(WAIT).map_err(|_| "job B never ran")
                        },
                    );
                    stolen.and(ran).expect("the forced schedule");
                });
            })
        })
    }));
    let r = take();
    assert!(outcome.is_err(), "job B's lock was not reported: {r:#?}");
    let [Report::RecursiveLocking(s)] = &r[..] else {
        panic!("expected one recursive locking report, got {r:#?}");
    };
    assert_eq!(s.holding.site.line(), line_a, "the holder is job A's lock");
    assert_eq!(s.acquiring.site.line(), line_b, "the re-lock is job B's");
    assert_eq!(s.holding.instance, s.acquiring.instance);
    assert!(s.thread.name.starts_with("worker-"), "{:?}", s.thread);
    assert_eq!(lockdep::held_count(), 0);
}

#[test]
fn a_fork_join_under_a_lock_no_job_takes_is_silent() {
    let _s = start();
    let m: &'static Tracked = Box::leak(Box::new(Tracked::new()));
    let other: &'static Tracked = Box::leak(Box::new(Tracked::new()));
    let sum = pool().install(|| {
        let _held = m.lock();
        let (a, b) = rayon::join(
            || {
                let _o = other.lock();
                (0..100u64).sum::<u64>()
            },
            || (100..200u64).sum::<u64>(),
        );
        a + b
    });
    assert_eq!(sum, (0..200).sum());
    assert!(take().is_empty());
}
