//! Release (the kernel's `__lock_release()`): the lock leaves the held stack, in any order.

use std::panic::Location;

use super::local::{with_state, with_state_keeping_holes};
use crate::class::ClassId;
use crate::graph_lock::graph_lock;
use crate::held::{Find, Left};
use crate::report::{self, build, AssertKind, Report};

/// What a release found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// The lock was held and is not any more (or the thread's state is unavailable, in which
    /// case nothing is tracked).
    Released,
    /// This thread does not hold the lock.
    NotHeld,
    /// The lock was held and is released, and its entry carried marks: it was pinned (which
    /// is reported; `pinned` is then the site that acquired it), or an instance pair from it
    /// was checked (its map must be told).
    Marked {
        pinned: Option<&'static Location<'static>>,
        paired: bool,
    },
}

/// The usual release, with no call: pops the top entry if it is the one `release` names and
/// nothing on the stack is marked or nest-covered (see `ThreadState::pop_plain`), or, in the
/// same conditions, cuts out the entry below the top if that is the one (a pair released in
/// the order taken: `ThreadState::pop_below_top`). False if nothing changed: then [`release`]
/// does the general work.
#[inline(always)]
pub(crate) fn release_fast(release: Find) -> bool {
    // SAFETY: used only here, and `pop_plain` and `pop_below_top` make no call that can reach
    // the state (the cut copies a slot and re-keys it in the record's write section).
    match unsafe { super::local::state_fast() } {
        Some(st) => st.pop_plain(release) || st.pop_below_top(release),
        None => false,
    }
}

/// The release of an entry below the top of a plain stack, with no borrow of the state (see
/// `ThreadState::release_below_plain`): a vector of guards dropped as it is releases all
/// but its last lock here. False if nothing changed: then [`release`] does the general work.
#[inline]
pub(crate) fn release_below(release: Find) -> bool {
    // SAFETY: used only here, and `release_below_plain` makes no call that can reach the
    // state (a walk of the slots, and a store in the record's write section).
    match unsafe { super::local::state_fast() } {
        Some(st) => st.release_below_plain(release),
        None => false,
    }
}

/// Takes the entry `release` names (the topmost of its lock instance, in its mode if it has
/// one and the thread holds the lock so) off this thread's stack. No lock taken; small return
/// values only.
#[inline]
pub(crate) fn release(release: Find) -> Release {
    // The closure's answer is one word (see `Packed`), so that it comes back in a register:
    // an enum with a site inside went through the stack in pieces, and the wide load that
    // read it back could not be forwarded from the narrow stores (a stall of several ns on
    // every out-of-order release).
    let packed = with_state_keeping_holes(|st| match st.find_release(release) {
        None => Packed::NOT_HELD,
        Some(i) => {
            // Only if some entry carries a mark (rare) can this one, and a pinned entry's
            // report needs the site that acquired it.
            let acquired_at = st.any_marked().then(|| st.entry(i).site);
            match (st.release_leaving_hole(i), acquired_at) {
                (
                    Left {
                        pins: 0,
                        paired: false,
                    },
                    _,
                )
                | (_, None) => Packed::RELEASED,
                (Left { pins, paired }, Some(site)) => {
                    Packed::marked((pins > 0).then_some(site), paired)
                }
            }
        }
    });
    packed.map_or(Release::Released, Packed::unpack)
}

/// A [`Release`] in one word: `RELEASED`, `NOT_HELD`, or a marked release as a pointer to the
/// acquiring site (null if not pinned) tagged in its two low bits: bit 1 set (marked), bit 0
/// the paired mark. A pointer, not an address, so that the site keeps its provenance.
#[derive(Clone, Copy)]
struct Packed(*const Location<'static>);

impl Packed {
    const RELEASED: Packed = Packed(std::ptr::null());
    const NOT_HELD: Packed = Packed(std::ptr::without_provenance(1));
    /// The marked tag: no site has it (sites are aligned to more than 2 bytes).
    const MARKED: usize = 2;

    #[inline]
    fn marked(pinned: Option<&'static Location<'static>>, paired: bool) -> Packed {
        const { assert!(std::mem::align_of::<Location<'static>>() >= 4) };
        let site: *const Location<'static> = pinned.map_or(std::ptr::null(), std::ptr::from_ref);
        Packed(site.map_addr(|a| a | Self::MARKED | usize::from(paired)))
    }

    #[inline]
    fn unpack(self) -> Release {
        match self.0.addr() {
            0 => Release::Released,
            1 => Release::NotHeld,
            w => {
                let site = self.0.map_addr(|a| a & !(Self::MARKED | 1));
                Release::Marked {
                    // SAFETY: a non-null `site` is the `&'static Location` that `marked`
                    // tagged, its tag cleared again: it points to a live `Location` for the
                    // rest of the program.
                    pinned: (!site.is_null()).then(|| unsafe { &*site }),
                    paired: w & 1 != 0,
                }
            }
        }
    }
}

/// Reports what [`release`] found for the lock map `name` at `instance` (its cached class
/// `class`), released at `site` (the guard-drop placeholder when the site is unknown: the
/// report then shows "(guard drop)" and, for a pinned lock, its acquisition site). Nothing for
/// [`Release::Released`] or an unpinned [`Release::Marked`].
#[cold]
pub(crate) fn report_release(
    found: Release,
    name: &str,
    class: ClassId,
    instance: usize,
    site: &'static Location<'static>,
) {
    if let Release::Released | Release::Marked { pinned: None, .. } = found {
        return;
    }
    let r = with_state(|st| {
        let g = graph_lock();
        match found {
            Release::Released | Release::Marked { pinned: None, .. } => None,
            Release::NotHeld => Some(build::bad_unlock(&g.graph, st, name, class, instance, site)),
            Release::Marked {
                pinned: Some(acquired),
                ..
            } => {
                let mut r = build::assertion_failed(
                    &g.graph,
                    st,
                    AssertKind::ReleasedWhilePinned,
                    name,
                    site,
                );
                if let Report::AssertionFailed { acquired_at, .. } = &mut r {
                    *acquired_at = Some(acquired);
                }
                Some(r)
            }
        }
    });
    if let Some(Some(r)) = r {
        report::deliver(vec![r]);
    }
}
