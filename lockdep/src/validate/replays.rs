//! The chains this thread found invalid again: an acquisition whose validation only repeats
//! reports already made is counted without the validation (see
//! [`report::Replay`](crate::report::Replay)).
//!
//! A chain the search found closing a cycle is never cached as validated (its dependency is
//! not recorded), so each new occurrence would take the graph lock, search the cycle again
//! and build its report again, only for the delivery to count it as a repeat: about 0.75 µs
//! an acquisition on an Intel Xeon, against 26 ns for the pair in its good order, and every
//! thread doing it queues on the one graph lock. After the second occurrence (the first one
//! that was only counted) this thread keeps what the delivery came to, keyed by the chain key
//! and the sites of the held locks and of the lock taken (a cycle's report names them, and a
//! suppression may match on them); the next occurrence, while the graph has the shape it was
//! searched in ([`graph::shape`](crate::graph::shape)) and the replay is current, is counted
//! and pushed, marked as not recorded as the validation would have left it.
//!
//! Only chains that nest no class in itself, take no nest lock and hold no entry of the lock's
//! own instance are kept, and only batches of cycle reports: their reports are about classes,
//! modes and sites alone, and the walk that finds them about whether a task is being polled,
//! which the key and the stamps cover. A thread keeps at most [`KEPT`] of them, the oldest going first.

use std::cell::RefCell;
use std::rc::Rc;

use super::Site;
use crate::held::HeldLock;
use crate::report::Replay;

/// The most chains one thread keeps.
pub(super) const KEPT: usize = 32;

/// One kept chain.
struct Kept {
    /// The chain key of the acquisition.
    key: u64,
    /// The sites of the held locks and of the lock taken ([`sites_of`]).
    sites: u64,
    /// The graph's shape epoch when the cycle was found.
    shape: u64,
    replay: Rc<Replay>,
}

thread_local! {
    static KEPT_CHAINS: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// A hash of the acquisition sites of the held locks, `held`, and of the lock taken, `next`,
/// and of whether a task is being polled (the walk of the held locks goes further in a poll,
/// see `check_prevs_add`): their addresses, each folded in with a multiply, and the sum mixed
/// with MurmurHash3's 64-bit finalizer.
pub(super) fn sites_of(held: impl Iterator<Item = Site>, next: &HeldLock) -> u64 {
    let mut h: u64 = u64::from(crate::current_task::get().is_some());
    for site in held.chain([next.site]) {
        let a = std::ptr::from_ref(site).addr() as u64;
        h = (h.rotate_left(23) ^ a).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ h >> 33
}

/// The replay kept for the chain `key` with `sites`, if it still applies; a stale one is
/// forgotten. No lock.
pub(super) fn find(key: u64, sites: u64) -> Option<Rc<Replay>> {
    KEPT_CHAINS
        .try_with(|k| {
            let mut kept = k.borrow_mut();
            let i = kept.iter().position(|c| c.key == key && c.sites == sites)?;
            let c = &kept[i];
            if c.shape == crate::graph::shape() && c.replay.is_current() {
                Some(Rc::clone(&c.replay))
            } else {
                kept.swap_remove(i);
                None
            }
        })
        .ok()
        .flatten()
}

/// Keeps `replay` for the chain `key` with `sites`, whose cycle was found in the graph of
/// shape `shape`.
pub(super) fn keep(key: u64, sites: u64, shape: u64, replay: Replay) {
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
