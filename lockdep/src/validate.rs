//! The acquire hook and the validation of a new chain: `check_deadlock`, then
//! `check_prevs_add` with the strong-path search for each new dependency.
//!
//! Semantics from the kernel's `__lock_acquire()`, `validate_chain()`, `check_deadlock()`,
//! `check_prevs_add()` and `check_prev_add()`; see the crate docs for the rules. Reports are
//! built while the validator's locks are held and delivered after they are released and
//! before the held stack changes.

use std::cell::OnceCell;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::chain;
use crate::class::ClassId;
use crate::graph::edges::EdgeSites;
use crate::graph::search::{self, Step};
use crate::graph::{Graph, Trace};
use crate::graph_lock::{graph_lock, Global};
use crate::held::{HeldLock, ThreadState};
use crate::map::LockMap;
use crate::mode::{DepKind, Mode};
use crate::report::{self, build, episode, Capacity, Report};
use crate::resolve::resolve_class;
use crate::settings;
use crate::thread::with_state;

type Site = &'static Location<'static>;

/// What the fast path of an acquisition did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FastPath {
    /// The lock is on the held stack: its chain was validated before, or needs no validation.
    Pushed,
    /// The slow path must validate or report, and then push.
    Slow,
    /// The thread's validator state is unavailable (thread exit): nothing is tracked.
    Untracked,
}

/// The verdict on a new chain.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// No problem: the chain is cached and not validated again.
    Valid,
    /// A problem was reported, or a class died meanwhile: validate it again next time.
    Invalid,
}

/// What `check_deadlock` found (the kernel's return values 0, 2 and 1).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SameClassHeld {
    /// The class is held in a way that can self-deadlock: reported.
    Deadlock,
    /// The class is held, but a held nest_lock serializes the nesting: valid, and no
    /// dependencies are added.
    Serialized,
    /// The class is not held (or only compatibly, a recursive read after a read).
    No,
}

static CYCLES_FOUND: AtomicU64 = AtomicU64::new(0);

/// Attempts to close a strong cycle since the process started.
pub(crate) fn cycles_found() -> u64 {
    // Relaxed: a statistic.
    CYCLES_FOUND.load(Ordering::Relaxed)
}

/// See [`crate::acquire`].
#[inline]
pub(crate) fn acquire(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
) {
    let class = resolve_class(map, subclass, site);
    let nest = nest_lock.map_or(0, LockMap::instance);
    // Made where it is used, so the fast path writes the entry once, straight into the stack.
    let entry = || HeldLock {
        class,
        instance: map.instance(),
        name: map.name(),
        mode,
        trylock,
        subclass,
        nest_lock: nest,
        site,
        chain_key: 0,
        pin_count: 0,
    };
    let done = with_state(|st| {
        if nest != 0 && st.find(nest).is_none() {
            return FastPath::Slow;
        }
        if nest == 0 && st.depth() == settings::max_depth() {
            // This acquisition crosses the depth limit: an episode to report.
            return FastPath::Slow;
        }
        let next = st.next(entry());
        // A trylock is held but adds no dependency and is not validated (kernel:
        // `validate_chain()` is skipped for trylocks); an unvalidated lock neither; and a
        // lock taken with nothing held has nothing to be checked against (a chain head).
        if !trylock && !class.is_none() && st.top_key() != 0 && !st.cache.contains(next.key()) {
            if !chain::global_contains(next.key()) {
                return FastPath::Slow;
            }
            st.cache.insert(next.key());
        }
        st.push(next);
        FastPath::Pushed
    })
    .unwrap_or(FastPath::Untracked);
    if done == FastPath::Slow {
        acquire_slow(entry(), nest_lock.map_or("", LockMap::name));
    }
}

#[cold]
fn acquire_slow(mut entry: HeldLock, nest_name: &str) {
    let reports = with_state(|st| {
        let mut reports = Vec::new();
        if entry.nest_lock != 0 && st.find(entry.nest_lock).is_none() {
            let g = graph_lock();
            reports.push(build::nest_lock_not_held(&g.graph, st, &entry, nest_name));
            entry.nest_lock = 0;
        }
        let limit = settings::max_depth();
        if entry.nest_lock == 0 && st.depth() == limit {
            let episode = episode::next(Capacity::HeldLocks);
            reports.push(build::depth_exhausted(st, limit, episode));
        }
        if entry.trylock || entry.class.is_none() {
            return reports;
        }
        let key = st.next(entry).key();
        if st.cache.contains(key) || chain::global_contains(key) {
            return reports;
        }
        let mut g = graph_lock();
        let verdict = validate_chain(&mut g, st, &entry, &mut reports);
        if verdict == Verdict::Valid {
            chain::global_insert(key);
        }
        drop(g);
        if verdict == Verdict::Valid {
            st.cache.insert(key);
        }
        reports
    });
    let Some(reports) = reports else {
        return;
    };
    // May panic (Policy::Panic): then the lock is not pushed, and the caller never blocks on
    // the real lock, so the held stack stays exact. The stack may have changed meanwhile (a
    // handler that takes locks), so the entry's chain key is computed afresh.
    report::deliver(reports);
    with_state(|st| {
        let next = st.next(entry);
        st.push(next);
    });
}

/// Validates a new chain (the kernel's `validate_chain()`): `check_deadlock`, then
/// `check_prevs_add`.
fn validate_chain(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    reports: &mut Vec<Report>,
) -> Verdict {
    if g.graph.class(next.class).is_none() {
        // Zapped since it was resolved (its key is being unregistered): do not validate.
        return Verdict::Invalid;
    }
    match check_deadlock(&g.graph, st, next, reports) {
        SameClassHeld::Deadlock => Verdict::Invalid,
        SameClassHeld::Serialized => Verdict::Valid,
        SameClassHeld::No => check_prevs_add(g, st, next, reports),
    }
}

/// Is `next`'s class already held (the kernel's `check_deadlock()`)? A recursive read after
/// any read is allowed; the same instance is [`Report::RecursiveLocking`], another instance
/// [`Report::MissingNestingAnnotation`] unless a held nest_lock covers `next`.
fn check_deadlock(
    g: &Graph,
    st: &ThreadState,
    next: &HeldLock,
    reports: &mut Vec<Report>,
) -> SameClassHeld {
    let conflicts = || {
        st.entries().iter().filter(|h| {
            h.class == next.class && !(next.mode == Mode::RecursiveRead && h.mode.is_read())
        })
    };
    // The same instance first: it is the certain deadlock.
    let same = conflicts().find(|h| h.instance == next.instance);
    let Some(held) = same.or_else(|| conflicts().next()) else {
        return SameClassHeld::No;
    };
    if same.is_none() && next.nest_lock != 0 {
        return SameClassHeld::Serialized;
    }
    reports.push(build::same_class(g, st, held, next));
    SameClassHeld::Deadlock
}

/// Adds `prev -> next` for the top held lock and every trylock directly above the first
/// non-trylock (kernel: `check_prevs_add()`); stops at the first cycle, which is reported
/// (printed once per distinct cycle, see [`crate::set_report_repeats`]) and not recorded.
fn check_prevs_add(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    reports: &mut Vec<Report>,
) -> Verdict {
    // The current stack, captured at most once, and only if a dependency is new (or a cycle is
    // reported) and capture is on.
    let trace: OnceCell<Option<Trace>> = OnceCell::new();
    let capture = || {
        trace
            .get_or_init(|| {
                settings::capture_backtraces()
                    .then(|| Trace(Arc::new(std::backtrace::Backtrace::force_capture())))
            })
            .clone()
    };
    for prev in st.entries().iter().rev() {
        if g.graph.class(prev.class).is_none() {
            // Unvalidated or zapped: like the kernel's `check == 0` entries, skipped.
            continue;
        }
        if prev.class != next.class {
            let kind = DepKind::of(prev.mode, next.mode);
            if !g.graph.has_kind(prev.class, next.class, kind) {
                if let Some(path) = search::strong_path(&g.graph, prev.class, next.class, kind) {
                    // Relaxed: a statistic.
                    CYCLES_FOUND.fetch_add(1, Ordering::Relaxed);
                    // Every attempt is reported: the delivery prints each distinct cycle
                    // (this set of classes) once, but panics for every attempt if asked to.
                    let mut r = build::circular(&g.graph, st, prev, next, kind, &path, capture());
                    if let Report::CircularDependency(c) = &mut r {
                        c.class_set = signature(prev.class, &path);
                    }
                    reports.push(r);
                    return Verdict::Invalid;
                }
                let sites = EdgeSites {
                    prev: prev.site,
                    next: next.site,
                    trace: capture(),
                };
                g.graph.add(prev.class, next.class, kind, sites);
            }
        }
        if !prev.trylock {
            break;
        }
    }
    Verdict::Valid
}

/// A signature of a cycle: its set of classes (what makes two cycle reports the same).
fn signature(prev: ClassId, path: &[Step]) -> u64 {
    let mut ids: Vec<u32> = path.iter().map(|s| s.from).collect();
    ids.push(prev.index());
    ids.sort_unstable();
    ids.dedup();
    let mut h = DefaultHasher::new();
    ids.hash(&mut h);
    h.finish()
}
