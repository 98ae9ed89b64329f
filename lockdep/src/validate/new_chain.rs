//! What a new chain is checked for, under the graph lock (the kernel's `validate_chain()`):
//! `check_deadlock` (the class already held: recursive locking, a missing nesting
//! annotation, or the instance-order pairs of a class nested in itself), then
//! `check_prevs_add` with the strong-path search for each new dependency. Also the
//! dependencies of a condvar notification on the held locks, and the signatures that tell
//! two cycle reports apart.

use std::cell::OnceCell;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::chain::{self, Hit};
use crate::class::{ClassId, KeyRef};
use crate::current_task;
use crate::graph::edges::{EdgeSites, Seen};
use crate::graph::instances::PairsFull;
use crate::graph::search::{self, Step};
use crate::graph::table::ClassNode;
use crate::graph::{Graph, Trace};
use crate::graph_lock::{graph_lock, Global};
use crate::held::{HeldLock, ThreadState};
use crate::map::LockMap;
use crate::mode::{blocks, Kind, Mode};
use crate::nesting::Nesting;
use crate::pair_cache::Scan;
use crate::report::{self, build, episode, Capacity, Report};
use crate::resolve::resolve_class;
use crate::settings;
use crate::thread::with_state;

use super::Site;

/// The verdict on a new chain.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No problem: the chain is cached and not validated again.
    Valid,
    /// A problem was reported, or a class died meanwhile: validate it again next time.
    Invalid,
}

/// What `check_deadlock` found (the kernel's return values 0, 2 and 1).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SameClassHeld {
    /// The class is held in a way that can self-deadlock (or, under instance order, closes a
    /// cycle among its instances): reported.
    Deadlock,
    /// The class is held, but a held nest_lock serializes the nesting: valid, and no
    /// dependencies are added.
    Serialized,
    /// The class is not held, only compatibly, or in an order its instances keep.
    No,
}

static CYCLES_FOUND: AtomicU64 = AtomicU64::new(0);

/// Attempts to close a strong cycle since the process started.
pub(crate) fn cycles_found() -> u64 {
    // Relaxed: a statistic.
    CYCLES_FOUND.load(Ordering::Relaxed)
}

/// Counts `n` attempts to close a cycle that were not searched again (see `replays`).
pub(super) fn count_cycles(n: usize) {
    // Relaxed: a statistic.
    CYCLES_FOUND.fetch_add(n as u64, Ordering::Relaxed);
}

/// The current stack, captured at most once per validation, and only if a dependency is new
/// (or a cycle is reported) and capture is on.
struct LazyTrace(OnceCell<Option<Trace>>);

impl LazyTrace {
    fn new() -> LazyTrace {
        LazyTrace(OnceCell::new())
    }

    fn get(&self) -> Option<Trace> {
        self.0
            .get_or_init(|| {
                crate::backtraces::capture_backtraces()
                    .then(|| Trace(Arc::new(std::backtrace::Backtrace::force_capture())))
            })
            .clone()
    }
}

/// How a held lock appears on a dependency.
fn seen(h: &HeldLock) -> Seen {
    Seen {
        instance: h.instance,
        name: h.name_if_any(),
    }
}

/// Validates a new chain (the kernel's `validate_chain()`): `check_deadlock`, then
/// `check_prevs_add`. `checked` receives the instance pairs found valid: (index of the held
/// lock, kind).
pub(super) fn validate_chain(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    scan: Scan,
    reports: &mut Vec<Report>,
    checked: &mut Vec<(usize, Kind)>,
) -> Verdict {
    if g.graph.class(next.class).is_none() {
        // Zapped since it was resolved (its key is being unregistered): do not validate.
        return Verdict::Invalid;
    }
    let trace = LazyTrace::new();
    match check_deadlock(g, st, next, scan, reports, checked, &trace) {
        SameClassHeld::Deadlock => Verdict::Invalid,
        SameClassHeld::Serialized => Verdict::Valid,
        SameClassHeld::No => check_prevs_add(g, st, next, reports, &trace),
    }
}

/// Is `next`'s class already held (the kernel's `check_deadlock()`)? The same instance held in
/// a mode `next` waits for is [`Report::RecursiveLocking`], whatever the nesting rule. Another
/// instance of the class is checked by the class's [`Nesting`] rule: strictly, it is
/// [`Report::MissingNestingAnnotation`] unless a held nest_lock covers `next`; in instance
/// order, the pair (held instance, `next`) is recorded unless it closes a cycle among the
/// class's instances, which is reported as a circular dependency.
fn check_deadlock(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    run: Scan,
    reports: &mut Vec<Report>,
    checked: &mut Vec<(usize, Kind)>,
    trace: &LazyTrace,
) -> SameClassHeld {
    let same_class = || {
        st.entries()
            .iter()
            .enumerate()
            .filter(|(_, h)| h.class == next.class)
    };
    // A candidate ordered run (`run`, [`run_of`] of `next`) holds no instance of `next`.
    // The same instance first: it is the certain deadlock, also when it is held under
    // another subclass (`lock_nested` of a held lock), which no annotation makes valid.
    let recursive = if run.is_some() {
        None
    } else {
        same_class()
            .find(|(_, h)| h.instance == next.instance && blocks(next.acquired_as(), h.mode))
            .or_else(|| {
                st.entries().iter().enumerate().find(|(_, h)| {
                    h.instance == next.instance
                        && h.class != next.class
                        && blocks(next.acquired_as(), h.mode)
                })
            })
    };
    if let Some((_, held)) = recursive {
        reports.push(build::same_class(&g.graph, st, &held, next));
        return SameClassHeld::Deadlock;
    }
    let others = || same_class().filter(|(_, h)| h.instance != next.instance);
    if others().next().is_none() {
        return SameClassHeld::No;
    }
    match g.graph.nesting(next.class) {
        Nesting::Strict => {
            let conflict = others().find(|(_, h)| blocks(next.acquired_as(), h.mode));
            match conflict {
                Some(_) if next.nest_lock != 0 => SameClassHeld::Serialized,
                Some((_, held)) => {
                    reports.push(build::same_class(&g.graph, st, &held, next));
                    SameClassHeld::Deadlock
                }
                None => {
                    // Only compatible holders (a recursive read after reads): valid.
                    checked
                        .extend(others().map(|(i, h)| (i, Kind::of(h.mode, next.acquired_as()))));
                    SameClassHeld::No
                }
            }
        }
        Nesting::InstanceOrder if next.nest_lock != 0 => SameClassHeld::Serialized,
        Nesting::InstanceOrder => {
            // An ordered run: every held instance has a path to the top, so the pair with
            // the top is the only new one a cycle could need.
            if let Some((_, i)) = run {
                let held = st.entry(i);
                if is_ordered_run(g, st, next.class) {
                    let kind = Kind::of(held.mode, next.acquired_as());
                    if !check_pair_add(g, st, &held, next, kind, reports, trace) {
                        return SameClassHeld::Deadlock;
                    }
                    checked.push((i, kind));
                    return SameClassHeld::No;
                }
            }
            for (i, held) in others() {
                let kind = Kind::of(held.mode, next.acquired_as());
                if !check_pair_add(g, st, &held, next, kind, reports, trace) {
                    return SameClassHeld::Deadlock;
                }
                checked.push((i, kind));
            }
            SameClassHeld::No
        }
    }
}

/// True if the held instances of `class`, bottom to top, each have the exclusive pair with the next
/// one in the instance graph: then each has a path of exclusive pairs to the top, and a new
/// instance needs only its pair with the top. For a candidate run
/// ([`run_of`](super::pairs::run_of): all held exclusively). Decided from the graph, under the
/// graph lock, and not from this thread's cache of runs: which pairs get recorded, and so the
/// dependencies a later report shows, must not depend on what a direct-mapped cache happened to
/// keep. Cost: one hash lookup per held instance of the class.
fn is_ordered_run(g: &Global, st: &ThreadState, class: ClassId) -> bool {
    let kind = Kind::of(Mode::Exclusive, Mode::Exclusive);
    let mut below = None;
    st.entries().iter().filter(|h| h.class == class).all(|h| {
        let paired = below.is_none_or(|from| {
            g.graph
                .instances
                .has(class.index(), from, h.pair_key(), kind)
        });
        below = Some(h.pair_key());
        paired
    })
}

/// Records the instance pair `held -> next` of one class unless it closes a strong cycle
/// among the class's instances (then reported, printed once per distinct cycle, and false).
fn check_pair_add(
    g: &mut Global,
    st: &ThreadState,
    held: &HeldLock,
    next: &HeldLock,
    kind: Kind,
    reports: &mut Vec<Report>,
    trace: &LazyTrace,
) -> bool {
    let class = next.class.index();
    if g.graph
        .instances
        .has(class, held.pair_key(), next.pair_key(), kind)
    {
        return true;
    }
    let path = g
        .graph
        .instances
        .class(class)
        .and_then(|ci| search::strong_path(ci, held.pair_key(), next.pair_key(), kind));
    if let Some(path) = path {
        let r = build::instance_circular(&g.graph, st, held, next, kind, &path, trace.get());
        push_cycle(
            reports,
            r,
            instance_signature(next.class, held.pair_key(), &path),
        );
        return false;
    }
    let sites = edge_sites(held, next, trace);
    match g
        .graph
        .instances
        .add(class, held.pair_key(), next.pair_key(), kind, sites)
    {
        Ok(_) => {
            if g.graph.instances.pair_count() < crate::limits::MAX_INSTANCE_PAIRS / 2 {
                // Well below the cap again: a new exhaustion is a new episode.
                g.instance_pairs_exhausted_reported = false;
            }
        }
        Err(PairsFull) => {
            if !std::mem::replace(&mut g.instance_pairs_exhausted_reported, true) {
                let episode = episode::next(Capacity::InstancePairs);
                reports.push(build::instance_pairs_exhausted(st, episode));
            }
        }
    }
    true
}

/// Adds `prev -> next` for the top held lock and every trylock or recursive read directly
/// above the first other held lock (kernel: `check_prevs_add()`, which stops at the first
/// non-trylock); a cycle is reported (printed once per distinct cycle, see
/// [`crate::set_report_repeats`]) and not recorded, and the walk goes on past the lock whose
/// dependency closed it.
fn check_prevs_add(
    g: &mut Global,
    st: &ThreadState,
    next: &HeldLock,
    reports: &mut Vec<Report>,
    trace: &LazyTrace,
) -> Verdict {
    // Inside an instrumented poll the task's async locks are spliced onto the thread's stack
    // (see `task`): they were not acquired over the thread's locks below them.
    let in_poll = current_task::get().is_some();
    let mut verdict = Verdict::Valid;
    for slot in st.held_slots().iter().rev() {
        let prev = slot.load();
        if g.graph.class(prev.class).is_none() {
            // Unvalidated or zapped: like the kernel's `check == 0` entries, skipped.
            continue;
        }
        if prev.class != next.class && !check_prev_add(g, st, &prev, next, reports, trace) {
            // A cycle: `prev -> next` is reported and not recorded, so the locks below
            // `prev` do not reach `next` through it. The walk goes on, for their own
            // dependencies (each may close another cycle, a bug of its own: the kernel,
            // which stops validating at its first report, never gets to them).
            verdict = Verdict::Invalid;
            continue;
        }
        // The kernel stops at the first held lock that is no trylock: the locks below it
        // reach `next` through it, by the dependencies its own acquisition recorded. A task's
        // async lock spliced on for a poll recorded none over the thread's locks below it,
        // so in a poll the walk goes on to the bottom (every dependency it adds is real: the
        // lock is held while `next` is taken). Nor do the locks below reach `next` through a
        // lock whose acquisition cannot wait for its own holding (a recursive read): the
        // path `below -> prev -> next` is then not strong (`Kind::may_follow`), and the
        // search would never take it for `below -> next`, so the walk goes on past it too.
        // Nor through a lock whose own acquisition did not record their dependencies on it
        // (a report stopped its validation, see `Slot::set_unrecorded`): the kernel needs no
        // such test, since it stops validating after its first report.
        if !prev.trylock
            && !in_poll
            && blocks(prev.acquired_as(), prev.mode)
            && !slot.is_unrecorded()
        {
            break;
        }
    }
    verdict
}

/// Records the dependency `prev -> next` (in the modes they have) unless it is recorded or
/// closes a strong cycle (kernel: `check_prev_add()`); false after a cycle, which is reported
/// (printed once per distinct cycle by the delivery).
fn check_prev_add(
    g: &mut Global,
    st: &ThreadState,
    prev: &HeldLock,
    next: &HeldLock,
    reports: &mut Vec<Report>,
    trace: &LazyTrace,
) -> bool {
    let kind = Kind::of(prev.mode, next.acquired_as());
    if g.graph.has_kind(prev.class, next.class, kind) {
        return true;
    }
    if let Some(path) = search::strong_path(&g.graph, prev.class.index(), next.class.index(), kind)
    {
        let r = build::circular(&g.graph, st, prev, next, kind, &path, trace.get());
        push_cycle(reports, r, signature(&g.graph, prev.class, &path));
        return false;
    }
    g.graph
        .add(prev.class, next.class, kind, edge_sites(prev, next, trace));
    true
}

/// Counts an attempt to close a cycle and queues its report, stamped with `signature` (what
/// makes two cycle reports the same). Every attempt is reported: the delivery prints each
/// distinct cycle once, but panics for every attempt if asked to.
fn push_cycle(reports: &mut Vec<Report>, mut r: Report, signature: u64) {
    // Relaxed: a statistic.
    CYCLES_FOUND.fetch_add(1, Ordering::Relaxed);
    if let Report::CircularDependency(c) = &mut r {
        c.class_set = signature;
    }
    reports.push(r);
}

/// Where the two ends of the new dependency `prev -> next` were acquired, on which instances,
/// and the stack if capture is on.
fn edge_sites(prev: &HeldLock, next: &HeldLock, trace: &LazyTrace) -> EdgeSites {
    EdgeSites {
        prev: prev.site,
        next: next.site,
        prev_lock: seen(prev),
        next_lock: seen(next),
        trace: trace.get(),
    }
}

/// Records dependencies *from* `map` (held exclusively, at `site`) *to* every lock this thread
/// holds, as if each were taken after it, with the cycle check of each: what a condvar
/// notification means under condvar tracking (the event the waiter waits for happens only once
/// the notifier has all these locks). Cached like a chain, so a repeated notification under
/// the same locks takes no lock.
pub(crate) fn depend_on_held(map: &LockMap, site: Site) {
    let class = resolve_class(map, 0, site);
    if class.is_none() {
        return;
    }
    let from = HeldLock {
        class,
        instance: map.instance(),
        name: map.name(),
        named: map.is_named(),
        mode: Mode::Exclusive,
        trylock: false,
        subclass: 0,
        nest_lock: 0,
        site,
        chain_key: 0,
        pin_count: 0,
        paired: false,
        upgrade: false,
        tag: map.tag(),
    };
    let reports = with_state(|st| {
        let mut reports = Vec::new();
        if st.entries().is_empty() {
            return reports;
        }
        // A key no real acquisition has: `map`'s class as a trylock under a nest_lock.
        let key = chain::extend(st.top_key(), class, Mode::Exclusive, true, true);
        if settings::chain_cache()
            && (st.cache.lookup(key) == Hit::Plain || chain::global_lookup(key) == Hit::Plain)
        {
            return reports;
        }
        let mut g = graph_lock();
        let trace = LazyTrace::new();
        let mut valid = g.graph.class(class).is_some();
        for next in st.entries() {
            if next.class == class || g.graph.class(next.class).is_none() {
                continue;
            }
            if !check_prev_add(&mut g, st, &from, &next, &mut reports, &trace) {
                valid = false;
                break;
            }
        }
        // A cycle closed here is a notification's (the condvar -> a held lock), not an
        // acquisition's: its text says so.
        for r in &mut reports {
            if let Report::CircularDependency(c) = r {
                c.notify = true;
            }
        }
        if valid {
            chain::global_insert(key, false);
        }
        drop(g);
        if valid {
            st.cache.insert(key, false);
        }
        reports
    });
    if let Some(r) = reports {
        if !r.is_empty() {
            report::deliver(r);
        }
    }
}

/// A signature of a cycle: its set of classes (what makes two cycle reports the same), each
/// class by what stays the same when its code runs again: its name (with its subclass) and
/// key, a dynamic key by its name alone. Not by the class slot, which a zapped class hands to
/// an unrelated one (their cycles are other bugs), nor by the slot's generation, which
/// changes each time a churned key's class is made again (the same bug, reported once).
fn signature(graph: &Graph, prev: ClassId, path: &[Step<u32>]) -> u64 {
    let one = |c: &ClassNode| {
        let key = match c.key {
            KeyRef::Dynamic { .. } => None,
            k => Some(k),
        };
        let mut h = DefaultHasher::new();
        (&*c.name, key).hash(&mut h);
        h.finish()
    };
    let mut classes: Vec<u64> = path
        .iter()
        .map(|s| s.from)
        .chain([prev.index()])
        .filter_map(|i| graph.slot(i))
        .map(one)
        .collect();
    classes.sort_unstable();
    classes.dedup();
    let mut h = DefaultHasher::new();
    classes.hash(&mut h);
    h.finish()
}

/// A signature of a cycle among instances of `class`: the class and its set of instances
/// (never equal to a class-cycle signature but by a hash collision).
fn instance_signature(class: ClassId, prev: usize, path: &[Step<usize>]) -> u64 {
    let mut ids: Vec<usize> = path.iter().map(|s| s.from).collect();
    ids.push(prev);
    ids.sort_unstable();
    ids.dedup();
    let mut h = DefaultHasher::new();
    ("instances", class, ids).hash(&mut h);
    h.finish()
}
