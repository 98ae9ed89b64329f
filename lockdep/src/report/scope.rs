//! Test scopes: one line that makes every report fail the test whose thread made it.
//!
//! A [`TestScope`] is entered on the thread that creates it and, through a [`ScopeHandle`],
//! on threads the test spawns. A report made by a thread while it is in a scope is recorded
//! there, whether or not the same report was printed before (deduplication is about output),
//! and the thread panics with it at once, before the lock operation that caused it takes
//! effect, as with [`Policy::Panic`](crate::Policy::Panic): a real deadlock then fails the test
//! instead of hanging it, at the acquisition that would have blocked. Where a panic cannot
//! unwind (a report at thread exit, or while the thread is already panicking), and where a
//! spawned thread's panic was swallowed, the scope's guard panics when it drops, with every
//! report recorded in the scope.

use std::any::Any;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hashbrown::HashMap;

use super::types::Report;
use crate::fork::{self, Participant, Rank};

/// The reports recorded in each live scope, by scope number. A leaf lock.
static SCOPES: Mutex<Option<HashMap<u64, Vec<Report>>>> = Mutex::new(None);
static NEXT_SCOPE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The scope this thread is in, or 0.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork::nothing,
};

fn fork_prepare() -> Box<dyn Any> {
    Box::new(scopes())
}

fn scopes() -> MutexGuard<'static, Option<HashMap<u64, Vec<Report>>>> {
    fork::join(Rank::Scopes, &FORK);
    // Only our own code runs under this lock; a poisoned map is still consistent.
    SCOPES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Enters `id` on this thread; returns the scope it was in before.
fn enter(id: u64) -> u64 {
    CURRENT.try_with(|c| c.replace(id)).unwrap_or(0)
}

fn leave(previous: u64) {
    let _ = CURRENT.try_with(|c| c.set(previous));
}

/// Whether this thread is in a test scope (where every report panics it). No lock.
pub(crate) fn in_scope() -> bool {
    CURRENT.try_with(Cell::get).unwrap_or(0) != 0
}

/// Records `r` in the scope this thread is in; false if it is in none. Thread-safe; takes a
/// leaf lock only when the thread is in a scope.
pub(crate) fn record(r: &Report) -> bool {
    let id = CURRENT.try_with(Cell::get).unwrap_or(0);
    if id == 0 {
        return false;
    }
    match scopes().as_mut().and_then(|m| m.get_mut(&id)) {
        Some(reports) => {
            reports.push(r.clone());
            true
        }
        // The scope has ended (a spawned thread that outlived it).
        None => false,
    }
}

/// Starts a test scope on this thread: until the returned guard drops, every report this
/// thread makes fails the test. Bind the guard to a named variable (`let _scope = ...`;
/// `let _ = ...` drops it at once).
///
/// ```
/// let _scope = lockdep::test_scope();
/// // ... the test: any lockdep report made on this thread now panics it, at the report.
/// ```
///
/// A report made in the scope panics the thread that made it at the report, before the lock
/// operation takes effect (like [`Policy::Panic`](crate::Policy::Panic), whatever the policy
/// is), even if the same report was printed earlier in the process. The guard's drop panics
/// with every report recorded in the scope, unless the thread is already panicking: that
/// catches reports that could not panic (at thread exit, during unwinding) and reports of
/// spawned threads whose panic was not propagated. For threads the test spawns, see
/// [`TestScope::handle`]. A report at the exit of a thread is outside the scope unless the
/// thread is still in it then (its [`EnteredScope`] guard is dropped before thread-local
/// destructors run).
///
/// Scopes nest: the inner one gets the reports while it lives. Thread-safe; the guard is
/// `!Send` (it belongs to the thread it entered).
#[must_use = "the scope ends when the guard drops: bind it with `let _scope = ...`"]
pub fn test_scope() -> TestScope {
    // Relaxed: a unique number is all that is needed.
    let id = NEXT_SCOPE.fetch_add(1, Ordering::Relaxed);
    scopes()
        .get_or_insert_with(HashMap::new)
        .insert(id, Vec::new());
    TestScope {
        id,
        previous: enter(id),
        _thread: PhantomData,
    }
}

/// A test scope, from [`test_scope`]; the scope ends when it drops.
#[derive(Debug)]
pub struct TestScope {
    id: u64,
    previous: u64,
    /// `!Send`: the guard leaves the scope on the thread that entered it.
    _thread: PhantomData<*const ()>,
}

impl TestScope {
    /// A handle that threads spawned by the test enter with [`ScopeHandle::enter`], so that
    /// their reports fail the test too. `Copy + Send + Sync`.
    pub fn handle(&self) -> ScopeHandle {
        ScopeHandle { id: self.id }
    }

    /// The reports recorded in the scope so far (they stay recorded).
    pub fn reports(&self) -> Vec<Report> {
        scopes()
            .as_ref()
            .and_then(|m| m.get(&self.id))
            .cloned()
            .unwrap_or_default()
    }

    /// Takes the reports recorded in the scope so far: a test that expects a report (and
    /// caught the panic it caused) takes it, and the guard's drop does not fail the test for
    /// it.
    pub fn take_reports(&self) -> Vec<Report> {
        scopes()
            .as_mut()
            .and_then(|m| m.get_mut(&self.id))
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

impl Drop for TestScope {
    fn drop(&mut self) {
        leave(self.previous);
        let reports = scopes()
            .as_mut()
            .and_then(|m| m.remove(&self.id))
            .unwrap_or_default();
        if reports.is_empty() || std::thread::panicking() {
            return;
        }
        let s = if reports.len() == 1 { "" } else { "s" };
        let mut text = format!(
            "lockdep::test_scope: {} lockdep report{s} made in this test scope:\n",
            reports.len()
        );
        for r in &reports {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        panic!("{text}");
    }
}

/// A [`TestScope`] seen from another thread: `Copy + Send + Sync`.
///
/// ```
/// let scope = lockdep::test_scope();
/// let h = scope.handle();
/// std::thread::spawn(move || {
///     let _in_scope = h.enter();
///     // ... reports made here fail the test, too.
/// })
/// .join()
/// .unwrap();
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ScopeHandle {
    id: u64,
}

impl ScopeHandle {
    /// Enters the scope on the calling thread until the returned guard drops. Entering a scope
    /// that has ended is allowed and records nothing.
    #[must_use = "the thread leaves the scope when the guard drops"]
    pub fn enter(&self) -> EnteredScope {
        EnteredScope {
            previous: enter(self.id),
            _thread: PhantomData,
        }
    }
}

/// The calling thread is in a test scope until this guard drops (from
/// [`ScopeHandle::enter`]). `!Send`.
#[derive(Debug)]
pub struct EnteredScope {
    previous: u64,
    _thread: PhantomData<*const ()>,
}

impl Drop for EnteredScope {
    fn drop(&mut self) {
        leave(self.previous);
    }
}
