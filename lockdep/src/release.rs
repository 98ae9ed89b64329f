//! Release, freed-lock and thread-exit hooks (the kernel's `__lock_release()`,
//! `debug_check_no_locks_freed()` and the held-at-exit check).

use std::panic::Location;

use crate::describe::{held_descs, held_descs_locked, lock_desc, thread_desc};
use crate::held::{with_state, HeldLock, ThreadState};
use crate::map::LockMap;
use crate::policy;
use crate::report::{LockDesc, Report};
use crate::state::graph_lock;
use crate::types::Mode;

type Site = &'static Location<'static>;

/// See [`crate::release`].
#[inline]
pub(crate) fn release(map: &LockMap, site: Site) {
    let instance = map.instance();
    // Small return values only: this is the hot path.
    let problem = with_state(|st| {
        let Some(i) = st.find(instance) else {
            return Some(false);
        };
        let pinned = st.release_at(i) > 0;
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
pub(crate) fn check_no_locks_freed(addr: *const u8, len: usize, site: Option<Site>) {
    let (lo, hi) = (addr as usize, addr as usize + len);
    let reports = with_state(|st| {
        let mut out = Vec::new();
        while let Some(i) = st
            .held
            .iter()
            .position(|h| h.instance >= lo && h.instance < hi)
        {
            let h = st.remove(i);
            let g = graph_lock();
            out.push(Report::HeldLockFreed {
                thread: thread_desc(st),
                lock: lock_desc(&g, &h),
                range: (lo, hi),
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
        let g = graph_lock();
        held.iter().map(|h| lock_desc(&g, h)).collect()
    };
    policy::deliver_no_unwind(&Report::LockHeldAtExit {
        thread: thread_desc(st),
        held,
    });
}
