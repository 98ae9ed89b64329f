//! Release (the kernel's `__lock_release()`): the lock leaves the held stack, in any order.

use std::panic::Location;

use super::local::with_state;
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
/// nothing on the stack is marked or nest-covered (see `ThreadState::pop_plain`). False if
/// nothing changed: then [`release`] does the general work.
#[inline(always)]
pub(crate) fn release_fast(release: Find) -> bool {
    // SAFETY: used only here, and `pop_plain` makes no call that can reach the state.
    match unsafe { super::local::state_fast() } {
        Some(st) => st.pop_plain(release),
        None => false,
    }
}

/// Takes the entry `release` names (the topmost of its lock instance, in its mode if it has
/// one and the thread holds the lock so) off this thread's stack. No lock taken; small return
/// values only.
#[inline]
pub(crate) fn release(release: Find) -> Release {
    with_state(|st| match st.find_release(release) {
        None => Release::NotHeld,
        Some(i) => {
            // Only if some entry carries a mark (rare) can this one, and a pinned entry's
            // report needs the site that acquired it.
            let acquired_at = st.any_marked().then(|| st.entry(i).site);
            match (st.release_at(i), acquired_at) {
                (
                    Left {
                        pins: 0,
                        paired: false,
                    },
                    _,
                )
                | (_, None) => Release::Released,
                (Left { pins, paired }, Some(site)) => Release::Marked {
                    pinned: (pins > 0).then_some(site),
                    paired,
                },
            }
        }
    })
    .unwrap_or(Release::Released)
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
