//! The hung-lock watchdog and the actual-deadlock report: threads blocked on instrumented
//! locks, with the wait-for chain behind each (who holds the lock it waits for, what that
//! thread waits for, ...), and cycles among them reported as a deadlock happening now, with
//! the potential deadlock the validator reported before, if any.
//!
//! Ideas: the kernel's hung-task detector (`kernel/hung_task.c`: a task blocked longer than a
//! timeout, checked from a thread of its own) and the wait-for graph of deadlock detectors
//! (parking_lot's `deadlock_detection`, which finds cycles among parked threads). Here the
//! edges come from the held-lock records every thread publishes, so the report names lock
//! classes and the sites every lock was acquired at, as lockdep's own reports do.
//!
//! - [`detect`]: the wait-for graph of one moment and the chains and cycles in it.
//! - [`types`]: the reports and their text.
//!
//! A thread asleep in a condvar wait is in no chain as a waiter (it waits for a notification,
//! not for a lock's holder) nor as the holder of the wait's mutex (it released it); it may end
//! a chain as the holder of another lock it kept while waiting.
//!
//! Off by default, and then there is no thread. [`start_watchdog`] (or the environment
//! variable [`WATCHDOG_ENV`], read at the first contended acquisition) starts one thread that
//! copies the records every quarter of the threshold (at least every millisecond, at most
//! every second): its cost is bounded by the number of threads that hold locks times their
//! depth, per period, and it never blocks on a lock the observed threads hold.

mod detect;
mod types;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

pub use types::{Deadlock, HungWait, WatchdogReport};

use crate::graph_lock::graph_lock;
use crate::held::record::{self, Holder, Snapshot};
use crate::report::{self, build, recent, ThreadLocks};
use crate::thread;
use detect::{still_blocked, Chain, WaitFor};

/// The environment variable that starts the watchdog: its threshold in milliseconds
/// (`LOCKDEP_WATCHDOG=2000`). Read once, at the first contended acquisition.
pub const WATCHDOG_ENV: &str = "LOCKDEP_WATCHDOG";

/// What the watchdog calls for each report; it runs on the watchdog's thread with no lock of
/// the validator held, and may do anything, including ending the process.
pub type WatchdogHandler = Arc<dyn Fn(&WatchdogReport) + Send + Sync>;

struct Config {
    threshold: Duration,
    handler: Option<WatchdogHandler>,
    /// Whether the thread runs (it stops when `threshold` is zero).
    running: bool,
}

static CONFIG: Mutex<Config> = Mutex::new(Config {
    threshold: Duration::ZERO,
    handler: None,
    running: false,
});

/// Whether anything looks at the waits of blocked threads: 0 not asked yet, 1 no, 2 yes (the
/// watchdog was started, [`WATCHDOG_ENV`] holds a threshold, or [`deadlocks_now`] was called).
/// Once yes, yes for the rest of the process.
static WATCHED: AtomicU8 = AtomicU8::new(0);

/// Whether anything looks at the waits of blocked threads now or will: the watchdog was
/// started (or [`WATCHDOG_ENV`] holds a threshold that starts it) or [`deadlocks_now`] was
/// called, ever. Until then, a lock wrapper may let a thread block where no announced wait
/// shows it (instrumented-locks' `Condvar` then lets a notification move its waiter onto the
/// mutex's queue, as parking_lot does, instead of waking it to re-lock the mutex as an
/// announced wait; that costs the notify-while-holding pattern a second wake-up). Lock-free:
/// one relaxed load after the first call, which reads the environment. Thread-safe.
pub fn waits_watched() -> bool {
    // Relaxed (all three): an advisory flag; nothing is read through it. A wait that misses a
    // concurrent start is one wait the new watchdog does not see.
    match WATCHED.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => {
            let env = matches!(env_threshold(), Some(Ok(_)));
            let _ = WATCHED.compare_exchange(
                0,
                if env { 2 } else { 1 },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            WATCHED.load(Ordering::Relaxed) == 2
        }
    }
}

/// From now on, waits are looked at (see [`waits_watched`]).
fn mark_watched() {
    // Relaxed: see `waits_watched`.
    WATCHED.store(2, Ordering::Relaxed);
}

/// Starts the watchdog, or changes its threshold if it runs: a thread blocked on an
/// instrumented lock whose wait-for chain made no progress for `threshold` is reported, a
/// cycle as [`WatchdogReport::Deadlock`], otherwise as [`WatchdogReport::Hung`]; each wait
/// once. Reports go to the handler ([`set_watchdog_handler`]), by default to standard error.
/// A zero `threshold` stops it ([`stop_watchdog`]).
///
/// Only waits the lock wrappers announce ([`lock_contended`](crate::lock_contended)) are
/// seen. Thread-safe.
///
/// # Errors
///
/// The error of spawning the watchdog's thread.
pub fn start_watchdog(threshold: Duration) -> std::io::Result<()> {
    let mut c = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    c.threshold = threshold;
    if !threshold.is_zero() {
        mark_watched();
    }
    if threshold.is_zero() || c.running {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("lockdep-watchdog".to_owned())
        .spawn(run)?;
    c.running = true;
    Ok(())
}

/// Stops the watchdog (its thread ends within one period). Thread-safe.
pub fn stop_watchdog() {
    CONFIG.lock().unwrap_or_else(|e| e.into_inner()).threshold = Duration::ZERO;
}

/// Sets what the watchdog does with a report (`None`: write it to standard error, the
/// default). Thread-safe.
pub fn set_watchdog_handler(handler: Option<WatchdogHandler>) {
    CONFIG.lock().unwrap_or_else(|e| e.into_inner()).handler = handler;
}

/// What [`WATCHDOG_ENV`] asks for: nothing if unset, a threshold if it holds a positive
/// number of milliseconds, else the value it holds (which starts no watchdog).
fn env_threshold() -> Option<Result<Duration, String>> {
    let v = std::env::var(WATCHDOG_ENV).ok()?;
    Some(match v.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(v),
    })
}

/// Starts the watchdog if [`WATCHDOG_ENV`] holds a threshold in milliseconds; once.
pub(crate) fn start_from_env_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| match env_threshold() {
        None => {}
        Some(Ok(threshold)) => {
            if let Err(e) = start_watchdog(threshold) {
                report::write_stderr(&format!("lockdep: watchdog not started: {e}\n"));
            }
        }
        Some(Err(v)) => report::write_stderr(&format!(
            "lockdep: {WATCHDOG_ENV}={v:?} is not a threshold in milliseconds; no watchdog\n"
        )),
    });
}

/// The deadlocks happening now: every cycle of threads blocked on each other's instrumented
/// locks, with no threshold (each member is checked twice, so that a cycle seen across
/// copies made at different moments is never reported). Thread-safe; takes the graph lock if
/// there is a cycle. What parking_lot's `deadlock::check_deadlock` answers, with lock names.
pub fn deadlocks_now() -> Vec<Deadlock> {
    mark_watched();
    let snaps = thread::snapshots();
    let wf = WaitFor::new(&snaps);
    let cycles = wf.cycles();
    if cycles.is_empty() {
        return Vec::new();
    }
    let again = thread::snapshots();
    cycles
        .into_iter()
        .filter(|c| still_blocked(&wf, c, &again))
        .filter_map(|c| deadlock(&snaps, &[], &c))
        .collect()
}

/// The report of the cycle `cycle` (with `lead_in` blocked behind it) among `snaps`.
fn deadlock(snaps: &[Snapshot], lead_in: &[usize], cycle: &[usize]) -> Option<Deadlock> {
    let (threads, blocked_behind) = {
        let g = graph_lock();
        let now = record::now_ns();
        let tl = |i: &usize| build::thread_locks(&g.graph, &snaps[*i], now);
        let threads: Option<Vec<ThreadLocks>> = cycle.iter().map(tl).collect();
        (threads?, lead_in.iter().filter_map(tl).collect::<Vec<_>>())
    };
    let classes: Vec<String> = threads
        .iter()
        .flat_map(|t| {
            t.held
                .iter()
                .chain(t.waiting.as_ref().map(|w| &w.lock))
                .map(|l| l.class_name.clone())
        })
        .collect();
    Some(Deadlock {
        threads,
        blocked_behind,
        earlier: recent::matching(&classes).map(Box::new),
    })
}

/// What the watchdog remembers of one wait (a holding's wait number).
struct Seen {
    /// The chain's state when it was last copied: each member's holding, wait number and, for
    /// the last one of a path, its write counter (it moves when that thread makes progress).
    signature: Vec<(Holder, Option<u64>, u64)>,
    /// When the chain took that state (nanoseconds on the wait clock).
    stable_since: u64,
    reported: bool,
}

fn signature(
    wf: &WaitFor<'_>,
    snaps: &[Snapshot],
    members: &[usize],
    path: bool,
) -> Vec<(Holder, Option<u64>, u64)> {
    members
        .iter()
        .enumerate()
        .map(|(k, &m)| {
            let (h, c) = wf.wait_id(m);
            let last = path && k + 1 == members.len();
            (h, c, if last { snaps[m].progress } else { 0 })
        })
        .collect()
}

/// The watchdog's thread.
fn run() {
    let mut seen: HashMap<(Holder, u64), Seen> = HashMap::new();
    loop {
        let (threshold, handler) = {
            let mut c = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
            if c.threshold.is_zero() {
                c.running = false;
                return;
            }
            (c.threshold, c.handler.clone())
        };
        let period = (threshold / 4).clamp(Duration::from_millis(1), Duration::from_secs(1));
        std::thread::sleep(period);
        for r in check(&mut seen, threshold) {
            match &handler {
                Some(h) => h(&r),
                None => report::write_stderr(&r.to_string()),
            }
        }
    }
}

/// One round: copies the records, updates what is remembered of each wait, and returns the
/// reports due.
fn check(seen: &mut HashMap<(Holder, u64), Seen>, threshold: Duration) -> Vec<WatchdogReport> {
    let snaps = thread::snapshots();
    let wf = WaitFor::new(&snaps);
    let now = record::now_ns();
    let limit = threshold.as_nanos() as u64;
    let mut live = Vec::new();
    let mut due: Vec<(usize, Chain)> = Vec::new();
    for (i, s) in snaps.iter().enumerate() {
        // A condvar wait's sleep is not a hung lock wait: it waits for a notification, which
        // the watchdog cannot judge. Once woken, its re-lock is a lock wait like any other.
        let Some(w) = s.wait.filter(|w| w.lock().is_some()) else {
            continue;
        };
        let key = (s.holder, w.count);
        live.push(key);
        let chain = wf.chain(i);
        let sig = match &chain {
            Chain::Path(p) => signature(&wf, &snaps, p, true),
            Chain::Cycle { lead_in, cycle } => {
                let mut all = lead_in.clone();
                all.extend(cycle);
                signature(&wf, &snaps, &all, false)
            }
        };
        let e = seen.entry(key).or_insert(Seen {
            signature: sig.clone(),
            // First seen: the chain may have been like this since the wait began.
            stable_since: w.since_ns,
            reported: false,
        });
        if e.signature != sig {
            e.signature = sig;
            e.stable_since = now;
        }
        if !e.reported && now.saturating_sub(e.stable_since) >= limit {
            due.push((i, chain));
        }
    }
    seen.retain(|k, _| live.contains(k));
    let mut out = Vec::new();
    if due.is_empty() {
        return out;
    }
    let again = thread::snapshots();
    for (i, chain) in due {
        let key = (snaps[i].holder, snaps[i].wait.map_or(0, |w| w.count));
        if seen.get(&key).is_some_and(|e| e.reported) {
            continue; // reported as a member of a cycle this round
        }
        match chain {
            Chain::Cycle { lead_in, cycle } => {
                let done = |m: &usize| {
                    let k = (snaps[*m].holder, snaps[*m].wait.map_or(0, |w| w.count));
                    seen.get(&k).is_some_and(|e| e.reported)
                };
                if cycle.iter().all(done) {
                    // Reported from another of its threads this round.
                    if let Some(e) = seen.get_mut(&key) {
                        e.reported = true;
                    }
                    continue;
                }
                if !still_blocked(&wf, &cycle, &again) {
                    continue;
                }
                // The whole cycle once (and the waits behind it, each in its own report).
                for &m in &cycle {
                    let k = (snaps[m].holder, snaps[m].wait.map_or(0, |w| w.count));
                    if let Some(e) = seen.get_mut(&k) {
                        e.reported = true;
                    }
                }
                if let Some(e) = seen.get_mut(&key) {
                    e.reported = true;
                }
                if let Some(d) = deadlock(&snaps, &lead_in, &cycle) {
                    out.push(WatchdogReport::Deadlock(d));
                }
            }
            Chain::Path(path) => {
                if let Some(e) = seen.get_mut(&key) {
                    e.reported = true;
                }
                let stalled = seen
                    .get(&key)
                    .map_or(0, |e| now.saturating_sub(e.stable_since));
                let g = graph_lock();
                let chain: Vec<ThreadLocks> = path
                    .iter()
                    .filter_map(|&m| build::thread_locks(&g.graph, &snaps[m], now))
                    .collect();
                drop(g);
                out.push(WatchdogReport::Hung(HungWait {
                    chain,
                    stalled_for: Duration::from_nanos(stalled),
                }));
            }
        }
    }
    out
}
