//! The declared suppressions, process-wide, with their hit counts: what a report is checked
//! against before it is deduplicated and delivered.
//!
//! One leaf lock guards the list (nothing else is taken while it is held, but the graph lock
//! may be held around it when a class of a marked static key is created); a count of entries
//! lets a report skip the lock when there are none.

use std::any::Any;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

use super::listing::{SuppressionId, SuppressionInfo, SuppressionOrigin};
use super::rule::{ClassRef, Suppression};
use super::subject;
use crate::class::{KeyMark, KeyRef, LockClassKey, StaticKey};
use crate::fork::{self, Participant, Rank};
use crate::report::types::{Report, ReportKind};

/// One declared suppression.
struct Entry {
    id: SuppressionId,
    rule: Suppression,
    origin: SuppressionOrigin,
    hits: u64,
}

/// The suppressions, in declaration order.
pub(crate) struct Registry {
    entries: Vec<Entry>,
    next_id: u64,
    /// The addresses of the static keys whose marks are registered.
    marked_keys: Vec<usize>,
    /// The file named by the environment variable was read (or there is none).
    pub(crate) env_loaded: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    entries: Vec::new(),
    next_id: 1,
    marked_keys: Vec::new(),
    env_loaded: false,
});

/// `REGISTRY`'s number of entries, read without the lock.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// Reports matched by at least one suppression (never reset).
static HITS: AtomicU64 = AtomicU64::new(0);

static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork::nothing,
};

fn fork_prepare() -> Box<dyn Any> {
    Box::new(lock())
}

fn lock() -> MutexGuard<'static, Registry> {
    fork::join(Rank::Suppressions, &FORK);
    // Only our own code runs under this lock; a poisoned list is still consistent.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` with the registry locked (a leaf lock: `f` must take no validator lock).
pub(crate) fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    f(&mut lock())
}

impl Registry {
    /// Declares `rule`, which passed [`Suppression::check`].
    pub(crate) fn add(&mut self, rule: Suppression, origin: SuppressionOrigin) -> SuppressionId {
        let id = SuppressionId(self.next_id);
        self.next_id += 1;
        self.entries.push(Entry {
            id,
            rule,
            origin,
            hits: 0,
        });
        // Relaxed: a shortcut for reports while there are no suppressions; the entries
        // themselves are read under the lock. A thread that must see this entry learned of
        // it through a synchronization of its own (or the file loader's Release flag).
        COUNT.store(self.entries.len(), Ordering::Relaxed);
        id
    }

    fn info(&self) -> Vec<SuppressionInfo> {
        self.entries
            .iter()
            .map(|e| SuppressionInfo {
                id: e.id,
                text: e.rule.to_string(),
                kind: e.rule.kind,
                reason: e.rule.reason.clone(),
                origin: e.origin.clone(),
                hits: e.hits,
            })
            .collect()
    }
}

/// Whether a declared suppression matches `r`; counts a hit on every suppression that does
/// (and one report in the total). Thread-safe; takes the leaf lock only if there are
/// suppressions and `r` is of a kind they can match. Returns the places (in declaration
/// order) of the suppressions that matched, `None` if none did.
pub(crate) fn matched(r: &Report) -> Option<Box<[u32]>> {
    // Relaxed: see `Registry::add`.
    if COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let subject = subject::of(r)?;
    let mut reg = lock();
    let mut hits = Vec::new();
    for (i, e) in reg.entries.iter_mut().enumerate() {
        if subject::matches(&e.rule, &subject) {
            e.hits += 1;
            hits.push(i as u32);
        }
    }
    drop(reg);
    if hits.is_empty() {
        return None;
    }
    // Relaxed: a statistic.
    HITS.fetch_add(1, Ordering::Relaxed);
    Some(hits.into_boxed_slice())
}

/// Counts one more report matched by the suppressions at `places` (what [`matched`] returned
/// for an equal report), without matching it again. Thread-safe; takes the leaf lock.
pub(crate) fn count_again(places: &[u32]) {
    let mut reg = lock();
    for &i in places {
        if let Some(e) = reg.entries.get_mut(i as usize) {
            e.hits += 1;
        }
    }
    drop(reg);
    // Relaxed: a statistic.
    HITS.fetch_add(1, Ordering::Relaxed);
}

/// The number of suppressions declared so far (none is ever taken back): a report matched
/// against the list of some length matches the same ones while the length stays. Lock-free.
pub(crate) fn declared() -> usize {
    // Relaxed: see `Registry::add`.
    COUNT.load(Ordering::Relaxed)
}

/// Every suppression, in declaration order, with its hits.
pub(crate) fn list() -> Vec<SuppressionInfo> {
    lock().info()
}

/// As [`list`], but `None` instead of waiting for the lock (at process exit, where the
/// holder may be a thread that no longer runs).
pub(crate) fn try_list() -> Option<Vec<SuppressionInfo>> {
    match REGISTRY.try_lock() {
        Ok(reg) => Some(reg.info()),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner().info()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// The number of reports a suppression kept from being delivered (never reset).
pub(crate) fn total_hits() -> u64 {
    // Relaxed: a statistic.
    HITS.load(Ordering::Relaxed)
}

/// Each suppression's hits, in declaration order.
pub(crate) fn hits_by_id() -> Vec<(SuppressionId, u64)> {
    lock().entries.iter().map(|e| (e.id, e.hits)).collect()
}

/// The report kind of a key's mark.
fn mark_kind(m: KeyMark) -> ReportKind {
    match m {
        KeyMark::Recursive => ReportKind::RecursiveLocking,
        KeyMark::Nesting => ReportKind::MissingNestingAnnotation,
        KeyMark::Circular => ReportKind::CircularDependency,
    }
}

/// Declares the suppressions `key` is marked with, once per key; `class` is the name of the
/// class of it being created. Called under the graph lock when a class of a marked key is
/// created.
pub(crate) fn register_key(key: &'static LockClassKey, class: &str) {
    let addr = key as *const LockClassKey as usize;
    let mut reg = lock();
    if reg.marked_keys.contains(&addr) {
        return;
    }
    reg.marked_keys.push(addr);
    for (mark, reason) in KeyMark::ALL.iter().zip(key.suppressed()) {
        let Some(reason) = reason else { continue };
        let rule = Suppression {
            classes: vec![ClassRef::from_key(KeyRef::Static(StaticKey(key)))],
            kind: Some(mark_kind(*mark)),
            reason: Some((*reason).to_owned()),
        };
        let origin = SuppressionOrigin::Key {
            class: class.to_owned(),
        };
        reg.add(rule, origin);
    }
}
