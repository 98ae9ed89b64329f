//! The acquire hook and the validation of a new chain: `check_deadlock` (with the
//! instance-order pairs of a class nested in itself), then `check_prevs_add` with the
//! strong-path search for each new dependency.
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

use crate::chain::{self, Hit};
use crate::class::{ClassId, KeyRef};
use crate::current_task;
use crate::graph::edges::{EdgeSites, Seen};
use crate::graph::instances::PairsFull;
use crate::graph::search::{self, Step};
use crate::graph::table::ClassNode;
use crate::graph::{Graph, Trace};
use crate::graph_lock::{graph_lock, Global, GraphGuard};
use crate::held::{slot, Find, HeldLock, Plain, ThreadState};
use crate::lock_stat;
use crate::map::LockMap;
use crate::mode::{blocks, Kind, Mode};
use crate::nesting::{self, Nesting};
use crate::pair_cache::{self, Scan};
use crate::report::{self, build, episode, Capacity, Report};
use crate::resolve::{self, resolve_class};
use crate::settings;
use crate::thread::{self, with_state, Release};

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

/// See [`crate::acquire`]: the fast path inline, the rest called last (a tail call), so that
/// the fast path makes no call and saves no register.
#[inline]
pub(crate) fn acquire(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
) {
    fast_or(
        map,
        subclass,
        mode,
        trylock,
        nest_lock,
        site,
        acquire_general,
    );
}

/// [`acquire`] for [`crate::acquire`] (a lock's acquisition, which lock_stat counts): the same
/// fast path, and on the slow path lock_stat's hook. While lock_stat is on, every thread's
/// record sends the fast path here, so the fast path itself never tests the switch.
#[inline]
pub(crate) fn acquire_counted(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
) {
    fast_or(
        map,
        subclass,
        mode,
        trylock,
        nest_lock,
        site,
        acquire_general_counted,
    );
}

/// The fast path, or else `slow` (one of the general paths, a function item: called last,
/// as a tail call).
#[inline(always)]
fn fast_or(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
    slow: impl FnOnce(&LockMap, u8, Mode, bool, Option<&LockMap>, Site),
) {
    if nest_lock.is_some() || !acquire_fast(map, subclass, mode, trylock, site) {
        slow(map, subclass, mode, trylock, nest_lock, site);
    }
}

/// [`acquire_counted`] when the fast path did not push.
#[inline(never)]
fn acquire_general_counted(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
) {
    acquire_general(map, subclass, mode, trylock, nest_lock, site);
    if lock_stat::on() {
        lock_stat::acquire(map, subclass, mode);
    }
}

/// The usual acquisition, with no call and no shared write: a live cached class, room on the
/// stack, below the depth limit, and a chain head, a trylock or a plain hit in the thread's
/// chain cache. Pushes and returns true; false (and nothing changed) otherwise.
#[inline(always)]
fn acquire_fast(map: &LockMap, subclass: u8, mode: Mode, trylock: bool, site: Site) -> bool {
    // The sealed check: it counts only with a record, which `fast_top` requires below.
    let Some(class) = resolve::cached_class_sealed(map, subclass) else {
        return false;
    };
    // SAFETY: used only in this function, which makes no call that can reach the thread's
    // state (the steps below are inlined; the entry's fields are plain reads of the map).
    let Some(st) = (unsafe { thread::state_fast() }) else {
        return false;
    };
    let Some(top) = st.fast_top() else {
        return false;
    };
    // Only now the rest of the entry: its loads stay off the paths that give up.
    let p = plain(map, class, subclass, mode, trylock, site);
    let len = top.len();
    if len == 0 {
        // A chain head: nothing to validate.
        st.push_head_fast(top, &p);
        return true;
    }
    let below = st.key_below(len);
    if st.push_memo_fast(top, below, &p) {
        return true;
    }
    let key = HeldLock::chain_key_of(below, class, mode, trylock, 0);
    if !trylock && st.cache.lookup(key) != Hit::Plain {
        return false;
    }
    st.push_fast(top, below, key, &p);
    true
}

/// The fast path's push for a hit on a marked chain (see `chain::Hit::Nested`) in the
/// thread's own chain cache, when the thread's caches alone show what [`pairs_checked`]
/// accepts: the held locks hold neither the class nor the instance (another subclass of the
/// lock's key held, the `lock_nested` pattern), or they hold an ordered run of the class
/// (see [`pair_cache`]) whose pairs with the lock were checked (every shard of a sharded map
/// taken in order). Here, at the general path's start, and not in [`acquire_fast`], whose
/// code stays as short as it was; false (and nothing changed but the pair cache's run)
/// otherwise.
#[inline(always)]
fn acquire_marked(map: &LockMap, subclass: u8, mode: Mode, site: Site) -> bool {
    let Some(class) = resolve::cached_class_sealed(map, subclass) else {
        return false;
    };
    // SAFETY: as in `acquire_fast`: used only in this function, which makes no call that can
    // reach the thread's state (`run_of` and `pairs_checked` read the stack and the pair
    // cache through `st`, and load the pair epoch).
    let Some(st) = (unsafe { thread::state_fast() }) else {
        return false;
    };
    let (Some(top), instance) = (st.fast_top(), map.instance()) else {
        return false;
    };
    let len = top.len();
    let key = HeldLock::chain_key_of(st.key_below(len), class, mode, false, 0);
    if len == 0 || st.cache.lookup(key) != Hit::Nested {
        return false;
    }
    if st.holds_class_or_instance(len, class, instance) {
        // What `cached_elsewhere` does for a local marked hit, without the state's borrow,
        // the second chain-key computation and the second lookup of the general path.
        let next = Acquiring {
            class,
            instance,
            mode,
            nest: 0,
        };
        let scan = run_of(st, next);
        if scan.is_none() || !pairs_checked(st, next, scan) {
            return false;
        }
    }
    st.push_fast_checked(top, key, &plain(map, class, subclass, mode, false, site));
    true
}

/// An acquisition of `map` as the fast path's pushes take it (no nest_lock).
#[inline(always)]
fn plain(
    map: &LockMap,
    class: ClassId,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    site: Site,
) -> Plain {
    let (name, name_meta) = map.name_and_meta();
    Plain {
        instance: map.instance(),
        class,
        mode,
        trylock,
        subclass,
        named: slot::is_named(name_meta),
        site,
        name,
        name_meta,
    }
}

/// The held entry of an acquisition of `map` (chain key 0: the stack sets it at the push).
#[inline(always)]
fn entry_of(
    map: &LockMap,
    class: ClassId,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: usize,
    site: Site,
) -> HeldLock {
    HeldLock {
        nest_lock,
        ..plain(map, class, subclass, mode, trylock, site).entry(0)
    }
}

/// [`acquire`] when the fast path did not push.
#[inline(never)]
fn acquire_general(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
) {
    if nest_lock.is_none() {
        // A new lock of a class this thread knows (a program that makes locks as it goes: a
        // channel, a connection, a cache entry each): its class cached in the map lock-free,
        // and then the fast path's push.
        if resolve::cached_class(map, subclass).is_none()
            && resolve::adopt_known(map, subclass)
            && acquire_fast(map, subclass, mode, trylock, site)
        {
            return;
        }
        if !trylock && acquire_marked(map, subclass, mode, site) {
            return;
        }
    }
    let nest = nest_lock.map_or(0, LockMap::instance);
    acquire_with(map, subclass, mode, trylock, nest, nest_lock, site, false);
}

/// [`acquire`] with the nest_lock given by its instance address (0 for none) and, if known,
/// its map (only a report reads it, for the name: the fast path keeps no name in registers).
/// `upgrade`: the acquisition is an upgrade's (see `HeldLock::upgrade`).
#[inline]
// The acquisition's facts, passed by value so that they stay in registers (a struct of them
// would go through memory on the fast path's way).
#[allow(clippy::too_many_arguments)]
pub(crate) fn acquire_with(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest: usize,
    nest_map: Option<&LockMap>,
    site: Site,
    upgrade: bool,
) {
    // A class made or looked up under the graph lock keeps the section open: a new chain with
    // it is validated in the same one (kernel: `__lock_acquire()`, `register_lock_class()`
    // and `validate_chain()` under one `graph_lock()`).
    let (class, mut held) = match resolve::cached_class(map, subclass) {
        Some(class) => (class, None),
        None => resolve::resolve_locked(map, subclass, site),
    };
    // Made where it is used, so the fast path writes the entry once, straight into the stack.
    let entry = || HeldLock {
        upgrade,
        ..entry_of(map, class, subclass, mode, trylock, nest, site)
    };
    let done = with_state(|st| {
        if !st.has_room() {
            // Growing the stack is left to the slow path (see `ThreadState::has_room`).
            return FastPath::Slow;
        }
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
        if !trylock && !class.is_none() && st.top_key() != 0 {
            let local = st.cache.lookup(next.key());
            // The entry is passed by its fields, so it stays out of memory until the push.
            let me = Acquiring {
                class,
                instance: map.instance(),
                mode: HeldLock::mode_acquired_as(mode, upgrade),
                nest,
            };
            let cached = settings::chain_cache()
                && (local == Hit::Plain || cached_elsewhere(st, next.key(), local, me));
            if !cached {
                return FastPath::Slow;
            }
        }
        // Nothing to validate: the section (if the class needed one) ends before the push.
        drop(held.take());
        st.push_in_room(next);
        FastPath::Pushed
    })
    .unwrap_or(FastPath::Untracked);
    if done == FastPath::Slow {
        acquire_slow(entry(), map, nest_map.map_or("", LockMap::name), held);
    }
}

/// What the pair check needs of an acquisition.
#[derive(Clone, Copy)]
struct Acquiring {
    class: ClassId,
    instance: usize,
    mode: Mode,
    /// The nest_lock's instance, or 0.
    nest: usize,
}

impl Acquiring {
    fn of(h: &HeldLock) -> Acquiring {
        Acquiring {
            class: h.class,
            instance: h.instance,
            mode: h.acquired_as(),
            nest: h.nest_lock,
        }
    }

    /// Tells this acquisition, at stack depth `depth`, from others (for a kept scan).
    fn tag(self, depth: usize) -> u64 {
        let mut h = DefaultHasher::new();
        (self.class, self.instance, self.mode, self.nest, depth).hash(&mut h);
        h.finish()
    }
}

/// The rest of a chain-cache lookup after the thread's cache did not give a plain hit for
/// `key`: the global table, and for a chain that nests a class in itself, its instance pairs.
/// Out of line, so that the plain hit keeps the short code it had.
#[inline(never)]
fn cached_elsewhere(st: &mut ThreadState, key: u64, local: Hit, next: Acquiring) -> bool {
    let hit = match local {
        Hit::Miss => chain::global_lookup(key),
        h => h,
    };
    match hit {
        Hit::Miss => false,
        Hit::Plain => {
            st.cache.insert(key, false);
            true
        }
        Hit::Nested => {
            let scan = run_of(st, next);
            if !pairs_checked(st, next, scan) {
                // The slow path comes next, for this same acquisition: it reuses the scan.
                let tag = next.tag(st.depth());
                st.pairs.keep_scan(tag, scan);
                return false;
            }
            if local == Hit::Miss {
                st.cache.insert(key, true);
            }
            true
        }
    }
}

/// The held locks of `next`'s class as a candidate ordered run (see [`pair_cache`]): the
/// fingerprint of their instances and the stack index of the most recent one. `None` unless
/// there is one, all of them and `next` are held exclusively, `next` has no nest_lock (only
/// exclusive pairs make paths that a pair with the top extends) and its instance is not held
/// at all (in any class: under another subclass too).
fn run_of(st: &ThreadState, next: Acquiring) -> Scan {
    if next.mode != Mode::Exclusive || next.nest != 0 {
        return None;
    }
    let mut fp = 0;
    let mut top = None;
    let class = next.class.to_bits();
    for (i, s) in st.held_slots().iter().enumerate() {
        let instance = s.instance();
        if instance == next.instance {
            return None;
        }
        if s.class_bits() != class {
            continue;
        }
        if s.mode() != Mode::Exclusive {
            return None;
        }
        fp = pair_cache::fingerprint(fp, instance);
        top = Some(i);
    }
    top.map(|i| (fp, i))
}

/// Whether a held lock of `next`'s chain could be `next`'s own instance under another class:
/// a held class of `next`'s key (another subclass of it), a held class that is no longer
/// live (its key was unregistered while the lock was held; a lock taken again gets a new
/// class), or a held lock with no class (taken while its key was not registered, say). Such
/// a chain is cached with the mark, like a chain that nests a class in itself, so that a hit
/// on it still looks for `next`'s instance among the held locks: the chain key names
/// classes, not instances, and the same chain with another instance on top was valid. A
/// function of the chain key (of the classes on the stack), so the mark is the same for every
/// stack with that key. Under the graph lock.
fn may_hold_instance(g: &Global, st: &ThreadState, next: &HeldLock) -> bool {
    let Some(key) = g.graph.class(next.class).map(|c| c.key) else {
        return false;
    };
    st.entries()
        .iter()
        .any(|h| h.class != next.class && g.graph.class(h.class).is_none_or(|c| c.key == key))
}

/// For a chain cached with the mark (one that nests `next`'s class in itself, or whose held
/// locks may include `next`'s instance under another class, see [`may_hold_instance`]): true
/// if every held lock of `next`'s instance is held compatibly (in any class), and every other
/// instance of `next`'s class is one whose pair with `next` this thread checked before (or
/// that a held nest_lock serializes). For a candidate run (`scan`, which is
/// [`run_of`]`(st, next)`) also true if the top's pair with `next` was checked and the held
/// instances of the class are an ordered run: the one this thread's cache of runs names, or
/// one whose consecutive pairs this thread checked (a run whose top was released and that
/// grows again). In every accepted case the slow path would record no new pair, so what the
/// graph holds does not depend on what the caches kept. An accepted candidate run grows by
/// `next`. No lock taken.
#[inline(never)]
fn pairs_checked(st: &mut ThreadState, next: Acquiring, scan: Scan) -> bool {
    let epoch = nesting::pair_epoch();
    st.pairs.sync(epoch);
    let Some((fp, i)) = scan else {
        return pairs_with_next(st, next);
    };
    // A candidate run: every held instance of the class is held exclusively, `next` too, it
    // has no nest_lock and its instance is not held, so only the class's pairs decide.
    let top = st.held_slots()[i].instance();
    let kind = Kind::of(Mode::Exclusive, Mode::Exclusive);
    let accepted = st.pairs.contains(top, next.instance, next.class, kind)
        && (st.pairs.is_run(epoch, next.class, fp, top)
            || consecutive_pairs_cached(st, next.class)
            || pairs_with_next(st, next));
    if accepted {
        // Every held instance has a path to the top and the top its pair with `next`: the
        // grown set is an ordered run with `next` on top, so the acquisition after it needs
        // only its pair with `next`.
        let grown = pair_cache::fingerprint(fp, next.instance);
        st.pairs.set_run(next.class, grown, next.instance);
    }
    accepted
}

/// [`pairs_checked`]'s test of every held lock against `next` on its own: a held lock of
/// `next`'s instance is held compatibly, and every other held instance of `next`'s class
/// has its pair with `next` in this thread's cache (or a nest_lock serializes them).
fn pairs_with_next(st: &ThreadState, next: Acquiring) -> bool {
    let pairs = &st.pairs;
    let class = next.class.to_bits();
    st.held_slots().iter().all(|s| {
        let instance = s.instance();
        if instance == next.instance {
            !blocks(next.mode, s.mode())
        } else if s.class_bits() == class {
            next.nest != 0
                || pairs.contains(
                    instance,
                    next.instance,
                    next.class,
                    Kind::of(s.mode(), next.mode),
                )
        } else {
            true
        }
    })
}

/// [`is_ordered_run`] from this thread's cache of checked pairs instead of the graph: the
/// held instances of `class`, bottom to top, each have their exclusive pair with the next one
/// in the cache (a cached pair was checked, under the current pair epoch: the cache is
/// emptied whenever a pair may leave the graph). For a candidate run ([`run_of`]: all held
/// exclusively).
fn consecutive_pairs_cached(st: &ThreadState, class: ClassId) -> bool {
    let kind = Kind::of(Mode::Exclusive, Mode::Exclusive);
    let mut below: Option<usize> = None;
    let bits = class.to_bits();
    st.held_slots()
        .iter()
        .filter(|s| s.class_bits() == bits)
        .all(|s| {
            let instance = s.instance();
            let paired = below.is_none_or(|from| st.pairs.contains(from, instance, class, kind));
            below = Some(instance);
            paired
        })
}

/// Validates and pushes what the general path could not. `held` is the graph-lock section
/// the class was resolved in, if it was: the validation runs in it instead of a new one, and
/// it ends before any report is delivered.
#[cold]
fn acquire_slow(mut entry: HeldLock, map: &LockMap, nest_name: &str, mut held: Option<GraphGuard>) {
    let reports = with_state(|st| {
        let mut reports = Vec::new();
        if entry.nest_lock != 0 && st.find(entry.nest_lock).is_none() {
            let g = held.get_or_insert_with(graph_lock);
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
        // A chain that nests a class in itself is cached with a mark (see `chain`).
        let nested = st.entries().iter().any(|h| h.class == entry.class);
        let me = Acquiring::of(&entry);
        // Taken whether used or not: a kept scan is good for this acquisition only.
        let kept = st.pairs.take_scan(me.tag(st.depth()));
        let scan = if nested {
            kept.unwrap_or_else(|| run_of(st, me))
        } else {
            None
        };
        let hit = match st.cache.lookup(key) {
            _ if !settings::chain_cache() => Hit::Miss,
            Hit::Miss => chain::global_lookup(key),
            h => h,
        };
        match hit {
            Hit::Plain if !nested => return reports,
            Hit::Nested if pairs_checked(st, me, scan) => {
                st.cache.insert(key, true);
                return reports;
            }
            _ => {}
        }
        let mut g = held.take().unwrap_or_else(graph_lock);
        let epoch = nesting::pair_epoch();
        let mut checked = Vec::new();
        let verdict = validate_chain(&mut g, st, &entry, scan, &mut reports, &mut checked);
        // The mark: a hit on this chain must look at the held instances (see `chain::Hit`).
        let marked = nested || may_hold_instance(&g, st, &entry);
        if verdict == Verdict::Valid {
            chain::global_insert(key, marked);
        }
        drop(g);
        if verdict == Verdict::Valid {
            st.cache.insert(key, marked);
        }
        if !checked.is_empty() {
            // Checked under `epoch`: if it moved meanwhile, the next check empties the cache.
            st.pairs.sync(epoch);
            // Room for a pair per held instance: a deep run keeps its pairs round after round.
            st.pairs.reserve(st.depth());
            for &(i, kind) in &checked {
                let from = st.entry(i).instance;
                st.pairs.insert(from, entry.instance, entry.class, kind);
                st.mark_paired(i);
            }
            map.mark_paired();
            // The pair with the top checked, so every held instance of the class has a path
            // to `entry` now (each had its own pair, or the run had a path to the top).
            if let Some((fp, top)) = scan {
                if verdict == Verdict::Valid && checked.iter().any(|&(i, _)| i == top) {
                    let grown = pair_cache::fingerprint(fp, entry.instance);
                    st.pairs.set_run(entry.class, grown, entry.instance);
                }
            }
        }
        reports
    });
    // A section kept for a chain that turned out cached (or not to be validated) ends here,
    // before the delivery.
    drop(held);
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

/// See [`crate::release`]: what the fast pop did not do (the lock is not on top, or some
/// entry is marked or nest-covered). Out of line, called last, so the fast path stays a leaf.
#[inline(never)]
pub(crate) fn release_general(map: &LockMap, site: Site, mode: Option<Mode>) {
    let found = thread::release(Find::of(map.instance(), mode));
    if !matches!(found, Release::Released) {
        release_slow(map, found, site);
    }
}

/// [`release_general`] for [`crate::release`] (`mode` `None`) and [`crate::release_mode`],
/// with lock_stat's hook (the slow path only, as in [`acquire_counted`]). The site comes
/// before the mode: where the fast path has it, so that the tail call moves no register.
#[inline(never)]
pub(crate) fn release_general_counted(map: &LockMap, site: Site, mode: Option<Mode>) {
    if lock_stat::on() {
        lock_stat::release(map, mode);
    }
    release_general(map, site, mode);
}

/// See [`crate::release`]: the entry carried marks, or the lock was not held.
#[cold]
pub(crate) fn release_slow(map: &LockMap, found: Release, site: Site) {
    if let Release::Marked { paired: true, .. } = found {
        map.mark_paired();
    }
    // Only a report needs the name (which allocates for an unnamed map).
    if let Release::NotHeld
    | Release::Marked {
        pinned: Some(_), ..
    } = found
    {
        thread::report_release(
            found,
            &map.report_name(),
            map.cached(0),
            map.instance(),
            site,
        );
    }
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
fn validate_chain(
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

/// True if the held instances of `class`, bottom to top, each have the exclusive pair with
/// the next one in the instance graph: then each has a path of exclusive pairs to the top,
/// and a new instance needs only its pair with the top. For a candidate run ([`run_of`]: all
/// held exclusively). Decided from the graph, under the graph lock, and not from this
/// thread's cache of runs: which pairs get recorded, and so the dependencies a later report
/// shows, must not depend on what a direct-mapped cache happened to keep. Cost: one hash
/// lookup per held instance of the class.
fn is_ordered_run(g: &Global, st: &ThreadState, class: ClassId) -> bool {
    let kind = Kind::of(Mode::Exclusive, Mode::Exclusive);
    let mut below = None;
    st.entries().iter().filter(|h| h.class == class).all(|h| {
        let paired =
            below.is_none_or(|from| g.graph.instances.has(class.index(), from, h.instance, kind));
        below = Some(h.instance);
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
        .has(class, held.instance, next.instance, kind)
    {
        return true;
    }
    let path = g
        .graph
        .instances
        .class(class)
        .and_then(|ci| search::strong_path(ci, held.instance, next.instance, kind));
    if let Some(path) = path {
        let r = build::instance_circular(&g.graph, st, held, next, kind, &path, trace.get());
        push_cycle(
            reports,
            r,
            instance_signature(next.class, held.instance, &path),
        );
        return false;
    }
    let sites = edge_sites(held, next, trace);
    match g
        .graph
        .instances
        .add(class, held.instance, next.instance, kind, sites)
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

/// Adds `prev -> next` for the top held lock and every trylock directly above the first
/// non-trylock (kernel: `check_prevs_add()`); stops at the first cycle, which is reported
/// (printed once per distinct cycle, see [`crate::set_report_repeats`]) and not recorded.
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
    for prev in st.entries().iter().rev() {
        if g.graph.class(prev.class).is_none() {
            // Unvalidated or zapped: like the kernel's `check == 0` entries, skipped.
            continue;
        }
        if prev.class != next.class && !check_prev_add(g, st, &prev, next, reports, trace) {
            return Verdict::Invalid;
        }
        // The kernel stops at the first held lock that is no trylock: the locks below it
        // reach `next` through it, by the dependencies its own acquisition recorded. A task's
        // async lock spliced on for a poll recorded none over the thread's locks below it,
        // so in a poll the walk goes on to the bottom (every dependency it adds is real: the
        // lock is held while `next` is taken).
        if !prev.trylock && !in_poll {
            break;
        }
    }
    Verdict::Valid
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
