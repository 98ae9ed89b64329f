//! What happens to a report: print it, panic with it, or hand it to a callback.
//!
//! Reports are always delivered *after* the validator has released its internal locks and
//! finished updating its state, so a handler may panic (the validator stays consistent) or
//! take locks of its own (they are validated like any other). The validator never turns
//! itself off after a report, unlike the kernel's `debug_locks_off()`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use super::types::Report;

/// A report callback.
pub type Handler = Arc<dyn Fn(&Report) + Send + Sync + 'static>;

/// The reporting policy (process-wide).
#[derive(Clone, Default)]
pub enum Policy {
    /// Print the report to stderr and continue (the default).
    #[default]
    Stderr,
    /// Panic with the report's text, on the thread that found the problem, before the lock
    /// operation that caused it takes effect. Where a panic cannot unwind (a thread-exit
    /// report, or a report made while the thread is already panicking, e.g. from a guard's
    /// drop during unwinding) the report is printed to stderr instead.
    Panic,
    /// Call the function and continue. It runs on the thread that found the problem, with no
    /// validator lock held; it may panic.
    Callback(Handler),
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Policy::Stderr => f.write_str("Stderr"),
            Policy::Panic => f.write_str("Panic"),
            Policy::Callback(_) => f.write_str("Callback(..)"),
        }
    }
}

/// The policy in force. Poisoning is ignored: a handler that panics while it runs holds no
/// guard of this lock (it runs on a clone), and a poisoned policy must never stop reports.
static POLICY: RwLock<Policy> = RwLock::new(Policy::Stderr);
static DELIVERED: AtomicU64 = AtomicU64::new(0);

/// Sets the reporting policy and returns the previous one. Thread-safe; takes effect for
/// reports delivered after the call.
pub fn set_policy(policy: Policy) -> Policy {
    let mut current = POLICY.write().unwrap_or_else(PoisonError::into_inner);
    std::mem::replace(&mut *current, policy)
}

/// The number of reports delivered since the process started (never reset).
pub(crate) fn delivered() -> u64 {
    // Relaxed: a statistic.
    DELIVERED.load(Ordering::Relaxed)
}

/// Delivers a batch of reports according to the policy. Must be called with no validator
/// lock held and no borrow of the thread state.
pub(crate) fn deliver(reports: Vec<Report>) {
    for r in reports {
        deliver_one(&r, false);
    }
}

/// Delivers one report from a context that cannot unwind (a thread-local destructor).
pub(crate) fn deliver_no_unwind(r: &Report) {
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deliver_one(r, true)));
    if caught.is_err() {
        eprintln!("{r}");
    }
}

fn deliver_one(r: &Report, no_unwind: bool) {
    // Relaxed: a statistic.
    DELIVERED.fetch_add(1, Ordering::Relaxed);
    let policy = POLICY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    match policy {
        Policy::Stderr => eprintln!("{r}"),
        // A second panic while unwinding would abort the process: print instead.
        Policy::Panic if no_unwind || std::thread::panicking() => eprintln!("{r}"),
        Policy::Panic => panic!("lockdep: {r}"),
        Policy::Callback(h) => h(r),
    }
}
