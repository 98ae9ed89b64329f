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

/// The lock-free resolution of [`resolve_locked`] alone, for a general path that may then
/// push as the fast path does: if this thread found the class of `map`'s key before and it
/// still lives, caches it in the map and returns true. False for keys it leaves to
/// [`resolve_locked`] (dynamic keys, whose registration that checks first; an instance's own
/// class; never-validated maps) and for an invalid subclass (reported there).
#[inline]
pub(crate) fn adopt_known(map: &LockMap, subclass: u8) -> bool {
    let key = map.key();
    if subclass >= MAX_SUBCLASSES || matches!(key, KeyRef::Dynamic { .. }) {
        return false;
    }
    take_known(map, key, subclass).is_some()
}

/// The class of `(key, subclass)` from this thread's class cache, cached in `map` (whose key
/// is `key`) on a hit.
#[inline]
fn take_known(map: &LockMap, key: KeyRef, subclass: u8) -> Option<ClassId> {
    let id = known::get(key, subclass)?;
    map.set_cached(subclass, id);
    Some(id)
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
    // A class of this key that this thread found before and that still lives: no graph lock
    // (kernel: `look_up_lock_class()`, a lock-free lookup; only a class to be made takes the
    // graph lock). A new lock of an existing class, the common case of a program that makes
    // locks as it goes (a channel, a connection, a cache entry each), then costs no section.
    if let Some(id) = take_known(map, key, subclass) {
        return (id, None);
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
                    report::arm_exit_line();
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
    known::put(key, subclass, id);
    map.set_cached(subclass, id);
    (id, Some(g))
}

/// Each thread's cache of the classes it resolved: key and subclass to class id, direct-mapped.
/// Keys are matched by their words (addresses and numbers, no string compared): equal words
/// are one key, while two copies of one site or type name (two codegen units) are only two
/// entries. An entry counts only while its class lives (the generation check), so a zapped
/// class (an unregistered key, `lockdep::reset`) is never returned.
mod known {
    use std::cell::Cell;
    use std::ptr;

    use crate::class::{generation, ClassId, KeyRef};

    /// Entries per thread (a power of two: `slot` keeps the hash's top bits).
    const ENTRIES: usize = 64;
    const _: () = assert!(ENTRIES.is_power_of_two());

    #[derive(Clone, Copy)]
    struct Entry {
        words: [u64; 3],
        subclass: u8,
        id: ClassId,
    }

    const EMPTY: Entry = Entry {
        words: [0; 3],
        subclass: 0,
        id: ClassId::NONE,
    };

    thread_local! {
        static TABLE: [Cell<Entry>; ENTRIES] = const { [const { Cell::new(EMPTY) }; ENTRIES] };
    }

    /// The words of `key`, or `None` for keys never cached (an instance's own class, whose
    /// map resolves it once; never-validated maps). The first word tells the kinds apart and
    /// is never 0, so the empty entry matches nothing.
    fn words(key: KeyRef) -> Option<[u64; 3]> {
        Some(match key {
            KeyRef::Static(k) => [1, ptr::from_ref(k.0) as usize as u64, 0],
            KeyRef::Site(site) => [2, ptr::from_ref(site) as usize as u64, 0],
            KeyRef::SiteType { site, ty } => {
                [3, ptr::from_ref(site) as usize as u64, ty.0 as usize as u64]
            }
            KeyRef::Dynamic { addr, serial } => [4, addr as u64, serial],
            KeyRef::Instance(_) | KeyRef::NoValidate => return None,
        })
    }

    fn slot(words: &[u64; 3], subclass: u8) -> usize {
        let h = (words[1] ^ words[2].rotate_left(17) ^ u64::from(subclass) ^ words[0] << 60)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - ENTRIES.trailing_zeros())) as usize
    }

    /// The live class of `(key, subclass)` this thread cached, if any.
    pub(super) fn get(key: KeyRef, subclass: u8) -> Option<ClassId> {
        let words = words(key)?;
        let i = slot(&words, subclass);
        let e = TABLE.try_with(|t| t[i].get()).ok()?;
        (same_words(&e.words, &words) && e.subclass == subclass && generation::is_live(e.id))
            .then_some(e.id)
    }

    /// `a == b`, word by word: the key's words are just made in registers, and an array
    /// compare would store them and load them back 16 bytes at a time, a load that the two
    /// 8-byte stores cannot forward (measured: the stall was most of a new lock's lookup).
    #[inline(always)]
    fn same_words(a: &[u64; 3], b: &[u64; 3]) -> bool {
        (a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) == 0
    }

    /// Caches `id` as the class of `(key, subclass)` (replacing whatever shared its entry).
    pub(super) fn put(key: KeyRef, subclass: u8, id: ClassId) {
        let Some(words) = words(key) else {
            return;
        };
        let i = slot(&words, subclass);
        // A thread past its locals' destruction simply caches nothing.
        let _ = TABLE.try_with(|t| {
            t[i].set(Entry {
                words,
                subclass,
                id,
            })
        });
    }
}
