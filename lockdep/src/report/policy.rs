//! What happens to a report: print it, panic with it, or hand it to a callback. The
//! delivery itself (deduplication, test scopes, re-entrancy) is [`delivery`](super::delivery).
//!
//! Reports are always delivered *after* the validator has released its internal locks and
//! finished updating its state, so a handler may panic (the validator stays consistent) or
//! take locks of its own (they are validated like any other). The validator never turns
//! itself off after a report, unlike the kernel's `debug_locks_off()`.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use super::types::Report;
use crate::fork::{self, Participant, Rank};

/// A report callback.
pub type Handler = Arc<dyn Fn(&Report) + Send + Sync + 'static>;

/// The reporting policy (process-wide).
///
/// Whatever the policy, each distinct report is printed or handed to the callback once and its
/// repeats are counted ([`set_report_repeats`](crate::set_report_repeats) asks for every
/// occurrence), and a thread in a [`test_scope`](crate::test_scope) panics at every report it
/// makes. A report that a declared suppression matches ([`suppress`](crate::suppress)) goes
/// to no policy: it is only counted.
#[derive(Clone, Default)]
pub enum Policy {
    /// Print the report to the process's standard error and continue (the default). It is
    /// written to the descriptor directly, in one piece, so it is seen under `cargo test`
    /// without `--nocapture` (the test harness captures only `eprintln!` and friends) and
    /// never interleaves with another report.
    #[default]
    Stderr,
    /// Panic with the report's text, on the thread that found the problem, before the lock
    /// operation that caused it takes effect; every occurrence panics, also a repeat of a
    /// report made before. Where a panic cannot unwind (a thread-exit report, or a report made
    /// while the thread is already panicking, e.g. from a guard's drop during unwinding) the
    /// report is printed to standard error instead.
    Panic,
    /// Call the function and continue. It runs on the thread that found the problem, with no
    /// validator lock held. It may do anything: take locks (instrumented ones too: they are
    /// tracked and validated, and a report they cause is handed to the function after it
    /// returns, not from inside it, and also printed at once), allocate, log, call back into
    /// lockdep, or panic (the panic propagates to the lock operation's caller after the
    /// other reports of the same operation were delivered; the validator is not affected).
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

/// The policy in force. Poisoning is ignored: no handler runs under this lock (delivery
/// works on a clone), and a poisoned policy must never stop reports.
static POLICY: RwLock<Policy> = RwLock::new(Policy::Stderr);

/// Whether [`POLICY`] is `Policy::Panic`, readable without its lock (see [`panics`]).
static PANICS: AtomicBool = AtomicBool::new(false);

static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork::nothing,
};

fn fork_prepare() -> Box<dyn Any> {
    Box::new(POLICY.write().unwrap_or_else(PoisonError::into_inner))
}

/// Sets the reporting policy and returns the previous one. Thread-safe; takes effect for
/// reports delivered after the call (also from inside a report handler).
pub fn set_policy(policy: Policy) -> Policy {
    fork::join(Rank::Policy, &FORK);
    let mut current = POLICY.write().unwrap_or_else(PoisonError::into_inner);
    // Relaxed: a shortcut for the replay of a repeat (see `panics`); stored under the write
    // lock, so two racing calls leave it matching the policy that stays.
    PANICS.store(matches!(policy, Policy::Panic), Ordering::Relaxed);
    std::mem::replace(&mut *current, policy)
}

/// Whether the policy is `Policy::Panic`, without its lock: a repeat counted without being
/// made again (see `report::Replay`) is only valid where no occurrence panics.
pub(crate) fn panics() -> bool {
    // Relaxed: see `set_policy`. A policy set concurrently with an acquisition applies to
    // the reports made after the call returns, which this load sees when they are ordered.
    PANICS.load(Ordering::Relaxed)
}

/// A copy of the policy in force (the lock is held only to clone it).
pub(crate) fn current() -> Policy {
    fork::join(Rank::Policy, &FORK);
    POLICY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}
