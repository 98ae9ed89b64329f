//! The validator core: the acquire hook, `check_deadlock` and `check_prevs_add`.
//!
//! Semantics from the kernel's `__lock_acquire()`, `validate_chain()`, `check_deadlock()`,
//! `check_prevs_add()` and `check_prev_add()`; see the crate docs for the rules. Reports are
//! built while the validator's locks are held and delivered after they are released and
//! before the held stack changes.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::Location;
use std::sync::Arc;

use crate::chain;
use crate::describe::{held_descs_locked, lock_desc, thread_desc};
use crate::graph::EdgeSites;
use crate::held::{with_state, HeldLock, ThreadState};
use crate::map::LockMap;
use crate::policy;
use crate::report::{Capacity, CircularDependency, Dependency, Report, SameClass, Trace};
use crate::resolve::resolve_class;
use crate::search::{self, Step};
use crate::state::{self, graph_lock, Global};
use crate::types::{ClassId, DepKind, Mode};

type Site = &'static Location<'static>;

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
    let instance = map.instance();
    let nest = nest_lock.map_or(0, LockMap::instance);
    let done = with_state(|st| {
        if nest != 0 && st.find(nest).is_none() {
            return false;
        }
        if nest == 0 && st.depth() >= state::max_depth() && !st.depth_reported {
            return false;
        }
        let top = st.top_key();
        let key = chain::mix(top, class, mode, trylock, nest != 0);
        // A trylock is held but adds no dependency and is not validated (kernel:
        // `validate_chain()` is skipped for trylocks); an unvalidated lock neither; and a
        // lock taken with nothing held has nothing to be checked against (a chain head).
        if !trylock && !class.is_none() && top != 0 && !st.cache.contains(key) {
            if !chain::global_contains(key) {
                return false;
            }
            st.cache.insert(key);
        }
        // Built in place: the entry is written once, straight into the stack.
        st.held.push(HeldLock {
            class,
            instance,
            name: map.name(),
            mode,
            trylock,
            subclass,
            nest_lock: nest,
            site,
            chain_key: key,
            pin_count: 0,
        });
        st.nested += u32::from(nest != 0);
        st.top = key;
        true
    });
    if done == Some(false) {
        let entry = HeldLock {
            class,
            instance,
            name: map.name(),
            mode,
            trylock,
            subclass,
            nest_lock: nest,
            site,
            chain_key: 0,
            pin_count: 0,
        };
        acquire_slow(entry, nest_lock.map_or("", LockMap::name));
    }
}

#[cold]
fn acquire_slow(mut entry: HeldLock, nest_name: &str) {
    let reports = with_state(|st| {
        let mut reports = Vec::new();
        if entry.nest_lock != 0 && st.find(entry.nest_lock).is_none() {
            let g = graph_lock();
            reports.push(Report::NestLockNotHeld {
                thread: thread_desc(st),
                acquiring: lock_desc(&g, &entry),
                nest_lock: nest_name.to_owned(),
                held: held_descs_locked(&g, st),
            });
            entry.nest_lock = 0;
        }
        let limit = state::max_depth();
        if entry.nest_lock == 0 && st.depth() >= limit && !st.depth_reported {
            st.depth_reported = true;
            reports.push(Report::CapacityExhausted {
                thread: thread_desc(st),
                what: Capacity::HeldLocks,
                limit,
            });
        }
        if entry.trylock || entry.class.is_none() {
            return reports;
        }
        let key = chain::mix(
            st.top_key(),
            entry.class,
            entry.mode,
            entry.trylock,
            entry.nest_lock != 0,
        );
        if st.cache.contains(key) || chain::global_contains(key) {
            return reports;
        }
        let mut g = graph_lock();
        let cacheable = validate_chain(&mut g, st, &entry, &mut reports);
        if cacheable {
            chain::global_insert(key);
        }
        drop(g);
        if cacheable {
            st.cache.insert(key);
        }
        reports
    });
    let Some(reports) = reports else {
        return;
    };
    // May panic (Policy::Panic): then the lock is not pushed, and the caller never blocks on
    // the real lock, so the held stack stays exact.
    policy::deliver(reports);
    with_state(|st| st.push(entry));
}

/// Validates a new chain: `check_deadlock`, then `check_prevs_add`. Returns true if the chain
/// may be cached (no problem found).
fn validate_chain(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    reports: &mut Vec<Report>,
) -> bool {
    if g.graph.class(next.class).is_none() {
        // Zapped since it was resolved (its key is being unregistered): do not validate.
        return false;
    }
    // check_deadlock: is the class already held? A recursive read after any read is allowed.
    let conflicts = || {
        st.held.iter().filter(|h| {
            h.class == next.class && !(next.mode == Mode::RecursiveRead && h.mode.is_read())
        })
    };
    if let Some(h) = conflicts().find(|h| h.instance == next.instance) {
        reports.push(Report::RecursiveLocking(same_class(g, st, h, next)));
        return false;
    }
    if let Some(h) = conflicts().next() {
        if next.nest_lock != 0 {
            // Serialized by the held nest lock: allowed, and no dependencies are added
            // (kernel: check_deadlock() returns 2).
            return true;
        }
        reports.push(Report::MissingNestingAnnotation(same_class(g, st, h, next)));
        return false;
    }
    check_prevs_add(g, st, next, reports)
}

fn same_class(g: &Global, st: &ThreadState, held: &HeldLock, next: &HeldLock) -> SameClass {
    SameClass {
        thread: thread_desc(st),
        acquiring: lock_desc(g, next),
        holding: lock_desc(g, held),
        held: held_descs_locked(g, st),
    }
}

/// Adds `prev -> next` for the top held lock and every trylock directly above the first
/// non-trylock (kernel: `check_prevs_add()`); stops at the first cycle.
fn check_prevs_add(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    reports: &mut Vec<Report>,
) -> bool {
    // The current stack, captured at most once, and only if a dependency is new (or a cycle is
    // reported) and capture is on.
    let mut trace: Option<Option<Trace>> = None;
    let mut capture = || {
        trace
            .get_or_insert_with(|| {
                state::capture_backtraces()
                    .then(|| Trace(Arc::new(std::backtrace::Backtrace::force_capture())))
            })
            .clone()
    };
    for prev in st.held.iter().rev() {
        if g.graph.class(prev.class).is_none() {
            // Unvalidated or zapped: like the kernel's `check == 0` entries, skipped.
            continue;
        }
        if prev.class != next.class {
            let kind = DepKind::of(prev.mode, next.mode);
            if !g.graph.has_kind(prev.class, next.class, kind) {
                if let Some(path) = search::strong_path(&g.graph, prev.class, next.class, kind) {
                    state::count_cycle();
                    let report = circular(g, st, prev, next, kind, &path, capture());
                    let sig = signature(prev.class, &path);
                    if !state::report_cycles_once() || g.reported_cycles.insert(sig) {
                        reports.push(Report::CircularDependency(report));
                    }
                    return false;
                }
                g.graph.add(
                    prev.class,
                    next.class,
                    kind,
                    EdgeSites {
                        prev: prev.site,
                        next: next.site,
                        trace: capture(),
                    },
                );
            }
        }
        if !prev.trylock {
            break;
        }
    }
    true
}

/// A signature of a cycle: its set of classes.
fn signature(prev: ClassId, path: &[Step]) -> u64 {
    let mut ids: Vec<u32> = path.iter().map(|s| s.from).collect();
    ids.push(prev.index());
    ids.sort_unstable();
    ids.dedup();
    let mut h = DefaultHasher::new();
    ids.hash(&mut h);
    h.finish()
}

fn circular(
    g: &Global,
    st: &ThreadState,
    prev: &HeldLock,
    next: &HeldLock,
    kind: DepKind,
    path: &[Step],
    trace: Option<Trace>,
) -> CircularDependency {
    let name = |slot: u32| {
        g.graph
            .slot(slot)
            .map_or_else(|| "<zapped>".to_owned(), |c| c.name.to_string())
    };
    let mut cycle = vec![Dependency {
        from: name(prev.class.index()),
        to: name(next.class.index()),
        kind,
        from_site: prev.site,
        to_site: next.site,
        trace,
    }];
    for s in path {
        let sites = g
            .graph
            .slot(s.from)
            .and_then(|c| c.after.get(&s.to))
            .and_then(|e| e.sites[s.kind.index()].clone());
        let (from_site, to_site, trace) =
            sites.map_or((next.site, next.site, None), |e| (e.prev, e.next, e.trace));
        cycle.push(Dependency {
            from: name(s.from),
            to: name(s.to),
            kind: s.kind,
            from_site,
            to_site,
            trace,
        });
    }
    CircularDependency {
        thread: thread_desc(st),
        acquiring: lock_desc(g, next),
        holding: lock_desc(g, prev),
        cycle,
        held: held_descs_locked(g, st),
    }
}
