//! The per-lock-instance map (the kernel's `struct lockdep_map`).

use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::class::{name, ClassCache, ClassId, KeyRef, StaticKey, TypeName};
use crate::graph::instances::{hint, HINT_ADDRESS_BITS};
use crate::graph_lock::graph_lock;
use crate::held::slot;
use crate::keys::{DynamicKey, LockClassKey};
use crate::report::KeyMisuse;
use crate::thread;

/// The validator's view of one lock instance: which class it belongs to, and its name.
///
/// Embed one in every lock (the kernel's `struct lockdep_map`), and pass it to
/// [`acquire`](crate::acquire) / [`release`](crate::release). The map's address is the lock
/// *instance*; the map must not move while the lock is held (true whenever guards borrow
/// the lock). Dropping the map checks that this thread does not hold it
/// ([`Report::HeldLockFreed`](crate::Report::HeldLockFreed)) and forgets its instance pairs.
/// An unlocked map may move: its instance pairs are keyed by its address and a 16-bit tag the
/// map draws at its first acquisition, and the map keeps where they were recorded, so they
/// are forgotten when it is dropped wherever it is then (a `drop(x)`, an `into_inner` or an
/// `Arc::try_unwrap` moves the lock first), and when it records pairs again at a new address:
/// a moved lock starts its instance order afresh, and a map that later sits at the old
/// address inherits nothing.
///
/// The class is derived from:
/// - the construction site *and* the protected type ([`LockMap::of_type`],
///   [`LockMap::named_of_type`]): what a lock wrapper's constructor should use, so that a
///   generic adapter that builds every lock of a library on one line still gives each
///   protected type its own class;
/// - the construction site alone ([`LockMap::new`]), like the kernel's per-init-site static
///   key;
/// - a static [`LockClassKey`] ([`LockMap::with_key`], the kernel's `lockdep_set_class()`);
/// - a [`DynamicKey`] ([`LockMap::with_dynamic_key`]).
///
/// Plus a subclass 0..[`MAX_SUBCLASSES`](crate::MAX_SUBCLASSES) chosen per acquisition. The
/// class is found lazily, at the first acquisition, so every constructor but
/// `with_dynamic_key` and `per_instance` is `const` (`static M: Mutex<_> = Mutex::new(..)`).
/// The map caches two class ids, subclass 0 and the last other subclass used (the kernel's
/// `class_cache[]`), so a cached acquire never takes the graph lock; a map used alternately at
/// two non-zero subclasses looks its class up under the graph lock.
///
/// Size: 56 bytes on 64-bit targets: the key (24 bytes: a construction site plus a pointer to
/// the protected type's `type_name`, or a dynamic key's address and serial), the name or kind
/// (16: its address, and a word with its length and whether it is a name, kept as a held
/// entry shows them, the pair tag, and whether the lock ever nested with another instance of
/// its class, with 27 bits of the address it had then, so that dropping a lock that never did
/// costs what it did before and one that did finds its pairs wherever it is), and the class
/// cache (16). No padding: a lock's other fields follow it at once. `Send +
/// Sync`.
pub struct LockMap {
    key: KeyRef,
    /// The first byte of the map's name or, if it has none, its kind ("Mutex", "RwLock",
    /// ...): a `&'static str` of `label_meta`'s length.
    label: *const u8,
    /// The label's share of a held entry's `meta` word (`held::slot::name_meta`): its length
    /// and whether it is a name (else a kind), made once here so that the fast path only
    /// loads it; the pair tag (`held::slot::tag_bits`, set once: see
    /// [`pair_key`](Self::pair_key)), which held entries show too; and [`PAIRED`] with
    /// [`PAIRED_AT`], the map's alone ([`MAP_ONLY`]), in bits that `name_meta` leaves 0 and
    /// [`name_meta`](Self::name_meta) masks off.
    label_meta: AtomicU64,
    /// The class ids of subclass 0 and of the last other subclass used.
    cache: ClassCache,
}

// SAFETY: `label` points into a `&'static str` (immutable, shared by every thread); the other
// fields are `Send + Sync` themselves.
unsafe impl Send for LockMap {}
// SAFETY: as for `Send`.
unsafe impl Sync for LockMap {}

// See the type's docs.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<LockMap>() == 56);

// A lock's instance is its map's address: a held entry's slot keeps the entry's mode in the
// address's two low bits and its hole mark in the third (`held::slot::HOLE`), which this
// alignment leaves free (an `AtomicU64` field gives it on every target).
const _: () = assert!(std::mem::align_of::<LockMap>() >= 8);

/// In [`LockMap`]'s `label_meta`: the lock has instance-order pairs to forget when it is
/// freed. A bit that `held::slot::name_meta` never sets (it uses bit 3 and bits 32 and up).
const PAIRED: u64 = 1 << 31;
/// In `label_meta`, with [`PAIRED`]: bits 3 to 29 of the address the map had when its pairs
/// were recorded (with its tag, their `instances::hint`), so that a map dropped after a move
/// finds them. Bits 4 to 30, which `name_meta` leaves 0 too.
const PAIRED_AT_SHIFT: u32 = 4;
const PAIRED_AT: u64 = ((1 << HINT_ADDRESS_BITS) - 1) << PAIRED_AT_SHIFT;
/// The bits of `label_meta` that are the map's alone, never a held entry's.
const MAP_ONLY: u64 = PAIRED | PAIRED_AT;
const _: () = assert!(PAIRED_AT & PAIRED == 0 && PAIRED_AT & slot::tag_bits(u16::MAX) == 0);
const _: () = assert!(slot::name_meta(true, "x") & MAP_ONLY == 0);
const _: () = assert!(slot::name_meta(true, "abcd") & MAP_ONLY == 0);

impl std::fmt::Debug for LockMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockMap")
            .field("name", &self.name_if_any())
            .field("label", &self.name())
            .field("key", &self.key)
            .finish()
    }
}

impl LockMap {
    /// A label longer than `slot::MAX_NAME_LEN` (64 KiB) shows cut.
    #[inline]
    const fn from_key(label: &'static str, named: bool, key: KeyRef) -> LockMap {
        LockMap {
            key,
            label: label.as_ptr(),
            label_meta: AtomicU64::new(slot::name_meta(named, label)),
            cache: ClassCache::new(),
        }
    }

    /// An unnamed map whose class is the caller's source location *and* the protected type
    /// `T`: every lock of type `T` constructed at the same place (file, line, column) is one
    /// class, and the same line in generic code makes one class per `T` it is instantiated
    /// with. `kind` is the wrapper's kind ("Mutex", "RwLock", "ReentrantMutex", ...): the
    /// class reads as `Mutex<u64>@src/bank.rs:12` in reports (types and registry paths
    /// shortened). Put `#[track_caller]` on the lock's constructor so the site is the user's.
    /// `const`: the class is found at the first acquisition.
    #[track_caller]
    pub const fn of_type<T: ?Sized>(kind: &'static str) -> LockMap {
        LockMap::from_key(
            kind,
            false,
            KeyRef::SiteType {
                site: Location::caller(),
                ty: TypeName(std::any::type_name::<T> as fn() -> &'static str),
            },
        )
    }

    /// Like [`of_type`](Self::of_type) (the same class), with a name for reports: the class
    /// is named after the first map that uses it, and reports name each instance.
    #[track_caller]
    pub const fn named_of_type<T: ?Sized>(kind: &'static str, name: &'static str) -> LockMap {
        // An empty name is no name: the map reads as its kind and type.
        let label = if name.is_empty() { kind } else { name };
        LockMap::from_key(
            label,
            !name.is_empty(),
            KeyRef::SiteType {
                site: Location::caller(),
                ty: TypeName(std::any::type_name::<T> as fn() -> &'static str),
            },
        )
    }

    /// A map whose class is the caller's source location: every lock constructed at the same
    /// place (file, line, column) is the same class, whatever it protects. Use
    /// `#[track_caller]` on the lock's constructor so the site is the user's, not the
    /// wrapper's. An empty `name` reads as `@file:line`. `const`.
    #[track_caller]
    pub const fn new(name: &'static str) -> LockMap {
        LockMap::from_key(name, !name.is_empty(), KeyRef::Site(Location::caller()))
    }

    /// An unnamed map whose class is the caller's location, reading as `kind@file:line`
    /// (pseudo-locks that protect no data).
    #[track_caller]
    pub(crate) const fn of_kind(kind: &'static str) -> LockMap {
        LockMap::from_key(kind, false, KeyRef::Site(Location::caller()))
    }

    /// A map that is tracked (it is on the held stack, assertions see it, releasing it when not
    /// held is reported) but never validated: it gets no class, no dependency into or out of
    /// it, and no recursion check; a lock below it on the held stack orders before locks
    /// taken above it, as if it were not there. The kernel's `lockdep_set_novalidate_class()`,
    /// for locks whose nesting the validator cannot express. `const`.
    pub const fn novalidate(name: &'static str) -> LockMap {
        // With no name, it reads as what it is (it has no class to be named after).
        let label = if name.is_empty() { "novalidate" } else { name };
        LockMap::from_key(label, !name.is_empty(), KeyRef::NoValidate)
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
        LockMap::from_key(name, !name.is_empty(), KeyRef::Instance(serial))
    }

    /// A map whose class is the static key `key`. `const`.
    pub const fn with_key(name: &'static str, key: &'static LockClassKey) -> LockMap {
        LockMap::from_key(name, !name.is_empty(), KeyRef::Static(StaticKey(key)))
    }

    /// A map whose class is the dynamic key `key`. The map does not borrow the key; if the key
    /// is not registered now, or is unregistered or dropped later, using the map gives
    /// [`KeyMisuse::NotRegistered`](crate::KeyMisuse) (never a crash). The kernel checks this
    /// in `lockdep_init_map()`.
    #[track_caller]
    pub fn with_dynamic_key(name: &'static str, key: &DynamicKey) -> LockMap {
        if !key.is_registered() {
            key.report_misuse(KeyMisuse::NotRegistered, Location::caller());
        }
        LockMap::from_key(name, !name.is_empty(), key.key_ref())
    }

    /// Moves the map to the class of a static key (the kernel's `lockdep_set_class()`).
    /// Needs `&mut`, so it cannot race with an acquisition. A re-initialisation: the map as
    /// it was is dropped first (its instance pairs forgotten, a held entry of it reported, as
    /// for any map that goes), and the new one draws a new pair tag at its first acquisition.
    pub fn set_key(&mut self, key: &'static LockClassKey) {
        let named = self.is_named();
        *self = LockMap::with_key(self.name(), key);
        self.keep_named(named);
    }

    /// Moves the map to the classes of a dynamic key; a re-initialisation, as
    /// [`set_key`](Self::set_key).
    #[track_caller]
    pub fn set_dynamic_key(&mut self, key: &DynamicKey) {
        let named = self.is_named();
        *self = LockMap::with_dynamic_key(self.name(), key);
        self.keep_named(named);
    }

    /// After a key change: the label stays a name or a kind, as it was (the constructors
    /// call any non-empty label a name, which would make an unnamed map's kind its name).
    fn keep_named(&mut self, named: bool) {
        *self.label_meta.get_mut() = slot::name_meta(named, self.name());
    }

    /// The map's name or, for an unnamed map ([`of_type`](Self::of_type)), its kind. A named
    /// map names its class when it is the one that creates it.
    ///
    /// A name longer than 64 KiB is cut there (at a character boundary).
    #[inline]
    pub fn name(&self) -> &'static str {
        self.name_and_meta().0
    }

    /// True if the map was given a name (not only a kind).
    #[inline]
    pub fn is_named(&self) -> bool {
        slot::is_named(self.name_meta())
    }

    /// [`name`](Self::name) and [`name_meta`](Self::name_meta) from one load of the meta word
    /// (an atomic load is not merged with another): what the fast path's entry needs.
    #[inline(always)]
    pub(crate) fn name_and_meta(&self) -> (&'static str, u64) {
        let meta = self.name_meta();
        // SAFETY: `label` is the start of one `&'static str`, and the length in `label_meta`
        // is its length or less, at a character boundary (`slot::name_meta`).
        let name = unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                self.label,
                slot::name_len(meta),
            ))
        };
        (name, meta)
    }

    /// The name's bits of a held entry's `meta` word (see `held::slot::name_meta`), with the
    /// map's pair tag.
    #[inline]
    pub(crate) fn name_meta(&self) -> u64 {
        // Relaxed: the name's bits never change while the map is shared (only through
        // `&mut`); the pair tag is set once, before the map's class is first cached (see
        // `set_cached`); the map's own bits (`MAP_ONLY`), which change, are masked off.
        self.label_meta.load(Ordering::Relaxed) & !MAP_ONLY
    }

    /// The map's pair tag: 0 until its first acquisition, then a number that stays with the
    /// map wherever it moves (see [`pair_key`](Self::pair_key)).
    #[inline]
    pub(crate) fn tag(&self) -> u16 {
        slot::tag_of(self.name_meta())
    }

    /// The lock's key in the instance-order pairs: its address with its pair tag. A lock may
    /// move while it is not held (a `Vec` of locks that grows, a lock moved out of a
    /// collection, `mem::swap`), and its pairs stay under the address it had, since nothing
    /// runs at a move; the tag, drawn anew for each map at its first acquisition, keeps the
    /// map that later sits at that address (or the moved lock itself, at another one) from
    /// inheriting them, and the map keeps the key's [`hint`] to forget them (see
    /// [`mark_paired`](Self::mark_paired)): pairs under an old address live only as long as
    /// the moved map does before it is dropped or paired again. A map that sits at such an
    /// address meanwhile shares their key only if the 16-bit tags agree (1 in 65,535 per
    /// such pair).
    #[inline]
    pub(crate) fn pair_key(&self) -> usize {
        crate::held::pair_key(self.instance(), self.tag())
    }

    /// Gives the map its pair tag if it has none (its first acquisition; see
    /// [`pair_key`](Self::pair_key)).
    fn ensure_tag(&self) {
        // Relaxed (both): a load and a plain store, not a compare-exchange, whose locked
        // instruction would double the cost of a new lock's first acquisition. Two threads
        // that both make a map's first acquisition at once may both store a tag, and the
        // last store stays: the other thread's one holding is then keyed under a tag the
        // map no longer has (its pairs, if it recorded any in that holding, are left as a
        // moved lock's are), and a PAIRED bit set in between would be lost (the pairs then
        // stay when the map is dropped, likewise). Neither makes a report or loses one but
        // for that holding's own pairs. The class cache that `set_cached` stores next is what
        // the fast path reads first: on TSO targets a thread that sees the cached class sees
        // the tag too; elsewhere a racing first acquisition may read the map untagged, with
        // the same effect.
        let meta = self.label_meta.load(Ordering::Relaxed);
        if slot::tag_of(meta) == 0 {
            self.label_meta
                .store(meta | slot::tag_bits(new_tag()), Ordering::Relaxed);
        }
    }

    /// How reports about this map itself name it (an assertion, a bad unlock, a key misuse):
    /// its name, or, unnamed, the name its class gets (`Mutex<u64>@src/bank.rs:12`,
    /// `key@0x…`), as the held-lock lists show it. Allocates for an unnamed map: for report
    /// paths only.
    pub(crate) fn report_name(&self) -> std::borrow::Cow<'static, str> {
        if self.is_named() {
            std::borrow::Cow::Borrowed(self.name())
        } else {
            std::borrow::Cow::Owned(self.class_name())
        }
    }

    /// The name, if the map has one.
    pub(crate) fn name_if_any(&self) -> Option<&'static str> {
        self.is_named().then(|| self.name())
    }

    /// The name this map's class gets if this map creates it: its own name, or, unnamed, its
    /// kind, protected type and construction site (`Mutex<u64>@src/bank.rs:12`). Allocates for
    /// an unnamed map; reports get the name from the class without allocating again.
    pub fn class_name(&self) -> String {
        name::class_name(self.name(), self.is_named(), self.key).into_owned()
    }

    /// Re-initialises the map in place (the kernel's `lockdep_init_map()` on a live lock):
    /// reports [`Report::HeldLockFreed`](crate::Report::HeldLockFreed) if any thread holds it
    /// (another thread's holding through a forgotten guard: it forgets the lock at its next
    /// lock operation). Reads every thread's held-lock record: not for a hot path.
    #[track_caller]
    pub fn reinit(&mut self) {
        let lo = self as *const LockMap as usize;
        thread::check_no_locks_freed(
            self as *const LockMap as *const u8,
            std::mem::size_of::<LockMap>(),
            Some(Location::caller()),
        );
        thread::check_freed_elsewhere(lo, lo + std::mem::size_of::<LockMap>());
        self.cache.clear();
        let meta = self.label_meta.get_mut();
        let was = std::mem::replace(meta, *meta & !MAP_ONLY);
        if let Some(hint) = paired_hint(was) {
            graph_lock().graph.forget_hinted(hint);
        }
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

    /// Caches `id` as the class of `subclass`; gives the map its pair tag first if it has none
    /// (every map's first acquisition comes here: its cache starts empty).
    pub(crate) fn set_cached(&self, subclass: u8, id: ClassId) {
        self.ensure_tag();
        self.cache.set(subclass, id);
    }

    /// Notes that an instance pair of this lock was recorded at the address it has now:
    /// dropping it must forget them, wherever it is then. If its pairs were recorded at
    /// another address (it moved since), those are forgotten first: a moved lock starts its
    /// instance order afresh. Called with the map in hand (an acquisition or a release), so
    /// the lock is not held elsewhere in a way that could move it meanwhile.
    pub(crate) fn mark_paired(&self) {
        let here = ((self.instance() >> 3) as u64) << PAIRED_AT_SHIFT & PAIRED_AT;
        // Relaxed (the loads and the compare-exchange): read only by `Drop` and `reinit`,
        // which have `&mut self` and so follow every use of the map, and by this function,
        // whose compare-exchange keeps a racing marking of the same address (two readers
        // releasing at once) from losing the bit.
        let mut meta = self.label_meta.load(Ordering::Relaxed);
        loop {
            if meta & PAIRED != 0 && meta & PAIRED_AT == here {
                return;
            }
            if let Some(old) = paired_hint(meta) {
                // Moved since: its old pairs stay under its old instance key otherwise.
                graph_lock().graph.forget_hinted(old);
            }
            let marked = (meta & !PAIRED_AT) | PAIRED | here;
            match self.label_meta.compare_exchange(
                meta,
                marked,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => meta = now,
            }
        }
    }
}

impl Drop for LockMap {
    fn drop(&mut self) {
        thread::check_no_locks_freed(
            self as *const LockMap as *const u8,
            std::mem::size_of::<LockMap>(),
            None,
        );
        let paired = paired_hint(*self.label_meta.get_mut());
        if paired.is_some() || matches!(self.key, KeyRef::Instance(_)) {
            self.leave_graph(paired);
        }
    }
}

impl LockMap {
    /// The graph's part of a drop, for the maps that have one: an instance's own class is
    /// zapped, and a paired instance's pairs are forgotten. Out of line: most maps have none.
    #[cold]
    #[inline(never)]
    fn leave_graph(&self, paired: Option<u64>) {
        let mut g = graph_lock();
        if let KeyRef::Instance(_) = self.key {
            g.graph.zap_key(self.key);
        }
        if let Some(hint) = paired {
            g.graph.forget_hinted(hint);
        }
    }
}

/// A new pair tag (see [`LockMap::pair_key`]): never 0, from a per-thread sequence with a seed
/// of its own, so that two maps that sit at one address one after the other (on any threads)
/// agree with a chance of 1 in 65,535.
fn new_tag() -> u16 {
    // Relaxed: a counter that only spreads the threads' seeds apart.
    static SEEDS: AtomicU64 = AtomicU64::new(0x2545_f491_4f6c_dd1d);
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    let step = |x: u64| {
        x.wrapping_mul(0x5851_f42d_4c95_7f2d)
            .wrapping_add(0x1405_7b7e_f767_814f)
    };
    let x = STATE
        .try_with(|s| {
            let mut x = s.get();
            if x == 0 {
                // Relaxed: only the value matters (a seed apart from other threads').
                x = SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
            }
            x = step(x);
            s.set(x);
            x
        })
        // A thread past its locals' destruction: the shared counter alone (Relaxed, as above).
        .unwrap_or_else(|_| step(SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)));
    match (x >> 48) as u16 {
        0 => 1,
        t => t,
    }
}

/// The `instances::hint` of the instance key a map's pairs were recorded under, from its
/// `label_meta` word `meta`, if it has pairs.
fn paired_hint(meta: u64) -> Option<u64> {
    (meta & PAIRED != 0).then(|| {
        hint(
            slot::tag_of(meta),
            ((meta & PAIRED_AT) >> PAIRED_AT_SHIFT) as u32,
        )
    })
}
