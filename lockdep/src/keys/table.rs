//! The dynamic-key table: registered key nodes in a fixed array of buckets, each a singly
//! linked list of `AtomicPtr`s (the kernel's `lock_keys_hash[]`).
//!
//! Links change only under the graph lock (the functions that change them take the guarded
//! [`Global`] as proof), and readers walk them without a lock. What makes a lock-free walk
//! safe while nodes are unlinked and freed is the read section around it, see
//! [`lookup`](super::lookup); the grace-period wait before a node is freed is
//! [`sync`](super::sync)'s.

use std::panic::Location;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

use crate::graph_lock::Global;
use crate::limits::{KEY_BUCKETS, KEY_BUCKET_BITS};
use crate::nesting::Nesting;

const MAGIC_LIVE: u64 = 0x6c6f_636b_6465_7021;
const MAGIC_DEAD: u64 = 0xdead_dead_dead_dead;

/// One registered (or registrable) key; the node is the key's identity and lives as long as its
/// [`DynamicKey`](crate::DynamicKey).
pub(crate) struct KeyNode {
    next: AtomicPtr<KeyNode>,
    pub serial: u64,
    /// [`MAGIC_LIVE`] until the node is freed; readers check it to catch a use after free.
    magic: AtomicU64,
    pub name: Arc<str>,
    /// The nesting rule the key fixes for its classes, if any.
    pub nesting: Option<Nesting>,
    /// Where the key was last registered (null before), for misuse reports.
    registered_at: AtomicPtr<Location<'static>>,
}

static BUCKETS: [AtomicPtr<KeyNode>; KEY_BUCKETS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; KEY_BUCKETS];
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Index of the bucket a key node address hashes to (0..[`KEY_BUCKETS`]): every lookup,
/// register and unregister starts here.
pub(crate) fn bucket_index(addr: usize) -> usize {
    ((addr as u64 >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - KEY_BUCKET_BITS)) as usize
}

/// The head of bucket `index` (0..[`KEY_BUCKETS`]): the address hazard pointers protect.
pub(crate) fn bucket_head(index: usize) -> &'static AtomicPtr<KeyNode> {
    &BUCKETS[index]
}

impl KeyNode {
    /// Allocates an unlinked node with a fresh serial number.
    pub(crate) fn alloc(name: &str, nesting: Option<Nesting>) -> NonNull<KeyNode> {
        let node = Box::new(KeyNode {
            next: AtomicPtr::new(ptr::null_mut()),
            // Relaxed: a unique number is all that is needed.
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            magic: AtomicU64::new(MAGIC_LIVE),
            name: Arc::from(name),
            nesting,
            registered_at: AtomicPtr::new(ptr::null_mut()),
        });
        NonNull::from(Box::leak(node))
    }

    /// Records `site` as where the key was registered.
    pub(crate) fn set_registered_at(&self, site: &'static Location<'static>) {
        // Relaxed: only misuse reports read it, on a thread that reached the key through the
        // key's owner (which orders this store before them), or see the older value at worst.
        self.registered_at
            .store(ptr::from_ref(site).cast_mut(), Ordering::Relaxed);
    }

    /// Where the key was last registered, if it ever was.
    pub(crate) fn registered_at(&self) -> Option<&'static Location<'static>> {
        // Relaxed: see `set_registered_at`.
        let p = self.registered_at.load(Ordering::Relaxed);
        // SAFETY: the pointer is null or was made from a `&'static Location` in
        // `set_registered_at`.
        unsafe { p.cast_const().as_ref() }
    }

    /// Frees a node made by [`alloc`](Self::alloc).
    ///
    /// # Safety
    ///
    /// The node is not linked, no reader can still be on it (a grace period of its bucket
    /// passed since it was unlinked, or it was never linked), and nothing uses `node` after.
    pub(crate) unsafe fn free(node: NonNull<KeyNode>) {
        // SAFETY: the caller guarantees the node is allocated and unused.
        let n = unsafe { node.as_ref() };
        // Relaxed: no reader can reach the node any more; the tripwire value only matters to a
        // buggy reader.
        n.magic.store(MAGIC_DEAD, Ordering::Relaxed);
        // SAFETY: the node came from `Box::leak` in `alloc`, and the caller guarantees it is
        // the last user.
        drop(unsafe { Box::from_raw(node.as_ptr()) });
    }
}

/// Walks the bucket of `addr` looking for the node `addr` with this serial.
///
/// The caller either is inside a read section of the bucket (see `lookup`) or holds the graph
/// lock; that is what keeps every node it reaches allocated.
pub(crate) fn walk(addr: usize, serial: u64) -> bool {
    find(addr, serial, |_| ()).is_some()
}

/// The nesting rule of the registered key `(addr, serial)`, if it is registered and fixes one;
/// `_g` is the graph lock's guard, which keeps linked nodes allocated.
pub(crate) fn nesting_locked(_g: &Global, addr: usize, serial: u64) -> Option<Nesting> {
    find(addr, serial, |n| n.nesting).flatten()
}

/// The name of the registered key `(addr, serial)`, if it is registered; `_g` as for
/// [`nesting_locked`].
pub(crate) fn name_locked(_g: &Global, addr: usize, serial: u64) -> Option<Arc<str>> {
    find(addr, serial, |n| n.name.clone())
}

/// Walks the bucket of `addr` for the node `addr` with this serial and applies `f` to it; the
/// caller protects the bucket as for [`walk`].
fn find<R>(addr: usize, serial: u64, f: impl FnOnce(&KeyNode) -> R) -> Option<R> {
    // Acquire: pairs with the Release store that linked the first node, so its fields
    // (serial, magic, next) are visible.
    let mut p = bucket_head(bucket_index(addr)).load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: `p` was reached from the bucket head while the caller protects the bucket
        // (read section) or holds the graph lock. Nodes are unlinked only under the graph
        // lock and freed only after a grace period of this bucket has passed, which waits for
        // every read section of the bucket that began before it; a reader that entered later
        // started its walk after the unlink and cannot reach the node. So the node is
        // allocated here.
        let node = unsafe { &*p };
        // Relaxed: the magic word is only a use-after-free tripwire; the node's publication was
        // already acquired above.
        let magic = node.magic.load(Ordering::Relaxed);
        assert_eq!(
            magic, MAGIC_LIVE,
            "lockdep: a key bucket reached a freed key node (validator bug)"
        );
        if p as usize == addr && node.serial == serial {
            return Some(f(node));
        }
        // Acquire: pairs with the Release store that linked the next node.
        p = node.next.load(Ordering::Acquire);
    }
    None
}

/// Links `node` at the head of its bucket and counts it; `g` is the graph lock's guard (the only
/// writer of links). The caller checked that it is not linked.
pub(crate) fn link(g: &mut Global, node: NonNull<KeyNode>) {
    let head = bucket_head(bucket_index(node.as_ptr() as usize));
    // SAFETY: the caller owns the node (a `DynamicKey`), which keeps it allocated.
    let n = unsafe { node.as_ref() };
    // Relaxed: we hold the graph lock, the only writer of bucket links.
    let first = head.load(Ordering::Relaxed);
    // Relaxed: the node is not yet reachable; the Release store below publishes it.
    n.next.store(first, Ordering::Relaxed);
    // Release: publishes the node's fields and `next` to readers that Acquire-load the head.
    head.store(node.as_ptr(), Ordering::Release);
    g.keys += 1;
}

/// Unlinks `node` from its bucket and uncounts it; false if it was not linked. `g` is the
/// graph lock's guard. Readers may still be on the node: free it only after a grace period of
/// its bucket.
pub(crate) fn unlink(g: &mut Global, node: NonNull<KeyNode>) -> bool {
    // Find the link that points at the node.
    let mut link: &AtomicPtr<KeyNode> = bucket_head(bucket_index(node.as_ptr() as usize));
    loop {
        // Relaxed: we hold the graph lock, the only writer of links.
        let p = link.load(Ordering::Relaxed);
        if p.is_null() {
            return false;
        }
        if p == node.as_ptr() {
            break;
        }
        // SAFETY: linked nodes stay allocated while we hold the graph lock (only the
        // graph-lock holder unlinks, and freeing follows the unlink).
        link = unsafe { &(*p).next };
    }
    // SAFETY: the caller owns the node, which keeps it allocated.
    let n = unsafe { node.as_ref() };
    // Relaxed: we hold the graph lock.
    let after = n.next.load(Ordering::Relaxed);
    // Release: a reader that Acquire-loads this link must see the fields of `after`, which
    // this thread saw under the graph lock.
    link.store(after, Ordering::Release);
    g.keys -= 1;
    true
}
