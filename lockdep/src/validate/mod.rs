//! The acquire hook and the validation of a new chain, after the kernel's `__lock_acquire()`,
//! `validate_chain()`, `check_deadlock()`, `check_prevs_add()` and `check_prev_add()`; see the
//! crate docs for the rules. Reports are built while the validator's locks are held and
//! delivered after they are released and before the held stack changes.
//!
//! An acquisition goes as far down this list as it must:
//! - here, the fast path (inlined into the caller: a cached class, room on the stack, and a
//!   chain head, a memo hit or a plain hit in the thread's chain cache) and the general path
//!   (a new lock of a known class, a marked chain whose pairs the thread's caches show);
//! - [`pairs`]: the rest of a chain-cache lookup, and the instance pairs of a class nested in
//!   itself, from the thread's caches;
//! - [`slow`]: the validation under the graph lock, and the release paths that the fast pop
//!   left; [`replays`]: a chain found invalid before, counted again without it;
//! - [`new_chain`]: what a new chain is checked for, `check_deadlock` (with the
//!   instance-order pairs of a class nested in itself) and then `check_prevs_add` with the
//!   strong-path search for each new dependency.

use std::panic::Location;

use crate::chain::Hit;
use crate::class::ClassId;
use crate::held::{slot, FastTop, HeldLock, Plain, ThreadState};
use crate::lock_stat;
use crate::map::LockMap;
use crate::mode::Mode;
use crate::nesting;
use crate::resolve;
use crate::settings;
use crate::thread::{self, with_state};

mod new_chain;
mod pairs;
pub(crate) mod replays;
mod slow;

pub(crate) use new_chain::{cycles_found, depend_on_held};
use pairs::{cached_elsewhere, pairs_checked, run_of, Acquiring};
pub(crate) use replays::clear as forget_replays;
use slow::acquire_slow;
pub(crate) use slow::{release_general_counted, release_slow};

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
    // The switch read first, and its counting path out of line: either way a tail call, so
    // that with lock_stat off (nearly always) no frame of this function is made around the
    // general path (lock_stat's inlined hook made one of seven saved registers and 456
    // bytes).
    if lock_stat::on() {
        acquire_general_then_count(map, subclass, mode, trylock, nest_lock, site);
    } else {
        acquire_general(map, subclass, mode, trylock, nest_lock, site);
    }
}

/// [`acquire_general_counted`] while lock_stat is on: the general path, then lock_stat's
/// hook.
#[cold]
#[inline(never)]
fn acquire_general_then_count(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    nest_lock: Option<&LockMap>,
    site: Site,
) {
    acquire_general(map, subclass, mode, trylock, nest_lock, site);
    lock_stat::acquire(map, subclass, mode);
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
    if !trylock {
        match st.cache.lookup(key) {
            Hit::Plain => {}
            // A marked chain (a shard over shards of its class, say): its push, with the key
            // and the lookup done here, out of line (see `acquire_nested_hit`).
            Hit::Nested => return acquire_nested_hit(map, class, subclass, mode, site, key),
            Hit::Miss => return false,
        }
    }
    st.push_fast(top, below, key, &p);
    true
}

/// The fast path's answer to a marked hit (see `chain::Hit::Nested`) on the chain key `key`
/// of an acquisition of `map` (cached class `class`, no trylock): [`push_marked`], with the
/// chain key and the lookup [`acquire_fast`] made. Out of line, so that the inlined fast path
/// gains one call, on a branch that gave up before, and not a nested memo check (which, inlined
/// there, cost every lock 0.2–0.5 ns: the layout of the whole function). The general path
/// made the key and the lookup again before (about 1.5 ns a shard on an Intel Xeon, see
/// BENCHMARKS.md). False (and nothing changed but the pair cache's run) if `push_marked` is:
/// the general path then validates.
#[inline(never)]
fn acquire_nested_hit(
    map: &LockMap,
    class: ClassId,
    subclass: u8,
    mode: Mode,
    site: Site,
    key: u64,
) -> bool {
    // SAFETY: as in `acquire_fast`: used only in this function and `push_marked`, which make
    // no call that can reach the thread's state (`run_of` and `pairs_checked` read the stack
    // and the pair cache through `st`, and load the pair epoch).
    let Some(st) = (unsafe { thread::state_fast() }) else {
        return false;
    };
    let Some(top) = st.fast_top() else {
        return false;
    };
    push_marked(st, top, map, class, subclass, mode, site, key)
}

/// The push for a hit on a marked chain (see `chain::Hit::Nested`), chain key `key`, over the
/// non-empty stack `top` found, when the thread's caches alone show what [`pairs_checked`]
/// accepts: the held locks hold neither the class nor the instance (another subclass of the
/// lock's key held, the `lock_nested` pattern), or they hold an ordered run of the class (see
/// [`pair_cache`](crate::pair_cache)) whose pairs with the lock were checked (every shard of
/// a sharded map taken in order). First the nested memo an earlier such push left in the
/// slot (see `Slot::holds_nested_memo`): the same push over the same held instances is
/// accepted again with no walk of the stack (an ordered run of shards taken again). False
/// (and nothing changed but the pair cache's run) if the caches do not show the pairs
/// checked.
#[inline(always)]
// The acquisition's facts by value, as in `acquire_with`.
#[allow(clippy::too_many_arguments)]
fn push_marked(
    st: &mut ThreadState,
    top: FastTop,
    map: &LockMap,
    class: ClassId,
    subclass: u8,
    mode: Mode,
    site: Site,
    key: u64,
) -> bool {
    let instance = map.instance();
    let len = top.len();
    let p = plain(map, class, subclass, mode, false, site);
    if st.pairs.is_synced(nesting::pair_epoch()) && st.push_nested_memo(top, key, &p) {
        return true;
    }
    if st.holds_class_or_instance(len, class, instance) {
        // What `cached_elsewhere` does for a local marked hit, without the state's borrow,
        // the second chain-key computation and the second lookup of the general path.
        let next = Acquiring {
            class,
            instance,
            key: map.pair_key(),
            mode,
            nest: 0,
        };
        let scan = run_of(st, next);
        if scan.is_none() || !pairs_checked(st, next, scan) {
            return false;
        }
    }
    st.push_fast_checked(top, key, &p);
    true
}

/// Closes the holes on this thread's stack, if it has any (see
/// `ThreadState::close_holes_for_push`); true if it had.
#[inline(always)]
fn close_holes_fast() -> bool {
    // SAFETY: used only here; closing holes moves slots in the record's write section and
    // makes no call that can reach the thread's state.
    match unsafe { thread::state_fast() } {
        Some(st) => st.close_holes_for_push(),
        None => false,
    }
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
        // Holes left by releases below the top (a run of shards released first-taken-first
        // and taken again): closed without the state's borrow, and then the fast path, where
        // the holes had sent every acquisition to `acquire_with`.
        if close_holes_fast() && acquire_fast(map, subclass, mode, trylock, site) {
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
                key: map.pair_key(),
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
