//! The first step of an acquisition: the class of a lock map for a subclass (the kernel's
//! `look_up_lock_class()` / `register_lock_class()`, with the dynamic-key check of
//! `is_dynamic_key()`).
//!
//! Fast: the class id cached in the map, if its generation says it is still live (no lock, no
//! shared write). Slow, once per map and class: a dynamic key is looked up lock-free in the
//! key table ([`keys::lookup`](crate::keys::lookup)), then the class is found or created in
//! the class table under the graph lock, and cached in the map. An acquisition keeps that
//! section open ([`resolve_locked`]) to validate its new chain in it, as the kernel's
//! `__lock_acquire()` runs `register_lock_class()` and `validate_chain()` under one
//! `graph_lock()`: a new lock costs the other threads one graph-lock section, not two.

use std::panic::Location;

use crate::class::{generation, name, ClassId, KeyRef};
use crate::graph_lock::{graph_lock, GraphGuard};
use crate::keys::{lookup, misuse};
use crate::limits::MAX_SUBCLASSES;
use crate::map::LockMap;
use crate::report::{self, build, Capacity, KeyMisuse};
use crate::thread;

type Site = &'static Location<'static>;

/// The class of `map` for `subclass`. [`ClassId::NONE`] (after a report) if the key is not
/// registered or classes ran out, and for maps that are never validated.
#[inline]
pub(crate) fn resolve_class(map: &LockMap, subclass: u8, site: Site) -> ClassId {
    match cached_class(map, subclass) {
        Some(class) => class,
        None => resolve_slow(map, subclass, site),
    }
}

/// The class `map` caches for `subclass`, if it is still live: the fast half of
/// [`resolve_class`], no lock, no write.
#[inline(always)]
pub(crate) fn cached_class(map: &LockMap, subclass: u8) -> Option<ClassId> {
    let cached = map.cached(subclass);
    generation::is_live(cached).then_some(cached)
}

/// [`cached_class`] for the fast path of a thread that holds a held-lock record (see
/// `generation::is_live_sealed`): one compare. Its answer counts only if the caller then finds
/// the record; the check may run first.
#[inline(always)]
pub(crate) fn cached_class_sealed(map: &LockMap, subclass: u8) -> Option<ClassId> {
    let cached = map.cached(subclass);
    generation::is_live_sealed(cached).then_some(cached)
}

#[cold]
fn resolve_slow(map: &LockMap, subclass: u8, site: Site) -> ClassId {
    resolve_locked(map, subclass, site).0
}

/// The slow half of [`resolve_class`] (call it after [`cached_class`] missed), leaving the
/// graph-lock section it took open: the class, cached in the map, with the guard, so that the
/// caller validates the new chain in the same section. [`ClassId::NONE`] and no guard if no
/// class is found or made (after a report, delivered with no lock held) or the map is never
/// validated.
#[cold]
pub(crate) fn resolve_locked(
    map: &LockMap,
    subclass: u8,
    site: Site,
) -> (ClassId, Option<GraphGuard>) {
    const NONE: (ClassId, Option<GraphGuard>) = (ClassId::NONE, None);
    let key = map.key();
    if key == KeyRef::NoValidate {
        return NONE;
    }
    if subclass >= MAX_SUBCLASSES {
        misuse::report_lock(KeyMisuse::InvalidSubclass, &map.report_name(), site);
        return NONE;
    }
    if let KeyRef::Dynamic { addr, serial } = key {
        // The lock-free, hazard-pointer-protected lookup (kernel: `is_dynamic_key()`).
        if !lookup::is_registered(addr, serial) {
            misuse::report_lock(KeyMisuse::NotRegistered, &map.report_name(), site);
            return NONE;
        }
    }
    let mut g = graph_lock();
    let id = match g.graph.find(key, subclass) {
        Some(id) => id,
        None => {
            if let KeyRef::Dynamic { addr, serial } = key {
                // Unregistered since the lock-free check: registration changes only under the
                // graph lock, so this answer is final.
                if !lookup::is_registered_locked(&g, addr, serial) {
                    drop(g);
                    misuse::report_lock(KeyMisuse::NotRegistered, &map.report_name(), site);
                    return NONE;
                }
            }
            let nesting = match key {
                KeyRef::Static(k) => k.0.nesting(),
                KeyRef::Dynamic { addr, serial } => lookup::nesting_of_locked(&g, addr, serial),
                _ => None,
            };
            let name = match key {
                // A map of a dynamic key with no name of its own: its class reads as the key.
                KeyRef::Dynamic { addr, serial } if map.name().is_empty() => {
                    lookup::name_of_locked(&g, addr, serial)
                        .map_or(std::borrow::Cow::Borrowed(""), |n| n.to_string().into())
                }
                _ => name::class_name(map.name(), map.is_named(), key),
            };
            match g.graph.create(key, subclass, &name, nesting) {
                Ok(id) => {
                    if let KeyRef::Static(k) = key {
                        if k.0.has_suppressions() {
                            // Its marks are declared with its first class (a leaf lock).
                            report::register_key_suppressions(k.0, &name);
                        }
                    }
                    // Room was made: a later exhaustion is a new episode.
                    g.classes_exhausted = false;
                    id
                }
                Err(_full) => {
                    let starts = !std::mem::replace(&mut g.classes_exhausted, true);
                    drop(g);
                    if starts {
                        let episode = report::episode::next(Capacity::Classes);
                        let r = build::classes_exhausted(thread::current_thread(), episode);
                        report::deliver(vec![r]);
                    }
                    return NONE;
                }
            }
        }
    };
    map.set_cached(subclass, id);
    (id, Some(g))
}
