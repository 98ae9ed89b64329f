//! The chains this thread found invalid again: an acquisition whose validation only repeats
//! reports already made is counted without the validation (see
//! [`report::Replay`](crate::report::Replay)).
//!
//! A chain the search found closing a cycle is never cached as validated (its dependency is
//! not recorded), so each new occurrence would take the graph lock, search the cycle again
//! and build its report again, only for the delivery to count it as a repeat: about 0.75 µs
//! an acquisition on an Intel Xeon, against 26 ns for the pair in its good order (0.8 µs for
//! two instances of one class taken in the order opposite to their pair's), and every thread
//! doing it queues on the one graph lock (1.9 µs with two). Replayed: 0.11–0.15 µs.
//!
//! After the second occurrence (the first one that was only counted) this thread keeps what
//! the delivery came to, keyed by the chain key and the sites of the held locks and of the lock
//! taken (a report names them, and a suppression may match on them); the next occurrence,
//! while the graph has the shape it was searched in ([`Shape`]) and the replay is current, is
//! counted and pushed, marked as not recorded as the validation would have left it.
//!
//! What else the verdict depends on is in the key too: whether a task is being polled (the
//! walk of the held locks goes further in a poll, see `check_prevs_add`) and, for a chain that
//! nests a class in itself, which instances it holds and takes (their pair keys: the
//! instance-order pairs are about them). Chains that take a nest lock or hold the lock's own
//! instance are not kept, and only batches of cycle, recursive-locking and nesting reports,
//! whose text is about classes, modes, sites and those instances. A thread keeps at most
//! [`KEPT`] chains, the oldest going first.
//!
//! A poll's end that finds blocking locks held across an `.await` keeps its batch here too,
//! under [`HELD_ACROSS_AWAIT`] and the locks' classes and sites ([`await_sites`]): a task
//! that keeps awaiting with a guard held (0.37 µs a poll, against 0.09 without the report,
//! on the Intel Xeon) is counted without the graph lock from its third poll on.

use std::cell::RefCell;
use std::rc::Rc;

use crate::held::HeldLock;
use crate::nesting::{self, Nesting};
use crate::pair_cache;
use crate::report::Replay;

/// The most chains one thread keeps.
const KEPT: usize = 32;

/// One kept chain.
struct Kept {
    /// The chain key of the acquisition.
    key: u64,
    /// The sites of the held locks and of the lock taken ([`sites_of`]).
    sites: u64,
    /// The graph when the cycle was found.
    shape: Shape,
    replay: Rc<Replay>,
}

thread_local! {
    static KEPT_CHAINS: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// What of the graph a kept chain's verdict was found in: the shape epoch (a dependency or an
/// instance pair recorded, a class zapped), the pair epoch (instance pairs forgotten) and the
/// nesting rule. Read without the graph lock; taken under it when a cycle is found.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    graph: u64,
    pairs: u64,
    strict: bool,
}

impl Shape {
    pub(crate) fn now() -> Shape {
        Shape {
            graph: crate::graph::shape(),
            pairs: nesting::pair_epoch(),
            strict: nesting::nesting() == Nesting::Strict,
        }
    }
}

/// The part of a kept chain's key that the chain key leaves out: the acquisition sites of the
/// held locks `held` and of the lock taken, `next`, whether a task is being polled and, if
/// `nested` (a class of the chain nests in itself), their pair keys.
pub(super) fn sites_of(held: impl Iterator<Item = HeldLock>, next: &HeldLock, nested: bool) -> u64 {
    let words = |e: &HeldLock| {
        let site = std::ptr::from_ref(e.site).addr() as u64;
        [site, e.pair_key() as u64]
            .into_iter()
            .take(if nested { 2 } else { 1 })
    };
    let poll = u64::from(crate::current_task::get().is_some());
    pair_cache::hash_words(
        std::iter::once(poll)
            .chain(held.flat_map(move |e| words(&e)))
            .chain(words(next)),
    )
}

/// The key under which a poll's end keeps the blocking locks it found held across an
/// `.await` (see [`await_sites`]): no chain key is this word (a chance of 1 in 2^64).
pub(crate) const HELD_ACROSS_AWAIT: u64 = 0x4157_4149_5448_454c;

/// The part of a `HeldAcrossAwait` batch's key that tells it from another: each blocking lock's
/// class (its id, so its name), site, mode and trylock flag, what the report's identity and a
/// suppression read.
pub(crate) fn await_sites(held: impl Iterator<Item = HeldLock>) -> u64 {
    pair_cache::hash_words(held.flat_map(|h| {
        [
            h.class.to_bits(),
            std::ptr::from_ref(h.site).addr() as u64,
            h.mode.code() | u64::from(h.trylock) << 2,
        ]
    }))
}

/// The replay kept for the chain `key` with `sites`, if it still applies; a stale one is
/// forgotten. No lock.
pub(crate) fn find(key: u64, sites: u64) -> Option<Rc<Replay>> {
    KEPT_CHAINS
        .try_with(|k| {
            let mut kept = k.borrow_mut();
            let i = kept.iter().position(|c| c.key == key && c.sites == sites)?;
            let c = &kept[i];
            if c.shape == Shape::now() && c.replay.is_current() {
                Some(Rc::clone(&c.replay))
            } else {
                kept.swap_remove(i);
                None
            }
        })
        .ok()
        .flatten()
}

/// Keeps `replay` for the chain `key` with `sites`, whose reports were found in `shape`.
pub(crate) fn keep(key: u64, sites: u64, shape: Shape, replay: Replay) {
    let _ = KEPT_CHAINS.try_with(|k| {
        let mut kept = k.borrow_mut();
        kept.retain(|c| !(c.key == key && c.sites == sites));
        if kept.len() == KEPT {
            kept.remove(0);
        }
        kept.push(Kept {
            key,
            sites,
            shape,
            replay: Rc::new(replay),
        });
    });
}

/// Forgets every kept chain of this thread (the validator's reset).
pub(crate) fn clear() {
    let _ = KEPT_CHAINS.try_with(|k| k.borrow_mut().clear());
}
