//! Dynamic keys, held in a fixed-size hash table of buckets protected by hazard pointers.
//!
//! The kernel's `lockdep_register_key()` / `lockdep_unregister_key()` / `is_dynamic_key()`,
//! with the reader protected by a hazard pointer on the *bucket head* (Boqun Feng's shazptr
//! series for lockdep) instead of an RCU read section:
//!
//! - Readers ([`is_registered`]) protect the bucket head with `hazptr::Domain::protect_addr`,
//!   walk the bucket's `AtomicPtr` chain with Acquire loads, and drop the guard. A reader may
//!   stand on *any* node of the bucket, including one being unlinked, which is why the bucket
//!   (not the key looked for) is protected.
//! - Register and unregister run under the graph lock. Unregister unlinks the node, zaps the
//!   key's classes (their dependencies; cached chains die with the class generation), drops the
//!   graph lock, then calls `synchronize` on that one bucket head: it waits only for readers
//!   that were inside this bucket, never for readers of other buckets. After it returns nothing
//!   refers to the node, so the key's memory can be freed.
//!
//! Both sides go through `keysync` ([`crate::set_key_table_sync`]): by default exactly the
//! above; for comparisons the wait can be `synchronize_direct`, or both sides a user strategy
//! (a reader-writer lock, userspace RCU), always with one read section per bucket walk.

use std::panic::Location;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use crate::key::KeyRef;
use crate::keysync;
use crate::report::KeyMisuse;
use crate::state::graph_lock;

/// log2 of the number of buckets. The kernel's `KEYHASH_BITS` is 12; we use more buckets
/// (512 KiB of zeroed `.bss`, touched only where keys land) so that a million live keys
/// still give short chains (a bucket walk is a chain of cache misses), and an unregister
/// shares its bucket (and so its wait) with fewer readers.
const BUCKET_BITS: u32 = 16;
/// Number of buckets.
pub const KEY_BUCKETS: usize = 1 << BUCKET_BITS;

const MAGIC_LIVE: u64 = 0x6c6f_636b_6465_7021;
const MAGIC_DEAD: u64 = 0xdead_dead_dead_dead;

/// One registered key; the node is the key's identity and lives until the key is dropped.
struct KeyNode {
    next: AtomicPtr<KeyNode>,
    serial: u64,
    /// [`MAGIC_LIVE`] until the node is freed; readers check it to catch a use after free.
    magic: AtomicU64,
    name: Arc<str>,
}

static BUCKETS: [AtomicPtr<KeyNode>; KEY_BUCKETS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; KEY_BUCKETS];
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

fn bucket(addr: usize) -> &'static AtomicPtr<KeyNode> {
    let h = (addr as u64 >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BUCKET_BITS);
    &BUCKETS[h as usize]
}

/// Index of the bucket a key address hashes to (for tests that need two keys in different
/// buckets).
pub(crate) fn bucket_index(addr: usize) -> usize {
    (bucket(addr) as *const AtomicPtr<KeyNode> as usize - BUCKETS.as_ptr() as usize)
        / std::mem::size_of::<AtomicPtr<KeyNode>>()
}

/// The head of bucket `index` (0..[`KEY_BUCKETS`]), the address hazard pointers protect.
/// Returned untyped: only its address matters to hazard pointers.
pub(crate) fn bucket_head(index: usize) -> *const u64 {
    &BUCKETS[index] as *const AtomicPtr<KeyNode> as *const u64
}

/// Walks the bucket of `addr` looking for the node `addr` with this serial. The caller either
/// holds a hazard pointer on the bucket head or holds the graph lock.
fn walk(addr: usize, serial: u64) -> bool {
    // Acquire: pairs with the Release store that linked the first node, so its fields
    // (serial, magic, next) are visible.
    let mut p = bucket(addr).load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: `p` was reached from the bucket head while the caller protects the bucket
        // (hazard pointer) or holds the graph lock. Nodes are unlinked only under the graph
        // lock and freed only after `synchronize` on this bucket head has returned, which
        // waits for every hazard pointer that protected the bucket when it began; a reader
        // that protected the bucket later started its walk after the unlink and cannot reach
        // the node. So the node is allocated here.
        let node = unsafe { &*p };
        // Relaxed: the magic word is only a use-after-free tripwire; the node's publication was
        // already acquired above.
        let magic = node.magic.load(Ordering::Relaxed);
        assert_eq!(
            magic, MAGIC_LIVE,
            "lockdep: a key bucket reached a freed key node (validator bug)"
        );
        if p as usize == addr && node.serial == serial {
            return true;
        }
        // Acquire: pairs with the Release store that linked the next node.
        p = node.next.load(Ordering::Acquire);
    }
    false
}

/// Is the dynamic key `(addr, serial)` registered? Lock-free: a hazard pointer on the bucket
/// head protects the walk (the kernel's `is_dynamic_key()`).
///
/// The read section comes from the strategy in force ([`crate::set_key_table_sync`]); by
/// default a hazard pointer on the bucket head.
pub(crate) fn is_registered(addr: usize, serial: u64) -> bool {
    let head = bucket(addr);
    keysync::read_section(bucket_index(addr), head, || walk(addr, serial))
}

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
        let node = Box::new(KeyNode {
            next: AtomicPtr::new(ptr::null_mut()),
            // Relaxed: a unique number is all that is needed.
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            magic: AtomicU64::new(MAGIC_LIVE),
            name: Arc::from(name),
        });
        DynamicKey {
            node: NonNull::from(Box::leak(node)),
        }
    }

    fn node(&self) -> &KeyNode {
        // SAFETY: the node is allocated from `new_unregistered` until `Drop`.
        unsafe { self.node.as_ref() }
    }

    pub(crate) fn key_ref(&self) -> KeyRef {
        KeyRef::Dynamic {
            addr: self.node.as_ptr() as usize,
            serial: self.node().serial,
        }
    }

    /// A weak reference to this key, valid to check after the key is gone.
    pub fn handle(&self) -> KeyHandle {
        KeyHandle {
            addr: self.node.as_ptr() as usize,
            serial: self.node().serial,
        }
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.node().name
    }

    /// The bucket this key hashes to (0..[`KEY_BUCKETS`]); for tests and diagnostics.
    pub fn bucket(&self) -> usize {
        bucket_index(self.node.as_ptr() as usize)
    }

    /// Test hook: runs `f` while holding the hazard pointer on this key's bucket head, exactly
    /// as a lookup does while it walks the bucket. Lets tests park a "reader" inside a bucket
    /// (an unregister of a key in this bucket then waits for `f` to return; one in another
    /// bucket does not). Calling `unregister` of a key in this bucket from `f` would wait for
    /// itself: `hazptr` detects that and the validator panics.
    #[doc(hidden)]
    pub fn with_bucket_protected<R>(&self, f: impl FnOnce() -> R) -> R {
        let addr = self.node.as_ptr() as usize;
        keysync::read_section(bucket_index(addr), bucket(addr), f)
    }

    /// Is the key registered? Lock-free (hazard pointer on the key's bucket).
    pub fn is_registered(&self) -> bool {
        is_registered(self.node.as_ptr() as usize, self.node().serial)
    }

    /// Registers the key (the kernel's `lockdep_register_key()`). Registering a key that is
    /// already registered gives [`KeyMisuse::DoubleRegister`] and changes nothing.
    #[track_caller]
    pub fn register(&self) {
        let site = Location::caller();
        let addr = self.node.as_ptr() as usize;
        let mut g = graph_lock();
        if walk(addr, self.node().serial) {
            drop(g);
            crate::resolve::misuse(KeyMisuse::DoubleRegister, &self.node().name, site);
            return;
        }
        let head = bucket(addr);
        // Relaxed: we hold the graph lock, the only writer of bucket links.
        let first = head.load(Ordering::Relaxed);
        // Relaxed: the node is not yet reachable; the Release store below publishes it.
        self.node().next.store(first, Ordering::Relaxed);
        // Release: publishes the node's fields and `next` to readers that Acquire-load the head.
        head.store(self.node.as_ptr(), Ordering::Release);
        g.keys += 1;
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
        let addr = self.node.as_ptr() as usize;
        let key = self.key_ref();
        if crate::resolve::holds_key(key) {
            crate::resolve::misuse(KeyMisuse::UnregisterWhileHeld, &self.node().name, site);
        }
        let head = bucket(addr);
        // Unlink under the graph lock, then (graph lock dropped) wait for lookups that were
        // walking this bucket, with the strategy in force (default: hazptr synchronize on
        // the bucket head).
        keysync::unlink_and_wait(bucket_index(addr), head, || {
            let mut g = graph_lock();
            // Find the link that points at our node.
            let mut link: &AtomicPtr<KeyNode> = head;
            loop {
                // Relaxed: we hold the graph lock, the only writer of links.
                let p = link.load(Ordering::Relaxed);
                if p.is_null() {
                    drop(g);
                    if report_unknown {
                        crate::resolve::misuse(KeyMisuse::UnknownKey, &self.node().name, site);
                    }
                    return false;
                }
                if p == self.node.as_ptr() {
                    break;
                }
                // SAFETY: linked nodes stay allocated while we hold the graph lock (only the
                // graph-lock holder unlinks, and freeing follows the unlink).
                link = unsafe { &(*p).next };
            }
            // Relaxed: we hold the graph lock.
            let after = self.node().next.load(Ordering::Relaxed);
            // Release: a reader that Acquire-loads this link must see the fields of `after`,
            // which this thread saw under the graph lock.
            link.store(after, Ordering::Release);
            g.keys -= 1;
            g.graph.zap_key(key);
            true
        });
    }
}

impl Drop for DynamicKey {
    fn drop(&mut self) {
        self.unregister_inner(false, Location::caller());
        // Relaxed: after unregister + synchronize no reader can reach the node; the tripwire
        // value only matters to a buggy reader.
        self.node().magic.store(MAGIC_DEAD, Ordering::Relaxed);
        // SAFETY: the node came from `Box::leak` in `new_unregistered`; it is unlinked and no
        // hazard-pointer reader can still be on it (synchronize returned), and `self` is the
        // only owner.
        drop(unsafe { Box::from_raw(self.node.as_ptr()) });
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
        is_registered(self.addr, self.serial)
    }
}

/// Walks the key's bucket under the graph lock (no hazard pointer needed).
pub(crate) fn is_registered_locked(addr: usize, serial: u64) -> bool {
    walk(addr, serial)
}
