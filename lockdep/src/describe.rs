//! Turning held-lock entries and threads into report descriptions.

use crate::held::with_state;
use crate::held::{HeldLock, ThreadState};
use crate::report::{LockDesc, ThreadDesc};
use crate::state::{graph_lock, Global};

pub(crate) fn thread_desc(st: &ThreadState) -> ThreadDesc {
    ThreadDesc {
        name: st.identity().1.clone(),
        id: st.identity().0,
    }
}

pub(crate) fn current_thread_desc() -> ThreadDesc {
    with_state(|st| thread_desc(st)).unwrap_or_else(|| ThreadDesc {
        name: "<exiting>".to_owned(),
        id: 0,
    })
}

pub(crate) fn lock_desc(g: &Global, h: &HeldLock) -> LockDesc {
    let class_name = match g.graph.class(h.class) {
        Some(c) => c.name.to_string(),
        None if h.subclass == 0 => h.name.to_owned(),
        None => format!("{}/{}", h.name, h.subclass),
    };
    LockDesc {
        class: h.class,
        class_name,
        instance: h.instance,
        mode: h.mode,
        trylock: h.trylock,
        site: h.site,
    }
}

pub(crate) fn held_descs_locked(g: &Global, st: &ThreadState) -> Vec<LockDesc> {
    st.held.iter().map(|h| lock_desc(g, h)).collect()
}

/// Held locks of this thread, with names; takes the graph lock (never call it while holding
/// the graph lock).
pub(crate) fn held_descs(st: &ThreadState) -> Vec<LockDesc> {
    let g = graph_lock();
    held_descs_locked(&g, st)
}
