//! The rest of a chain-cache lookup after the thread's own cache gave no plain hit (the
//! global chain table), and for a chain that nests a class in itself, or may hold the new
//! lock's instance under another class, the check of its instance pairs from the thread's
//! cache of checked pairs and ordered runs (see [`pair_cache`]). No lock
//! is taken here: what these caches cannot show goes to the graph lock's slow path.

use crate::chain::{self, Hit};
use crate::class::ClassId;
use crate::graph_lock::Global;
use crate::held::{HeldLock, ThreadState};
use crate::mode::{blocks, Kind, Mode};
use crate::nesting;
use crate::pair_cache::{self, Scan};

/// What the pair check needs of an acquisition.
#[derive(Clone, Copy)]
pub(super) struct Acquiring {
    pub(super) class: ClassId,
    pub(super) instance: usize,
    /// Its key in the instance-order pairs (see `LockMap::pair_key`).
    pub(super) key: usize,
    pub(super) mode: Mode,
    /// The nest_lock's instance, or 0.
    pub(super) nest: usize,
}

impl Acquiring {
    pub(super) fn of(h: &HeldLock) -> Acquiring {
        Acquiring {
            class: h.class,
            instance: h.instance,
            key: h.pair_key(),
            mode: h.acquired_as(),
            nest: h.nest_lock,
        }
    }

    /// Tells this acquisition, at stack depth `depth`, from others (for a kept scan).
    pub(super) fn tag(self, depth: usize) -> u64 {
        pair_cache::hash_words([
            self.class.to_bits(),
            self.instance as u64,
            self.mode.code() | (depth as u64) << 2,
            self.nest as u64,
        ])
    }
}

/// The rest of a chain-cache lookup after the thread's cache did not give a plain hit for
/// `key`: the global table, and for a chain that nests a class in itself, its instance pairs.
/// Out of line, so that the plain hit keeps the short code it had.
#[inline(never)]
pub(super) fn cached_elsewhere(
    st: &mut ThreadState,
    key: u64,
    local: Hit,
    next: Acquiring,
) -> bool {
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
pub(super) fn run_of(st: &ThreadState, next: Acquiring) -> Scan {
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
        fp = pair_cache::fingerprint(fp, s.pair_key());
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
pub(super) fn may_hold_instance(g: &Global, st: &ThreadState, next: &HeldLock) -> bool {
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
/// grows again). In every accepted case the graph already orders `next` after every held
/// instance of its class: by a recorded pair, or, for a run, by a path of recorded pairs
/// through the top, where the slow path would record the direct pair too (so with the caches
/// off the graph holds more pairs, and an inversion's report may show a shorter cycle; the
/// same inversions are reported: see `set_chain_cache`). An accepted candidate run grows by
/// `next`. No lock taken.
#[inline(never)]
pub(super) fn pairs_checked(st: &mut ThreadState, next: Acquiring, scan: Scan) -> bool {
    let epoch = nesting::pair_epoch();
    st.sync_pairs(epoch);
    let Some((fp, i)) = scan else {
        return pairs_with_next(st, next);
    };
    // A candidate run: every held instance of the class is held exclusively, `next` too, it
    // has no nest_lock and its instance is not held, so only the class's pairs decide.
    let top = st.held_slots()[i].pair_key();
    let kind = Kind::of(Mode::Exclusive, Mode::Exclusive);
    let accepted = st.pairs.contains(top, next.key, next.class, kind)
        && (st.pairs.is_run(epoch, next.class, fp, top)
            || consecutive_pairs_cached(st, next.class)
            || pairs_with_next(st, next));
    if accepted {
        // Every held instance has a path to the top and the top its pair with `next`: the
        // grown set is an ordered run with `next` on top, so the acquisition after it needs
        // only its pair with `next`.
        let grown = pair_cache::fingerprint(fp, next.key);
        st.pairs.set_run(next.class, grown, next.key);
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
                    s.pair_key(),
                    next.key,
                    next.class,
                    Kind::of(s.mode(), next.mode),
                )
        } else {
            true
        }
    })
}

/// `is_ordered_run` (of [`new_chain`](super::new_chain)) from this thread's cache of checked pairs
/// instead of the graph: the held instances of `class`, bottom to top, each have their exclusive
/// pair with the next one in the cache (a cached pair was checked, under the current pair epoch:
/// the cache is emptied whenever a pair may leave the graph). For a candidate run ([`run_of`]: all
/// held exclusively).
fn consecutive_pairs_cached(st: &ThreadState, class: ClassId) -> bool {
    let kind = Kind::of(Mode::Exclusive, Mode::Exclusive);
    let mut below: Option<usize> = None;
    let bits = class.to_bits();
    st.held_slots()
        .iter()
        .filter(|s| s.class_bits() == bits)
        .all(|s| {
            let key = s.pair_key();
            let paired = below.is_none_or(|from| st.pairs.contains(from, key, class, kind));
            below = Some(key);
            paired
        })
}
