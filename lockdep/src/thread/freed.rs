//! Freed or re-initialised memory that still holds a lock of this thread (the kernel's
//! `debug_check_no_locks_freed()`).

use std::panic::Location;

use super::local::{state_fast, with_state};
use crate::graph_lock::graph_lock;
use crate::report::{self, build};

/// Reports and forgets every lock this thread holds whose map lies in `[addr, addr + len)`.
/// `site` is where the memory is freed, `None` when a lock map is dropped.
#[inline]
pub(crate) fn check_no_locks_freed(
    addr: *const u8,
    len: usize,
    site: Option<&'static Location<'static>>,
) {
    let (lo, hi) = (addr as usize, addr as usize + len);
    // Most freed memory holds no lock of this thread (the thread holds none, say): one look
    // at the held entries' instance words, with no borrow of the state, settles it. Other
    // threads' mail only ever takes entries away or changes their mode, so what is not held
    // now needs none of it.
    // SAFETY: used only for `holds_instance_in`, which makes no call.
    if let Some(st) = unsafe { state_fast() } {
        if !st.holds_instance_in(lo, hi) {
            return;
        }
    }
    forget_freed((lo, hi), site);
}

/// [`check_no_locks_freed`] once a held entry may lie in `[lo, hi)` (or the state is borrowed).
#[cold]
#[inline(never)]
fn forget_freed((lo, hi): (usize, usize), site: Option<&'static Location<'static>>) {
    let reports = with_state(|st| {
        let mut out = Vec::new();
        while let Some(i) = st
            .entries()
            .iter()
            .position(|h| h.instance >= lo && h.instance < hi)
        {
            let h = st.remove(i);
            let mut g = graph_lock();
            if h.paired {
                // Its map may never have been told (the mark is handed over on release).
                g.graph.forget_instance(h.pair_key());
            }
            out.push(build::held_lock_freed(&g.graph, st, &h, (lo, hi), site));
        }
        out
    });
    if let Some(r) = reports {
        if !r.is_empty() {
            report::deliver(r);
        }
    }
}
