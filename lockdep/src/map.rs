//! The per-lock-instance map (the kernel's `struct lockdep_map`).

use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::class::{ClassCache, ClassId, KeyRef};
use crate::graph_lock::graph_lock;
use crate::keys::{misuse, DynamicKey, LockClassKey};
use crate::report::KeyMisuse;
use crate::thread;

/// The validator's view of one lock instance: which class it belongs to, and its name.
///
/// Embed one in every lock (the kernel's `struct lockdep_map`), and pass it to
/// [`acquire`](crate::acquire) / [`release`](crate::release). The map's address is the lock
/// *instance*; the map must not move while the lock is held (true whenever guards borrow
/// the lock). Dropping the map checks that this thread does not hold it
/// ([`Report::HeldLockFreed`](crate::Report::HeldLockFreed)).
///
/// The class is derived from:
/// - the construction site (`#[track_caller]` of [`LockMap::new`]) by default, like the
///   kernel's per-init-site static key;
/// - a static [`LockClassKey`] ([`LockMap::with_key`], the kernel's `lockdep_set_class()`);
/// - a [`DynamicKey`] ([`LockMap::with_dynamic_key`]).
///
/// Plus a subclass 0..[`MAX_SUBCLASSES`](crate::MAX_SUBCLASSES) chosen per acquisition. The
/// map caches two class ids, subclass 0 and the last other subclass used (the kernel's
/// `class_cache[]`), so a cached acquire never takes the graph lock; a map used alternately at
/// two non-zero subclasses looks its class up under the graph lock.
///
/// Size: 56 bytes on 64-bit targets. `Send + Sync`.
pub struct LockMap {
    key: KeyRef,
    name: &'static str,
    /// The class ids of subclass 0 and of the last other subclass used.
    cache: ClassCache,
}

impl std::fmt::Debug for LockMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockMap")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish()
    }
}

impl LockMap {
    fn from_key(name: &'static str, key: KeyRef) -> LockMap {
        LockMap {
            key,
            name,
            cache: ClassCache::new(),
        }
    }

    /// A map whose class is the caller's source location: every lock constructed at the same
    /// place (file, line, column) is the same class. Use `#[track_caller]` on the lock's
    /// constructor so the site is the user's, not the wrapper's.
    #[track_caller]
    pub fn new(name: &'static str) -> LockMap {
        LockMap::from_key(name, KeyRef::Site(Location::caller()))
    }

    /// A map that is tracked (it is on the held stack, assertions see it, releasing it when not
    /// held is reported) but never validated: it gets no class, no dependency into or out of
    /// it, and no recursion check; a lock below it on the held stack orders before locks
    /// taken above it, as if it were not there. The kernel's `lockdep_set_novalidate_class()`,
    /// for locks whose nesting the validator cannot express.
    pub fn novalidate(name: &'static str) -> LockMap {
        LockMap::from_key(name, KeyRef::NoValidate)
    }

    /// A map that is its own class (opt-in per-instance mode, like tracing-mutex or Abseil):
    /// only this lock instance belongs to it, and dropping the map removes its classes and
    /// their dependencies, so a lock created later (even at the same address) starts clean.
    /// Costs one graph-lock acquisition when the map is dropped. Use it for locks whose
    /// instances have no common order; classes (the default) catch more, because one
    /// observed order then covers every instance.
    pub fn per_instance(name: &'static str) -> LockMap {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        // Relaxed: a unique number is all that is needed.
        let serial = NEXT.fetch_add(1, Ordering::Relaxed);
        LockMap::from_key(name, KeyRef::Instance(serial))
    }

    /// A map whose class is the static key `key`.
    pub fn with_key(name: &'static str, key: &'static LockClassKey) -> LockMap {
        LockMap::from_key(name, KeyRef::Static(key as *const LockClassKey as usize))
    }

    /// A map whose class is the dynamic key `key`. The map does not borrow the key; if the key
    /// is not registered now, or is unregistered or dropped later, using the map gives
    /// [`KeyMisuse::NotRegistered`](crate::KeyMisuse) (never a crash). The kernel checks this
    /// in `lockdep_init_map()`.
    #[track_caller]
    pub fn with_dynamic_key(name: &'static str, key: &DynamicKey) -> LockMap {
        if !key.is_registered() {
            misuse::report(KeyMisuse::NotRegistered, key.name(), Location::caller());
        }
        LockMap::from_key(name, key.key_ref())
    }

    /// Moves the map to the class of a static key (the kernel's `lockdep_set_class()`).
    /// Needs `&mut`, so it cannot race with an acquisition.
    pub fn set_key(&mut self, key: &'static LockClassKey) {
        *self = LockMap::with_key(self.name, key);
    }

    /// Moves the map to the classes of a dynamic key.
    #[track_caller]
    pub fn set_dynamic_key(&mut self, key: &DynamicKey) {
        *self = LockMap::with_dynamic_key(self.name, key);
    }

    /// The map's name (used as the class name when this map creates the class).
    #[inline]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Re-initialises the map in place (the kernel's `lockdep_init_map()` on a live lock):
    /// reports [`Report::HeldLockFreed`](crate::Report::HeldLockFreed) if this thread holds it.
    #[track_caller]
    pub fn reinit(&mut self) {
        thread::check_no_locks_freed(
            self as *const LockMap as *const u8,
            std::mem::size_of::<LockMap>(),
            Some(Location::caller()),
        );
        self.cache.clear();
    }

    pub(crate) fn key(&self) -> KeyRef {
        self.key
    }

    #[inline]
    pub(crate) fn instance(&self) -> usize {
        self as *const LockMap as usize
    }

    /// The cached class id for `subclass`, or [`ClassId::NONE`]; check it with
    /// `class::generation::is_live` before use.
    #[inline]
    pub(crate) fn cached(&self, subclass: u8) -> ClassId {
        self.cache.get(subclass)
    }

    /// Caches `id` as the class of `subclass`.
    pub(crate) fn set_cached(&self, subclass: u8, id: ClassId) {
        self.cache.set(subclass, id);
    }
}

impl Drop for LockMap {
    fn drop(&mut self) {
        thread::check_no_locks_freed(
            self as *const LockMap as *const u8,
            std::mem::size_of::<LockMap>(),
            None,
        );
        if let KeyRef::Instance(_) = self.key {
            graph_lock().graph.zap_key(self.key);
        }
    }
}
