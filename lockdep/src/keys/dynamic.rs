//! [`DynamicKey`]: a lock class key created at run time, and [`KeyHandle`], a weak reference
//! to one (the kernel's `lockdep_register_key()` / `lockdep_unregister_key()`).

use std::panic::Location;
use std::ptr::NonNull;

use super::lookup;
use super::misuse;
use super::sync;
use super::table::{self, bucket_index, KeyNode};
use crate::chain;
use crate::class::KeyRef;
use crate::graph_lock::graph_lock;
use crate::nesting::Nesting;
use crate::report::{ClassRef, KeyMisuse};
use crate::site;
use crate::thread;

/// A lock class key created at run time (the kernel's dynamically allocated
/// `struct lock_class_key` with `lockdep_register_key()` / `lockdep_unregister_key()`).
///
/// Lock maps created with [`LockMap::with_dynamic_key`](crate::LockMap::with_dynamic_key)
/// belong to the key's classes (one per subclass). Dropping the key unregisters it, which
/// removes its classes and their dependencies: a lock that is destroyed together with its key
/// leaves nothing behind in the graph, and a new key at the same address starts clean.
///
/// Misuse is reported, never a crash: using a key that is not registered, registering twice,
/// unregistering an unknown key, and unregistering while this thread holds a lock of the key
/// (other threads' held locks are not visible; their entries simply become unvalidated).
///
/// Thread-safety: `Send + Sync`; register and unregister take the graph lock and unregister
/// waits (`hazptr` synchronize) only for lookups in the key's own bucket.
pub struct DynamicKey {
    node: NonNull<KeyNode>,
}

// SAFETY: the node is only read through shared references (atomics and immutable fields) and is
// freed only by `Drop`, which needs exclusive ownership of the key.
unsafe impl Send for DynamicKey {}
// SAFETY: as above; all shared access is through atomics or immutable fields.
unsafe impl Sync for DynamicKey {}

impl std::fmt::Debug for DynamicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicKey")
            .field("name", &&*self.node().name)
            .field("serial", &self.node().serial)
            .finish()
    }
}

/// Every class of this key (any subclass), for a [`Suppression`](crate::Suppression): it
/// matches only while this key lives (a new key at the same address is another key).
impl From<&DynamicKey> for ClassRef {
    fn from(key: &DynamicKey) -> ClassRef {
        ClassRef::from_key(key.key_ref())
    }
}

impl DynamicKey {
    /// Creates a key and registers it.
    #[track_caller]
    pub fn new(name: &str) -> DynamicKey {
        let key = DynamicKey::new_unregistered(name);
        key.register();
        key
    }

    /// Creates a key without registering it; call [`register`](Self::register) before use.
    pub fn new_unregistered(name: &str) -> DynamicKey {
        DynamicKey {
            node: KeyNode::alloc(name, None),
        }
    }

    /// Creates and registers a key whose classes always use `nesting` for two of their
    /// instances taken nested, whatever [`set_nesting`](crate::set_nesting) says.
    #[track_caller]
    pub fn with_nesting(name: &str, nesting: Nesting) -> DynamicKey {
        let key = DynamicKey {
            node: KeyNode::alloc(name, Some(nesting)),
        };
        key.register();
        key
    }

    /// The nesting rule this key fixes, if any.
    pub fn nesting(&self) -> Option<Nesting> {
        self.node().nesting
    }

    fn node(&self) -> &KeyNode {
        // SAFETY: the node is allocated from `new_unregistered` until `Drop`.
        unsafe { self.node.as_ref() }
    }

    fn addr(&self) -> usize {
        self.node.as_ptr() as usize
    }

    pub(crate) fn key_ref(&self) -> KeyRef {
        KeyRef::Dynamic {
            addr: self.addr(),
            serial: self.node().serial,
        }
    }

    /// A weak reference to this key, valid to check after the key is gone.
    pub fn handle(&self) -> KeyHandle {
        KeyHandle {
            addr: self.addr(),
            serial: self.node().serial,
        }
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.node().name
    }

    /// The bucket this key hashes to (0..[`KEY_BUCKETS`](crate::KEY_BUCKETS)); for tests and
    /// diagnostics.
    pub fn bucket(&self) -> usize {
        bucket_index(self.addr())
    }

    /// Test hook: runs `f` while holding the hazard pointer on this key's bucket head, exactly
    /// as a lookup does while it walks the bucket. Lets tests park a "reader" inside a bucket
    /// (an unregister of a key in this bucket then waits for `f` to return; one in another
    /// bucket does not). Calling `unregister` of a key in this bucket from `f` would wait for
    /// itself: `hazptr` detects that and the validator panics.
    #[doc(hidden)]
    pub fn with_bucket_protected<R>(&self, f: impl FnOnce() -> R) -> R {
        lookup::with_bucket_protected(self.addr(), f)
    }

    /// Is the key registered? Lock-free (hazard pointer on the key's bucket).
    pub fn is_registered(&self) -> bool {
        lookup::is_registered(self.addr(), self.node().serial)
    }

    /// Registers the key (the kernel's `lockdep_register_key()`). Registering a key that is
    /// already registered gives [`KeyMisuse::DoubleRegister`] and changes nothing.
    #[track_caller]
    pub fn register(&self) {
        let site = Location::caller();
        let mut g = graph_lock();
        if lookup::is_registered_locked(&g, self.addr(), self.node().serial) {
            drop(g);
            self.report_misuse(KeyMisuse::DoubleRegister, site);
            return;
        }
        self.node().set_registered_at(site);
        table::link(&mut g, self.node);
    }

    /// Unregisters the key (the kernel's `lockdep_unregister_key()`): unlinks it, zaps its
    /// classes with their dependencies, and waits for lookups that were walking the key's
    /// bucket. Unregistering a key that is not registered gives [`KeyMisuse::UnknownKey`];
    /// unregistering while this thread holds a lock of the key gives
    /// [`KeyMisuse::UnregisterWhileHeld`] (the key is still unregistered).
    ///
    /// Blocks only while another thread is inside a lookup of this key's bucket.
    #[track_caller]
    pub fn unregister(&self) {
        self.unregister_inner(true, Location::caller());
    }

    fn unregister_inner(&self, report_unknown: bool, site: &'static Location<'static>) {
        // The lines this unregister writes first were used last by other threads: the bucket
        // head and the node by lookups, the graph lock's by their slow paths. Asked for now,
        // their transfers overlap instead of following one another (on a 2-vCPU Xeon VM with
        // one traffic thread: unregister p50 0.39 -> 0.33 us pinned, see BENCHMARKS.md).
        crate::prefetch::for_write(table::bucket_head(self.bucket()));
        crate::prefetch::for_read(self.node.as_ptr());
        crate::graph_lock::prefetch_for_write();
        let key = self.key_ref();
        // Every thread's held locks, through their shared records (read in place, copied only
        // if one holds a lock of the key), and the calling thread's own stack too, in case it
        // has no record (past the record limit). Checked under the graph lock that unlinks
        // and zaps, before the zap (which forgets which classes were the key's); a key with no
        // live class (never used, say) has no lock held and needs no look at all.
        let mut holders = Vec::new();
        let mut self_holds = false;
        // Unlink and zap under the graph lock (a class of the key can then never be created
        // again: class creation checks registration under the same lock), then, with the
        // graph lock dropped, wait for the lookups that were walking this bucket. The reports
        // (a held key, an unknown key) come after all of it, with no validator lock held.
        let mut unknown = false;
        sync::unlink_and_wait(self.bucket(), || {
            let mut g = graph_lock();
            let classes = g.graph.classes_of(key);
            // Overlaps with the look at other threads' held locks below.
            g.graph.prefetch_zap(&classes);
            if !classes.is_empty() {
                holders = thread::key_holders(&g.graph, &classes);
                self_holds = holders.is_empty() && thread::holds_key(&classes);
            }
            if !table::unlink(&mut g, self.node) {
                unknown = true;
                return false;
            }
            g.graph.zap_key(key);
            if !holders.is_empty() || self_holds {
                // A held lock's entry keeps its class, dead now: the chains over it that were
                // validated while it lived are stale (the kernel's `zap_class()` removes a
                // zapped class's chains). The holders forget theirs by mail, or here.
                chain::clear();
            }
            true
        });
        if self_holds {
            thread::forget_own_chains();
        }
        if !holders.is_empty() {
            misuse::report_held(self.name(), site, self.node().registered_at(), holders);
        } else if self_holds {
            self.report_misuse(KeyMisuse::UnregisterWhileHeld, site);
        }
        if unknown && report_unknown {
            self.report_misuse(KeyMisuse::UnknownKey, site);
        }
    }

    /// Reports `kind` for this key at `site`, with its registration site if known.
    pub(crate) fn report_misuse(&self, kind: KeyMisuse, site: &'static Location<'static>) {
        misuse::report_key(kind, self.name(), site, self.node().registered_at());
    }
}

/// Unregisters the key. A `Drop` cannot be `#[track_caller]`, so reports of this unregister
/// name lockdep's placeholder site, shown as "(key drop)" (see [`is_key_drop`](crate::is_key_drop)),
/// with the key's registration site; call [`DynamicKey::unregister`] first to have the report
/// name the caller.
impl Drop for DynamicKey {
    fn drop(&mut self) {
        self.unregister_inner(false, site::key_drop());
        // SAFETY: the node is unlinked (unregister above, or never registered) and a grace
        // period of its bucket has passed since, so no reader is on it; `self` is its only
        // owner and is going away.
        unsafe { KeyNode::free(self.node) };
    }
}

/// A weak reference to a [`DynamicKey`]: its identity (address and serial) without a borrow.
/// It can be checked at any time, also after the key was dropped and its memory reused, and
/// then simply says "not registered". `Copy`, `Send`, `Sync`; what lock maps store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyHandle {
    addr: usize,
    serial: u64,
}

impl KeyHandle {
    /// Is the key still registered? Lock-free: a hazard pointer on the key's bucket protects
    /// the walk; the key's own memory is never touched.
    pub fn is_registered(self) -> bool {
        lookup::is_registered(self.addr, self.serial)
    }
}
