//! The validator core: acquire and release hooks, `check_deadlock` and `check_prevs_add`.
//!
//! Semantics from the kernel's `__lock_acquire()`, `validate_chain()`, `check_deadlock()`,
//! `check_prevs_add()`, `check_prev_add()` and `__lock_release()`; see the crate docs for the
//! rules. Reports are built while the validator's locks are held and delivered after they are
//! released and before the held stack changes.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::panic::Location;
use std::sync::Arc;

use crate::chain;
use crate::class;
use crate::graph::EdgeSites;
use crate::held::{with_state, HeldLock, ThreadState};
use crate::key::KeyRef;
use crate::keys;
use crate::map::LockMap;
use crate::policy;
use crate::report::{
    Capacity, CircularDependency, Dependency, KeyMisuse, LockDesc, Report, SameClass, ThreadDesc,
    Trace,
};
use crate::search::{self, Step};
use crate::state::{self, Global, GLOBAL};
use crate::types::{ClassId, DepKind, Mode, MAX_SUBCLASSES};

type Site = &'static Location<'static>;

// ---------------------------------------------------------------------------------------------
// Descriptions for reports.

pub(crate) fn thread_desc(st: &ThreadState) -> ThreadDesc {
    ThreadDesc {
        name: st.identity().1.clone(),
        id: st.identity().0,
    }
}

fn current_thread_desc() -> ThreadDesc {
    with_state(|st| thread_desc(st)).unwrap_or_else(|| ThreadDesc {
        name: "<exiting>".to_owned(),
        id: 0,
    })
}

pub(crate) fn lock_desc(g: &Global, h: &HeldLock) -> LockDesc {
    let class_name = match g.graph.class(h.class) {
        Some(c) => c.name.to_string(),
        None if h.subclass == 0 => h.name.to_owned(),
        None => format!("{}/{}", h.name, h.subclass),
    };
    LockDesc {
        class: h.class,
        class_name,
        instance: h.instance,
        mode: h.mode,
        trylock: h.trylock,
        site: h.site,
    }
}

pub(crate) fn held_descs_locked(g: &Global, st: &ThreadState) -> Vec<LockDesc> {
    st.held.iter().map(|h| lock_desc(g, h)).collect()
}

/// Held locks of this thread, with names; takes the graph lock (never call it while holding
/// the graph lock).
pub(crate) fn held_descs(st: &ThreadState) -> Vec<LockDesc> {
    let g = GLOBAL.lock();
    held_descs_locked(&g, st)
}

// ---------------------------------------------------------------------------------------------
// Key misuse.

/// Reports a key misuse now. Call with no validator lock held and no thread-state borrow.
pub(crate) fn misuse(kind: KeyMisuse, name: &str, site: Site) {
    policy::deliver(vec![Report::KeyMisuse {
        thread: current_thread_desc(),
        kind,
        key: name.to_owned(),
        site,
    }]);
}

/// Reports a misuse once per (key serial, kind).
fn misuse_once(serial: u64, kind: KeyMisuse, name: &str, site: Site) {
    let first = GLOBAL.lock().reported_misuse.insert((serial, kind));
    if first {
        misuse(kind, name, site);
    }
}

/// True if this thread holds a lock of one of `key`'s classes.
pub(crate) fn holds_key(key: KeyRef) -> bool {
    with_state(|st| {
        if st.held.is_empty() {
            return false;
        }
        let g = GLOBAL.lock();
        st.held
            .iter()
            .any(|h| g.graph.class(h.class).is_some_and(|c| c.key == key))
    })
    .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// Class lookup.

/// The class of `map` for `subclass`: from the map's cache when it is still live, else looked
/// up or created under the graph lock. `ClassId::NONE` (after a report) if the key is not
/// registered or classes ran out.
#[inline]
pub(crate) fn resolve_class(map: &LockMap, subclass: u8, site: Site) -> ClassId {
    let cached = map.cached(subclass);
    if !cached.is_none() && class::is_live(cached) {
        return cached;
    }
    resolve_slow(map, subclass, site)
}

#[cold]
fn resolve_slow(map: &LockMap, subclass: u8, site: Site) -> ClassId {
    if subclass >= MAX_SUBCLASSES {
        misuse(KeyMisuse::InvalidSubclass, map.name(), site);
        return ClassId::NONE;
    }
    let key = map.key();
    if let KeyRef::Dynamic { addr, serial } = key {
        // The lock-free, hazard-pointer-protected lookup (kernel: `is_dynamic_key()`).
        if !keys::is_registered(addr, serial) {
            misuse_once(serial, KeyMisuse::NotRegistered, map.name(), site);
            return ClassId::NONE;
        }
    }
    let mut g = GLOBAL.lock();
    let found = g
        .graph
        .by_key
        .get(&(key, subclass))
        .and_then(|&i| g.graph.slot(i))
        .map(|c| c.id);
    let id = match found {
        Some(id) => id,
        None => {
            if let KeyRef::Dynamic { addr, serial } = key {
                // Unregistered since the lock-free check: registration changes only under the
                // graph lock, so this answer is final.
                if !keys::is_registered_locked(addr, serial) {
                    drop(g);
                    misuse_once(serial, KeyMisuse::NotRegistered, map.name(), site);
                    return ClassId::NONE;
                }
            }
            match g.graph.alloc(key, subclass, map.name()) {
                Ok(id) => id,
                Err(()) => {
                    let first = !std::mem::replace(&mut g.classes_exhausted_reported, true);
                    drop(g);
                    if first {
                        policy::deliver(vec![Report::CapacityExhausted {
                            thread: current_thread_desc(),
                            what: Capacity::Classes,
                            limit: class::MAX_CLASSES,
                        }]);
                    }
                    return ClassId::NONE;
                }
            }
        }
    };
    drop(g);
    map.set_cached(subclass, id);
    id
}

// ---------------------------------------------------------------------------------------------
// Acquire.

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
        if st.held.len() >= state::max_depth() && !st.depth_reported {
            return false;
        }
        let key = chain::mix(st.top_key(), class, mode, trylock, nest != 0);
        // A trylock is held but adds no dependency and is not validated (kernel:
        // `validate_chain()` is skipped for trylocks); an unvalidated lock neither.
        if !trylock && !class.is_none() && !st.cache.contains(key) {
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
            let g = GLOBAL.lock();
            reports.push(Report::NestLockNotHeld {
                thread: thread_desc(st),
                acquiring: lock_desc(&g, &entry),
                nest_lock: nest_name.to_owned(),
                held: held_descs_locked(&g, st),
            });
            entry.nest_lock = 0;
        }
        let limit = state::max_depth();
        if st.held.len() >= limit && !st.depth_reported {
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
        // Captured before the graph lock is taken, once per new chain.
        let trace = state::capture_backtraces()
            .then(|| Trace(Arc::new(std::backtrace::Backtrace::force_capture())));
        let mut g = GLOBAL.lock();
        let cacheable = validate_chain(&mut g, st, &entry, trace, &mut reports);
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
    trace: Option<Trace>,
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
    check_prevs_add(g, st, next, trace, reports)
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
    trace: Option<Trace>,
    reports: &mut Vec<Report>,
) -> bool {
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
                    let report = circular(g, st, prev, next, kind, &path, trace);
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
                        trace: trace.clone(),
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

// ---------------------------------------------------------------------------------------------
// Release, free, exit.

/// See [`crate::release`].
#[inline]
pub(crate) fn release(map: &LockMap, site: Site) {
    let instance = map.instance();
    // Small return values only: this is the hot path.
    let problem = with_state(|st| {
        let Some(i) = st.find(instance) else {
            return Some(false);
        };
        let pinned = st.held[i].pin_count > 0;
        if i + 1 == st.held.len() {
            // The usual LIFO case: no chain keys to recompute.
            st.held.pop();
        } else {
            st.remove(i);
        }
        pinned.then_some(true)
    });
    if let Some(Some(pinned)) = problem {
        release_problem(map, site, pinned);
    }
}

/// `pinned`: the lock was released while pinned; else it was not held.
#[cold]
fn release_problem(map: &LockMap, site: Site, pinned: bool) {
    let report = with_state(|st| {
        let held = held_descs(st);
        match pinned {
            true => Report::AssertionFailed {
                thread: thread_desc(st),
                kind: crate::report::AssertKind::ReleasedWhilePinned,
                lock: map.name().to_owned(),
                site,
                held,
            },
            false => Report::BadUnlockBalance {
                thread: thread_desc(st),
                releasing: LockDesc {
                    class: map.cached(0),
                    class_name: map.name().to_owned(),
                    instance: map.instance(),
                    mode: Mode::Exclusive,
                    trylock: false,
                    site,
                },
                held,
            },
        }
    });
    if let Some(r) = report {
        policy::deliver(vec![r]);
    }
}

/// Reports and forgets every lock this thread holds whose map lies in `[addr, addr + len)`
/// (kernel: `debug_check_no_locks_freed()`).
pub(crate) fn check_no_locks_freed(addr: *const u8, len: usize, site: Site) {
    let (lo, hi) = (addr as usize, addr as usize + len);
    let reports = with_state(|st| {
        let mut out = Vec::new();
        while let Some(i) = st
            .held
            .iter()
            .position(|h| h.instance >= lo && h.instance < hi)
        {
            let h = st.remove(i);
            let g = GLOBAL.lock();
            out.push(Report::HeldLockFreed {
                thread: thread_desc(st),
                lock: lock_desc(&g, &h),
                freed_at: site,
                held: held_descs_locked(&g, st),
            });
        }
        out
    });
    if let Some(r) = reports {
        if !r.is_empty() {
            policy::deliver(r);
        }
    }
}

/// Called from the thread state's destructor with the locks still held at thread exit.
pub(crate) fn thread_exit(st: &ThreadState, held: Vec<HeldLock>) {
    let held = {
        let g = GLOBAL.lock();
        held.iter().map(|h| lock_desc(&g, h)).collect()
    };
    policy::deliver_no_unwind(&Report::LockHeldAtExit {
        thread: thread_desc(st),
        held,
    });
}
