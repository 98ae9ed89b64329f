//! Class lookup for a lock map (the kernel's `register_lock_class()` / `look_up_lock_class()`,
//! with the dynamic-key check of `is_dynamic_key()`), and key-misuse reports.

use std::panic::Location;

use crate::class;
use crate::describe::current_thread_desc;
use crate::held::with_state;
use crate::key::KeyRef;
use crate::keys;
use crate::map::LockMap;
use crate::policy;
use crate::report::{Capacity, KeyMisuse, Report};
use crate::state::graph_lock;
use crate::types::{ClassId, MAX_SUBCLASSES};

type Site = &'static Location<'static>;

/// Reports a key misuse now. Call with no validator lock held and no thread-state borrow.
pub(crate) fn misuse(kind: KeyMisuse, name: &str, site: Site) {
    policy::deliver(vec![Report::KeyMisuse {
        thread: current_thread_desc(),
        kind,
        key: name.to_owned(),
        site,
    }]);
}

/// Reports a misuse once per (key serial, kind).
fn misuse_once(serial: u64, kind: KeyMisuse, name: &str, site: Site) {
    let first = graph_lock().reported_misuse.insert((serial, kind));
    if first {
        misuse(kind, name, site);
    }
}

/// True if this thread holds a lock of one of `key`'s classes.
pub(crate) fn holds_key(key: KeyRef) -> bool {
    with_state(|st| {
        if st.held.is_empty() {
            return false;
        }
        let g = graph_lock();
        st.held
            .iter()
            .any(|h| g.graph.class(h.class).is_some_and(|c| c.key == key))
    })
    .unwrap_or(false)
}

/// The class of `map` for `subclass`: from the map's cache when it is still live, else looked
/// up or created under the graph lock. `ClassId::NONE` (after a report) if the key is not
/// registered or classes ran out.
#[inline]
pub(crate) fn resolve_class(map: &LockMap, subclass: u8, site: Site) -> ClassId {
    let cached = map.cached(subclass);
    if !cached.is_none() && class::is_live(cached) {
        return cached;
    }
    resolve_slow(map, subclass, site)
}

#[cold]
fn resolve_slow(map: &LockMap, subclass: u8, site: Site) -> ClassId {
    if map.key() == KeyRef::NoValidate {
        return ClassId::NONE;
    }
    if subclass >= MAX_SUBCLASSES {
        misuse(KeyMisuse::InvalidSubclass, map.name(), site);
        return ClassId::NONE;
    }
    let key = map.key();
    if let KeyRef::Dynamic { addr, serial } = key {
        // The lock-free, hazard-pointer-protected lookup (kernel: `is_dynamic_key()`).
        if !keys::is_registered(addr, serial) {
            misuse_once(serial, KeyMisuse::NotRegistered, map.name(), site);
            return ClassId::NONE;
        }
    }
    let mut g = graph_lock();
    let found = g
        .graph
        .by_key
        .get(&(key, subclass))
        .and_then(|&i| g.graph.slot(i))
        .map(|c| c.id);
    let id = match found {
        Some(id) => id,
        None => {
            if let KeyRef::Dynamic { addr, serial } = key {
                // Unregistered since the lock-free check: registration changes only under the
                // graph lock, so this answer is final.
                if !keys::is_registered_locked(addr, serial) {
                    drop(g);
                    misuse_once(serial, KeyMisuse::NotRegistered, map.name(), site);
                    return ClassId::NONE;
                }
            }
            match g.graph.alloc(key, subclass, map.name()) {
                Ok(id) => id,
                Err(()) => {
                    let first = !std::mem::replace(&mut g.classes_exhausted_reported, true);
                    drop(g);
                    if first {
                        policy::deliver(vec![Report::CapacityExhausted {
                            thread: current_thread_desc(),
                            what: Capacity::Classes,
                            limit: class::MAX_CLASSES,
                        }]);
                    }
                    return ClassId::NONE;
                }
            }
        }
    };
    drop(g);
    map.set_cached(subclass, id);
    id
}
