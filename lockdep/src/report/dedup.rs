//! Which reports are printed: each distinct report once, its repeats only counted.
//!
//! A report's identity ([`identity`]) is what it is about: its kind, the classes it names (for
//! a lock without a class, the lock's name), the sites, and the modes; for a circular
//! dependency, its set of classes (the kernel prints each cycle once too). A repeat is never
//! printed nor handed to a callback unless every occurrence was asked for
//! ([`set_report_repeats`](crate::set_report_repeats)), but it is counted, per kind. Capacity
//! reports are not deduplicated but rate limited by episode ([`episode`]).
//!
//! Deduplication decides output only: the caller still panics for every occurrence where
//! that is asked for (`Policy::Panic`, a test scope).

use std::any::Any;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use hashbrown::HashSet;

use super::episode;
use super::types::{LockDesc, Report, ReportKind};
use crate::fork::{self, Participant, Rank};
use crate::limits::MAX_DISTINCT_REPORTS;
use crate::settings;

/// The identities of the reports delivered since the last reset (at most
/// [`MAX_DISTINCT_REPORTS`]). A leaf lock: nothing else is taken while it is held. `None`
/// until the first report.
static SEEN: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

const KINDS: usize = ReportKind::ALL.len();
/// First occurrences delivered, per kind (never reset).
static DISTINCT: [AtomicU64; KINDS] = [const { AtomicU64::new(0) }; KINDS];
/// Repeats not delivered, per kind (never reset).
static SUPPRESSED: [AtomicU64; KINDS] = [const { AtomicU64::new(0) }; KINDS];

static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork::nothing,
};

fn fork_prepare() -> Box<dyn Any> {
    Box::new(lock())
}

fn lock() -> std::sync::MutexGuard<'static, Option<HashSet<u64>>> {
    fork::join(Rank::Dedup, &FORK);
    // A panic under this lock could only be a validator bug; the set stays usable.
    SEEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What [`should_deliver`] decided.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Print it, or hand it to the callback.
    Deliver,
    /// A repeat of a report delivered since the last reset: counted, not delivered.
    Repeat,
    /// A capacity report whose episode was delivered before: counted, not delivered.
    Held,
}

/// Is `r` to be delivered (printed, or handed to the callback)? Yes for the first occurrence
/// of each distinct report, for a rate-limited capacity episode that is due, and for every
/// occurrence when repeats are asked for; the rest are counted. Thread-safe; takes a leaf
/// lock.
pub(crate) fn should_deliver(r: &Report) -> Verdict {
    let kind = r.kind().index();
    let mut repeat = Verdict::Repeat;
    let first = match identity(r) {
        None => {
            repeat = Verdict::Held;
            match r {
                Report::CapacityExhausted { episode, .. } => episode::is_delivered(*episode),
                _ => true,
            }
        }
        Some(id) => {
            let mut guard = lock();
            let seen = guard.get_or_insert_with(HashSet::new);
            if seen.contains(&id) {
                false
            } else {
                // A full set no longer remembers new reports: they are delivered every time.
                if seen.len() < MAX_DISTINCT_REPORTS {
                    seen.insert(id);
                }
                true
            }
        }
    };
    let deliver = first || settings::report_repeats();
    if first {
        // Relaxed: a statistic.
        DISTINCT[kind].fetch_add(1, Ordering::Relaxed);
    } else if !deliver {
        count_repeat(kind);
    }
    if deliver {
        Verdict::Deliver
    } else {
        repeat
    }
}

/// Counts a repeat of a report of kind `kind` (its [`ReportKind::index`]) that was not
/// delivered. Lock-free.
pub(crate) fn count_repeat(kind: usize) {
    // Relaxed: a statistic.
    SUPPRESSED[kind].fetch_add(1, Ordering::Relaxed);
}

/// Forgets which reports were seen (the validator's reset): each is delivered once more.
pub(crate) fn clear() {
    if let Some(seen) = lock().as_mut() {
        seen.clear();
    }
    episode::clear();
}

/// `(kind, first occurrences delivered, repeats suppressed)` for every kind, since the
/// process started.
pub(crate) fn counts() -> Vec<(ReportKind, u64, u64)> {
    ReportKind::ALL
        .iter()
        .map(|&k| {
            // Relaxed: statistics.
            let d = DISTINCT[k.index()].load(Ordering::Relaxed);
            // Relaxed: statistics.
            let s = SUPPRESSED[k.index()].load(Ordering::Relaxed);
            (k, d, s)
        })
        .collect()
}

fn site(h: &mut DefaultHasher, s: &Location<'_>) {
    (s.file(), s.line(), s.column()).hash(h);
}

fn lock_desc(h: &mut DefaultHasher, l: &LockDesc) {
    (l.class, &l.class_name, l.mode, l.trylock).hash(h);
    site(h, l.site);
}

/// What makes two reports the same report (a 64-bit hash of it); `None` for reports that are
/// rate limited instead (capacity episodes).
pub(crate) fn identity(r: &Report) -> Option<u64> {
    let mut h = DefaultHasher::new();
    r.kind().hash(&mut h);
    match r {
        Report::CircularDependency(c) => c.class_set.hash(&mut h),
        Report::RecursiveLocking(s) | Report::MissingNestingAnnotation(s) => {
            lock_desc(&mut h, &s.acquiring);
            lock_desc(&mut h, &s.holding);
        }
        Report::NestLockNotHeld {
            acquiring,
            nest_lock,
            ..
        } => {
            lock_desc(&mut h, acquiring);
            nest_lock.hash(&mut h);
        }
        Report::BadUnlockBalance { releasing, .. } => lock_desc(&mut h, releasing),
        Report::HeldLockFreed { lock, freed_at, .. } => {
            lock_desc(&mut h, lock);
            if let Some(s) = freed_at {
                site(&mut h, s);
            }
        }
        Report::LockHeldAtExit { held, .. } => {
            for l in held {
                lock_desc(&mut h, l);
            }
        }
        Report::KeyMisuse {
            kind, key, site: s, ..
        } => {
            (kind, key).hash(&mut h);
            site(&mut h, s);
        }
        Report::AssertionFailed {
            kind,
            lock,
            site: s,
            acquired_at,
            ..
        } => {
            (kind, lock).hash(&mut h);
            site(&mut h, s);
            if let Some(a) = acquired_at {
                site(&mut h, a);
            }
        }
        Report::CapacityExhausted { .. } => return None,
        Report::HeldAcrossAwait { lock, .. } => lock_desc(&mut h, lock),
    }
    Some(h.finish())
}
