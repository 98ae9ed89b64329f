//! One held lock as it is stored: eight words, each an atomic, so that the one copy of a
//! thread's stack can be both its owner's working storage and what other threads read.
//!
//! Only the owner stores, with relaxed stores and loads (on the usual targets they compile to
//! plain moves: the owner pays nothing for the atomics). Another thread reads a slot only
//! inside a read section of the record's sequence counter (see [`record`](super::record)),
//! which tells it whether what it read is consistent; it trusts nothing before that.
//!
//! The first word is the instance with the entry's mode in its two low bits (see [`tagged`]),
//! so that one compare finds an instance's entry in a given mode.
//!
//! Fields fall in two groups:
//! - **shown to other threads**: the instance and mode, the class, the `meta` word's mode,
//!   trylock, named and subclass bits and the name's length, the site and the name's
//!   address. The owner changes them only by a push (after moving the counter) or inside a
//!   write section.
//! - **the owner's alone**: the chain key, the nest_lock, the fast path's memo, and `meta`'s
//!   pin count, paired bit and unrecorded mark. Readers ignore them, so the owner changes them
//!   with no section (`meta` is one word: a reader gets its shown bits whole either way).

use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::entry::pair_key;
use super::HeldLock;
use crate::class::ClassId;
use crate::mode::Mode;

/// `meta`: the mode (bits 0..2), trylock (bit 2), named (bit 3), subclass (bits 8..16), the
/// name's length in bytes (bits 32..48, see [`name_meta`]) and the lock map's pair tag (bits
/// 48..64, see [`tag_of`]) are shown; the paired mark (bit 4) and the pin count (bits 16..32)
/// are the owner's.
const PAIRED: u64 = 1 << 4;
const PIN_SHIFT: u32 = 16;
const PIN_MASK: u64 = 0xffff << PIN_SHIFT;
/// `meta`, the owner's: the slot was left by an entry with a nest_lock (see
/// [`Slot::left_nested`]), so that no shortcut of the fast path takes it for a plain entry.
const LEFT_NESTED: u64 = 1 << 5;
/// `meta`, the owner's: the entry's acquisition did not record (all of) its dependencies (a
/// report stopped its validation), so that the dependency walk does not take the locks below
/// it to reach later locks through it (see [`Slot::set_unrecorded`]).
const UNRECORDED: u64 = 1 << 6;
/// The bits of `meta` that other threads read.
const SHOWN: u64 = !(PAIRED | PIN_MASK | LEFT_NESTED | UNRECORDED);

/// A [`Slot::memo`] that holds a memo: the chain key below, with this bit (which no chain key
/// has) set.
const MEMO: u64 = 1 << 63;

/// A [`Slot::memo`] that holds a nested memo (see [`Slot::holds_nested_memo`]): the record's
/// sequence counter, with this bit set and [`MEMO`] clear, so that it never equals a memo.
/// The counter moves by two at each change of a shown slot field, so it stays below this bit
/// for as long as a program runs (2^61 changes: centuries at one per nanosecond).
const NESTED_MEMO: u64 = 1 << 62;

/// The low bits of a slot's first word that hold the entry's mode (see [`tagged`]).
pub(crate) const MODE_BITS: usize = 0b11;

/// A slot's first word with this bit set is a *hole*: an entry released while entries above
/// it stayed held, left in place until the owner's next operation that needs the stack exact
/// (see `ThreadState::close_holes`). A lock map's address has this bit clear (the map module
/// asserts an alignment of 8), so a hole's word equals no entry's: no release finds it, and
/// readers leave it out (see [`RawSlot::held`]).
pub(crate) const HOLE: usize = 0b100;

/// A slot's first word for an entry of lock instance `instance` held in `mode`: the instance
/// (a `LockMap`'s address, whose two low bits are zero: the map module asserts its
/// alignment) with [`Mode::code`] in those bits. A release that knows its guard's mode
/// compares this one word to find its own entry when the thread holds the lock twice in two
/// modes (an rwlock's read and upgradable read).
#[inline(always)]
pub(crate) const fn tagged(instance: usize, mode: Mode) -> usize {
    instance | mode.code() as usize
}

/// Which held entry a release takes: the topmost of a lock instance, in a given mode or in
/// any. A thread may hold one rwlock twice in two modes (a read and an upgradable read); a
/// guard's release that names its mode takes its own entry, whichever of the two goes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Find {
    /// A slot's first word as [`tagged`] makes it (the mode bits are 0 for any mode).
    word: usize,
    /// The bits of a slot's first word that must equal `word`'s.
    mask: usize,
}

impl Find {
    /// The topmost entry of `instance`, in any mode.
    #[inline(always)]
    pub const fn any(instance: usize) -> Find {
        Find {
            word: instance,
            mask: !MODE_BITS,
        }
    }

    /// The topmost entry of `instance` held in `mode`.
    #[inline(always)]
    pub const fn in_mode(instance: usize, mode: Mode) -> Find {
        Find {
            word: tagged(instance, mode),
            mask: !0,
        }
    }

    /// [`in_mode`](Self::in_mode) if `mode` is given, else [`any`](Self::any).
    #[inline(always)]
    pub const fn of(instance: usize, mode: Option<Mode>) -> Find {
        match mode {
            Some(mode) => Find::in_mode(instance, mode),
            None => Find::any(instance),
        }
    }

    /// The lock instance.
    #[inline(always)]
    pub const fn instance(self) -> usize {
        self.word & !MODE_BITS
    }

    /// Whether `s` holds an entry this release may take (the owner).
    #[inline(always)]
    pub fn matches(self, s: &Slot) -> bool {
        self.matches_word(s.tagged())
    }

    /// Whether a slot whose first word is `word` holds an entry this release may take.
    #[inline(always)]
    pub fn matches_word(self, word: usize) -> bool {
        word & self.mask == self.word
    }

    /// The index of the entry this release takes among `items`, bottom first, whose first
    /// words `word` gives: the topmost that matches, else (a mode not held) the topmost of the
    /// instance in any mode. The held stack, a reader's copy of it and lock_stat's holds pick
    /// the same way.
    pub fn pick<T>(self, items: &[T], word: impl Fn(&T) -> usize) -> Option<usize> {
        let any = Find::any(self.instance());
        items
            .iter()
            .rposition(|t| self.matches_word(word(t)))
            .or_else(|| items.iter().rposition(|t| any.matches_word(word(t))))
    }
}

/// The chain key of an entry over the chain key `below`, from its slot's words: the instance
/// word (for the mode bits), the class, `meta` (the trylock bit, and the unrecorded mark, see
/// [`Slot::set_unrecorded`]) and the nest_lock.
#[inline(always)]
fn key_of_words(below: u64, instance: usize, class: u64, meta: u64, nest_lock: usize) -> u64 {
    let key = HeldLock::chain_key_of(
        below,
        ClassId::from_bits(class),
        Mode::from_code((instance & MODE_BITS) as u64),
        meta & 4 != 0,
        nest_lock,
    );
    if meta & UNRECORDED != 0 {
        crate::chain::unrecorded_key(key)
    } else {
        key
    }
}

/// One held lock in a thread's stack. Eight words, one cache line.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct Slot {
    /// The instance and the mode: see [`tagged`].
    instance: AtomicUsize,
    class: AtomicU64,
    meta: AtomicU64,
    site: AtomicPtr<Location<'static>>,
    name_ptr: AtomicPtr<u8>,
    /// The owner's: the entry's chain key.
    chain_key: AtomicU64,
    /// The owner's: the nest_lock's instance, or 0.
    nest_lock: AtomicUsize,
    /// The owner's: `below | MEMO` when the fast path found this entry's chain valid over
    /// the chain key `below` (see [`holds_memo`](Self::holds_memo)), `seq | NESTED_MEMO`
    /// when the instance check of a marked chain accepted the entry with the record's counter
    /// at `seq` (see [`holds_nested_memo`](Self::holds_nested_memo)), 0 otherwise. Every store
    /// of the entry's words or chain key clears it.
    memo: AtomicU64,
}

/// The shown part of a slot, read racily: checked by a read section before it is trusted.
#[derive(Clone, Copy)]
pub(crate) struct RawSlot {
    /// As [`Slot::instance`]'s word: the instance and the mode (see [`tagged`]).
    instance: usize,
    class: u64,
    meta: u64,
    site: *const Location<'static>,
    name_ptr: *const u8,
}

/// The shown fields of an entry, decoded.
pub(crate) struct Shown {
    pub instance: usize,
    pub class: ClassId,
    pub mode: Mode,
    pub trylock: bool,
    pub named: bool,
    pub subclass: u8,
    pub name: &'static str,
    pub site: &'static Location<'static>,
    /// The lock map's pair tag.
    pub tag: u16,
}

fn meta_of(h: &HeldLock) -> u64 {
    shown_meta(h.mode, h.trylock, h.named, h.subclass, h.name)
        | tag_bits(h.tag)
        | u64::from(h.paired) << 4
        | u64::from(h.pin_count) << PIN_SHIFT
}

/// The `meta` word of an entry with these fields, no pin and no paired mark.
#[inline(always)]
pub(crate) fn shown_meta(
    mode: Mode,
    trylock: bool,
    named: bool,
    subclass: u8,
    name: &'static str,
) -> u64 {
    acquisition_meta(mode, trylock, subclass) | name_meta(named, name)
}

/// The `meta` bits of an acquisition's own facts: its mode, trylock flag and subclass.
#[inline(always)]
pub(crate) const fn acquisition_meta(mode: Mode, trylock: bool, subclass: u8) -> u64 {
    mode.code() | (trylock as u64) << 2 | (subclass as u64) << 8
}

/// The longest name a held entry shows, in bytes: a longer one is cut (at a character
/// boundary, so the cut name is still a `str`), so that its length takes 16 bits of `meta`.
pub(crate) const MAX_NAME_LEN: usize = u16::MAX as usize;

/// Where `meta` keeps the lock map's pair tag (see `LockMap::pair_key`).
const TAG_SHIFT: u32 = 48;

/// The `meta` bits of the lock's name: whether it is one (else a kind) and its length (cut at
/// [`MAX_NAME_LEN`]). A lock map keeps them made (`LockMap::name_meta`, with its pair tag
/// added), so that the fast path computes nothing for them.
#[inline(always)]
pub(crate) const fn name_meta(named: bool, name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut len = bytes.len();
    if len > MAX_NAME_LEN {
        len = MAX_NAME_LEN;
        // Back to a character's first byte (a continuation byte is 0b10xx_xxxx).
        while len > 0 && bytes[len] & 0xc0 == 0x80 {
            len -= 1;
        }
    }
    (named as u64) << 3 | (len as u64) << 32
}

/// The name's length that [`name_meta`] holds.
#[inline(always)]
pub(crate) const fn name_len(name_meta: u64) -> usize {
    ((name_meta >> 32) & MAX_NAME_LEN as u64) as usize
}

/// The pair tag a `meta` word holds (0: none yet; see `LockMap::pair_key`).
#[inline(always)]
pub(crate) const fn tag_of(meta: u64) -> u16 {
    (meta >> TAG_SHIFT) as u16
}

/// `meta`'s bits holding pair tag `tag`.
#[inline(always)]
pub(crate) const fn tag_bits(tag: u16) -> u64 {
    (tag as u64) << TAG_SHIFT
}

/// Whether the name of [`name_meta`] is one (else a kind).
#[inline(always)]
pub(crate) const fn is_named(name_meta: u64) -> bool {
    name_meta & 8 != 0
}

/// An entry's seven words (all but the memo), computed once for a push (compared, then stored).
#[derive(Clone, Copy)]
pub(crate) struct Words {
    instance: usize,
    class: u64,
    meta: u64,
    site: *const Location<'static>,
    name_ptr: *const u8,
    chain_key: u64,
    nest_lock: usize,
}

/// The shown words of a plain acquisition (no nest_lock, no pin, not paired) that the fast
/// path's shortcuts compare a slot with ([`Slot::holds_head`], [`Slot::holds_memo`],
/// [`Slot::holds_fast`]).
#[derive(Clone, Copy)]
pub(crate) struct PlainWords {
    /// The lock instance, without mode bits.
    pub instance: usize,
    /// The acquisition's mode (also in `meta`).
    pub mode: Mode,
    /// As [`shown_meta`] makes it.
    pub meta: u64,
    pub site: *const Location<'static>,
    pub name_ptr: *const u8,
}

impl Words {
    /// The words of the plain entry `p` of class `class`, chain key `chain_key` (no
    /// nest_lock, no pin, not paired): the fast path's rewrite, from what it compared.
    #[inline(always)]
    pub fn plain(p: &PlainWords, class: ClassId, chain_key: u64) -> Words {
        Words {
            instance: tagged(p.instance, p.mode),
            class: class.to_bits(),
            meta: p.meta,
            site: p.site,
            name_ptr: p.name_ptr,
            chain_key,
            nest_lock: 0,
        }
    }

    /// The words of `h`.
    #[inline(always)]
    pub fn of(h: &HeldLock) -> Words {
        Words {
            instance: tagged(h.instance, h.mode),
            class: h.class.to_bits(),
            meta: meta_of(h),
            site: h.site,
            name_ptr: h.name.as_ptr(),
            chain_key: h.chain_key,
            nest_lock: h.nest_lock,
        }
    }
}

impl Slot {
    /// Stores every field of `h` (the owner). Relaxed: see the module docs; the caller orders
    /// the shown fields with the record's counter.
    #[inline(always)]
    pub fn write(&self, h: &HeldLock) {
        self.store(&Words::of(h));
    }

    /// Stores every word (the owner).
    #[inline(always)]
    pub fn store(&self, w: &Words) {
        // Relaxed (every store): the owner's plain stores, ordered for readers by the
        // record's counter (see `Record::will_push` and `Record::begin`).
        self.instance.store(w.instance, Ordering::Relaxed);
        self.class.store(w.class, Ordering::Relaxed);
        self.meta.store(w.meta, Ordering::Relaxed);
        self.site.store(w.site.cast_mut(), Ordering::Relaxed);
        self.name_ptr
            .store(w.name_ptr.cast_mut(), Ordering::Relaxed);
        self.chain_key.store(w.chain_key, Ordering::Relaxed);
        self.nest_lock.store(w.nest_lock, Ordering::Relaxed);
        self.memo.store(0, Ordering::Relaxed);
    }

    /// Whether the slot shows exactly `w`'s shown words: a push of it need not store them
    /// again (no reader can see a change).
    #[inline(always)]
    pub fn shows(&self, w: &Words) -> bool {
        // Relaxed (every load): the owner reads back its own stores.
        self.instance.load(Ordering::Relaxed) == w.instance
            && self.class.load(Ordering::Relaxed) == w.class
            && self.meta.load(Ordering::Relaxed) == w.meta
            && std::ptr::eq(self.site.load(Ordering::Relaxed), w.site)
            && std::ptr::eq(self.name_ptr.load(Ordering::Relaxed), w.name_ptr)
    }

    /// Whether the slot holds exactly `w`, the owner's words too: a push of it stores nothing
    /// (the usual case in a loop that re-takes the same locks at the same depth).
    #[inline(always)]
    pub fn holds(&self, w: &Words) -> bool {
        // Relaxed (both loads): the owner reads back its own stores.
        self.chain_key.load(Ordering::Relaxed) == w.chain_key
            && self.nest_lock.load(Ordering::Relaxed) == w.nest_lock
            && self.shows(w)
    }

    /// [`holds`](Self::holds) for the fast path's push of a plain entry (no nest_lock, no
    /// pin, not paired), from the facts that decide it: the same instance, chain key, `meta`
    /// as [`shown_meta`] makes it (so no pin or paired mark: a slot above the stack may keep
    /// stale ones), site and name. The rest follows (barring a chain-key collision, which the
    /// chain cache already trusts): an equal chain key over the same stack below means the
    /// same class (hence subclass), mode, trylock flag and no nest_lock.
    #[inline(always)]
    pub fn holds_fast(&self, chain_key: u64, p: &PlainWords) -> bool {
        // Relaxed: the owner reads back its own store.
        self.chain_key.load(Ordering::Relaxed) == chain_key && self.shows_plain(p)
    }

    /// The shown words every shortcut compares: the instance, `meta`, site and name. The
    /// first word's mode bits are `meta`'s, which is compared whole.
    #[inline(always)]
    fn shows_plain(&self, p: &PlainWords) -> bool {
        // Relaxed (every load): the owner reads back its own stores.
        let first = self.instance.load(Ordering::Relaxed);
        // An exclusive entry's first word (the usual mode, and a constant on the fast path:
        // the branch folds) is the instance itself; another's is compared up to its mode bits
        // with an xor, which needs no register for the tagged word.
        let same_instance = if p.mode == Mode::Exclusive {
            first == p.instance
        } else {
            first ^ p.instance <= MODE_BITS
        };
        same_instance
            && self.meta.load(Ordering::Relaxed) == p.meta
            && std::ptr::eq(self.site.load(Ordering::Relaxed), p.site)
            && std::ptr::eq(self.name_ptr.load(Ordering::Relaxed), p.name_ptr)
    }

    /// [`holds`](Self::holds) for the fast path's push of a plain chain head (the bottom
    /// slot), from its shown words, `meta` as [`shown_meta`] makes it: the same instance,
    /// class, `meta` (so no pin or paired mark, and not [`LEFT_NESTED`]: a slot left by an
    /// entry with a nest_lock is marked so), site and name. Then the slot has no nest_lock,
    /// and its chain key is the plain head's (a function of the class, mode and trylock
    /// flag). No chain key is computed unless the slot must be rewritten.
    #[inline(always)]
    pub fn holds_head(&self, class: ClassId, p: &PlainWords) -> bool {
        // Relaxed: the owner reads back its own store.
        self.class.load(Ordering::Relaxed) == class.to_bits() && self.shows_plain(p)
    }

    /// Whether the fast path's push of an entry over a non-empty stack, whose chain key below
    /// is `below` and whose other facts are those of [`holds_head`](Self::holds_head), may
    /// store only the depth: the slot holds the entry, and its memo says that its chain over
    /// `below` was found valid. The same chain key below, class and `meta` mean the same
    /// chain key (a function of them), which was valid then and so is now (a chain's validity
    /// never ends: a zapped class's id does not come back, so its chains' keys are made by no
    /// live class); the memo was set by a plain push (no nest_lock), and the full `meta`
    /// compare rules out pins and paired marks. Neither the chain key nor the chain cache is
    /// looked at.
    #[inline(always)]
    pub fn holds_memo(&self, below: u64, class: ClassId, p: &PlainWords) -> bool {
        // Relaxed: the owner's field.
        self.memo.load(Ordering::Relaxed) == below | MEMO && self.holds_head(class, p)
    }

    /// Copies every field of `from` (the owner, inside a write section or on private slots).
    pub fn copy_from(&self, from: &Slot) {
        // Relaxed (every load and store): the owner's own fields; see `write`.
        self.instance
            .store(from.instance.load(Ordering::Relaxed), Ordering::Relaxed);
        self.class
            .store(from.class.load(Ordering::Relaxed), Ordering::Relaxed);
        self.meta
            .store(from.meta.load(Ordering::Relaxed), Ordering::Relaxed);
        self.site
            .store(from.site.load(Ordering::Relaxed), Ordering::Relaxed);
        self.name_ptr
            .store(from.name_ptr.load(Ordering::Relaxed), Ordering::Relaxed);
        self.write_own_raw(
            from.chain_key.load(Ordering::Relaxed),
            from.nest_lock.load(Ordering::Relaxed),
        );
    }

    /// Moves the entry of `from` (the slot above, in a cut) here, with its chain key made
    /// over `below` (the chain key of the entry under this slot, 0 for none), and returns that
    /// key: a copy and a re-key in one pass, from the words loaded once (a re-key after the
    /// copy read back the words just stored, one dependent chain longer). The memo is cleared
    /// (the shorter chain was not validated); `from` is left as it was (the owner, inside a
    /// write section).
    #[inline(always)]
    pub fn take_rekeyed(&self, from: &Slot, below: u64) -> u64 {
        // Relaxed (every load and store): the owner's own fields; see `write`.
        let instance = from.instance.load(Ordering::Relaxed);
        let class = from.class.load(Ordering::Relaxed);
        let meta = from.meta.load(Ordering::Relaxed);
        let nest_lock = from.nest_lock.load(Ordering::Relaxed);
        let key = key_of_words(below, instance, class, meta, nest_lock);
        self.instance.store(instance, Ordering::Relaxed);
        self.class.store(class, Ordering::Relaxed);
        self.meta.store(meta, Ordering::Relaxed);
        self.site
            .store(from.site.load(Ordering::Relaxed), Ordering::Relaxed);
        self.name_ptr
            .store(from.name_ptr.load(Ordering::Relaxed), Ordering::Relaxed);
        self.write_own_raw(key, nest_lock);
        key
    }

    fn write_own_raw(&self, chain_key: u64, nest_lock: usize) {
        // Relaxed (all three): the owner's fields.
        self.chain_key.store(chain_key, Ordering::Relaxed);
        self.nest_lock.store(nest_lock, Ordering::Relaxed);
        self.memo.store(0, Ordering::Relaxed);
    }

    /// The instance (the owner).
    #[inline(always)]
    pub fn instance(&self) -> usize {
        self.tagged() & !MODE_BITS
    }

    /// The mode the entry is held in, from the low bits of its first word (the owner).
    #[inline(always)]
    pub fn mode(&self) -> Mode {
        Mode::from_code((self.tagged() & MODE_BITS) as u64)
    }

    /// The entry's class, as a plain number (the owner).
    #[inline(always)]
    pub fn class_bits(&self) -> u64 {
        // Relaxed: the owner reads back its own store.
        self.class.load(Ordering::Relaxed)
    }

    /// The instance with the entry's mode: see [`tagged`] (the owner).
    #[inline(always)]
    pub fn tagged(&self) -> usize {
        // Relaxed: the owner reads back its own store.
        self.instance.load(Ordering::Relaxed)
    }

    /// The chain key (the owner).
    #[inline(always)]
    pub fn chain_key(&self) -> u64 {
        // Relaxed: the owner's field.
        self.chain_key.load(Ordering::Relaxed)
    }

    /// Sets the chain key (the owner).
    #[inline]
    pub fn set_chain_key(&self, key: u64) {
        // Relaxed (both): the owner's fields.
        self.chain_key.store(key, Ordering::Relaxed);
        self.memo.store(0, Ordering::Relaxed);
    }

    /// Marks the slot as left by an entry with a nest_lock (its release): its nest_lock and
    /// chain key stay, so the fast path's compares of `meta` must fail on it (the owner).
    pub fn left_nested(&self) {
        // Relaxed (both): the owner's word; the shown bits stay as they were.
        let m = self.meta.load(Ordering::Relaxed);
        self.meta.store(m | LEFT_NESTED, Ordering::Relaxed);
    }

    /// Whether the push of an entry on a marked chain (see `chain::Hit::Nested`) with chain key
    /// `chain_key`, whose other facts are those of [`holds_fast`](Self::holds_fast), may skip
    /// the check of its held instances: the slot holds the entry with that chain key (as
    /// `holds_fast` compares them), and its nested memo says that the check accepted
    /// it when the record's sequence counter was `seq`, the counter now. The counter moves at
    /// every change of a shown field of any slot (see `Record::will_push`, `Record::begin`)
    /// and whenever the thread's pair cache is emptied for a new pair epoch (see
    /// `ThreadState::sync_pairs`), so the entries below show what they showed then: the same
    /// instances, classes, modes and pair tags, the only facts of the stack the instance check
    /// reads, and the pairs it found were checked under the same epoch, in which no pair
    /// leaves the graph. The owner's fields below, which the counter does not follow (a
    /// nest_lock, an unrecorded mark), are in the chain key, so the key's compare keeps the
    /// slot's stored key that of the stack now. The caller looked the chain up and checks that
    /// the pair cache's epoch is the current one.
    #[inline(always)]
    pub fn holds_nested_memo(&self, seq: u64, chain_key: u64, p: &PlainWords) -> bool {
        // Relaxed: the owner's field.
        self.memo.load(Ordering::Relaxed) == seq | NESTED_MEMO && self.holds_fast(chain_key, p)
    }

    /// Notes that the instance check of this entry's push on a marked chain accepted it, the
    /// record's sequence counter being `seq` after the push (the owner; see
    /// [`holds_nested_memo`](Self::holds_nested_memo)).
    #[inline(always)]
    pub fn set_nested_memo(&self, seq: u64) {
        debug_assert!(seq < NESTED_MEMO);
        // Relaxed: the owner's field.
        self.memo.store(seq | NESTED_MEMO, Ordering::Relaxed);
    }

    /// Makes the entry a hole (see [`HOLE`]; the owner, inside a write section): released,
    /// its words kept, so that the slot holds it again once [`fill_hole`](Self::fill_hole)
    /// clears the bit above the stack.
    pub fn make_hole(&self) {
        // Relaxed (both): the owner's own word; the caller's write section orders it for
        // readers.
        let w = self.instance.load(Ordering::Relaxed);
        self.instance.store(w | HOLE, Ordering::Relaxed);
    }

    /// Clears the hole bit (see [`make_hole`](Self::make_hole); the owner, inside a write
    /// section, on a slot that is no longer below the depth): the slot is then one left above
    /// the stack, as a pop leaves it, with its words and memo. A no-op on a slot that is not a
    /// hole.
    pub fn fill_hole(&self) {
        // Relaxed (both): as in `make_hole`.
        let w = self.instance.load(Ordering::Relaxed);
        self.instance.store(w & !HOLE, Ordering::Relaxed);
    }

    /// Whether the slot is a hole (see [`HOLE`]; the owner).
    #[inline]
    pub fn is_hole(&self) -> bool {
        self.tagged() & HOLE != 0
    }

    /// Forgets the memo (the owner): the chain it names must be validated again.
    pub fn forget_memo(&self) {
        // Relaxed: the owner's field.
        self.memo.store(0, Ordering::Relaxed);
    }

    /// Forgets the marks of the entry that was here (its pin count and paired mark): the slot
    /// is above the stack now, left by an entry that moved down. Its memo stays, with the
    /// chain key it was set with (no rekey reaches a slot above the stack): a chain's
    /// validity never ends, so the entry taken again over the same key below (a pair
    /// released in the order taken, then taken again) is still vouched for.
    pub fn vacate(&self) {
        self.set_marks(0, false);
    }

    /// Notes that this entry's chain over the chain key `below` (0 for the empty stack) is
    /// valid: the fast path found it so (a chain head, a trylock, or a hit in the chain cache;
    /// the owner).
    #[inline(always)]
    pub fn set_memo(&self, below: u64) {
        // Relaxed: the owner's field.
        self.memo.store(below | MEMO, Ordering::Relaxed);
    }

    /// The entry's subclass, from `meta` (the owner).
    #[inline]
    pub fn subclass(&self) -> u8 {
        // Relaxed: the owner reads back its own store.
        (self.meta.load(Ordering::Relaxed) >> 8) as u8
    }

    /// The nest_lock's instance, or 0 (the owner).
    #[inline]
    pub fn nest_lock(&self) -> usize {
        // Relaxed: the owner's field.
        self.nest_lock.load(Ordering::Relaxed)
    }

    /// The pin count and the paired mark (the owner).
    #[inline]
    pub fn marks(&self) -> (u16, bool) {
        // Relaxed: the owner reads back its own store.
        let m = self.meta.load(Ordering::Relaxed);
        (((m & PIN_MASK) >> PIN_SHIFT) as u16, m & PAIRED != 0)
    }

    /// Marks the entry as one whose acquisition did not record its dependencies from the
    /// locks below it: its validation was stopped by a report (a cycle that the dependency
    /// closing it was left out of, a same-class report), or never ran. The mark stays with
    /// the entry when it moves down the stack, and any rewrite of the slot (a push of another
    /// entry, which no slot with the mark matches) clears it. It is part of the entry's chain
    /// key ([`chain_key_on`](Self::chain_key_on), `chain::unrecorded_key`): the caller
    /// recomputes the chain keys from this entry up. The owner, with no write section: readers
    /// ignore the bit.
    pub fn set_unrecorded(&self) {
        // Relaxed (both): the owner's word, as in `set_marks`.
        let m = self.meta.load(Ordering::Relaxed);
        self.meta.store(m | UNRECORDED, Ordering::Relaxed);
    }

    /// The entry's key in the instance-order pairs (the owner): its instance with its map's
    /// pair tag (see `LockMap::pair_key`).
    #[inline]
    pub fn pair_key(&self) -> usize {
        // Relaxed: the owner reads back its own store.
        pair_key(self.instance(), tag_of(self.meta.load(Ordering::Relaxed)))
    }

    /// Whether [`set_unrecorded`](Self::set_unrecorded) marked the entry (the owner).
    pub fn is_unrecorded(&self) -> bool {
        // Relaxed: the owner reads back its own store.
        self.meta.load(Ordering::Relaxed) & UNRECORDED != 0
    }

    /// Sets the pin count and the paired mark (the owner). No write section: readers ignore
    /// these bits, and `meta` is stored whole.
    #[inline]
    pub fn set_marks(&self, pins: u16, paired: bool) {
        // Relaxed (both): the owner's word; a reader of it keeps only the shown bits, which
        // this store leaves as they were.
        let m = self.meta.load(Ordering::Relaxed) & !(PAIRED | PIN_MASK);
        let m = m | u64::from(pins) << PIN_SHIFT | (u64::from(paired) * PAIRED);
        self.meta.store(m, Ordering::Relaxed);
    }

    /// The chain key of this slot's entry over the chain key `below` (the owner, of a slot it
    /// wrote): what [`HeldLock::chain_key_on`] gives for [`load`](Self::load)'s entry, from
    /// the four words it needs (the instance word's mode bits, the class, `meta`'s trylock
    /// bit and the nest_lock), not the whole entry.
    #[inline]
    pub fn chain_key_on(&self, below: u64) -> u64 {
        // Relaxed: the owner reads back its own store.
        key_of_words(
            below,
            self.tagged(),
            self.class_bits(),
            self.meta.load(Ordering::Relaxed),
            self.nest_lock(),
        )
    }

    /// The whole entry (the owner, of a slot it wrote).
    pub fn load(&self) -> HeldLock {
        let raw = self.read();
        // SAFETY: the owner reads a slot it wrote from a `HeldLock` (see `RawSlot::decode`'s
        // contract): `write`, `copy_from` and `take_rekeyed` are the only stores, from valid
        // entries.
        let shown = unsafe { raw.decode() };
        let (pin_count, paired) = self.marks();
        HeldLock {
            class: shown.class,
            instance: shown.instance,
            name: shown.name,
            named: shown.named,
            mode: shown.mode,
            trylock: shown.trylock,
            subclass: shown.subclass,
            nest_lock: self.nest_lock(),
            site: shown.site,
            chain_key: self.chain_key(),
            pin_count,
            paired,
            upgrade: false,
            tag: shown.tag,
        }
    }

    /// The shown fields as they are now (a reader: racy until its read section validates).
    pub fn read(&self) -> RawSlot {
        // Relaxed (every load): checked by the read section's counter, or the owner's own.
        RawSlot {
            instance: self.instance.load(Ordering::Relaxed),
            class: self.class.load(Ordering::Relaxed),
            meta: self.meta.load(Ordering::Relaxed) & SHOWN,
            site: self.site.load(Ordering::Relaxed),
            name_ptr: self.name_ptr.load(Ordering::Relaxed),
        }
    }
}

impl RawSlot {
    /// The instance this copy names (no decoding needed but the mode bits' mask).
    pub fn instance(&self) -> usize {
        self.instance & !MODE_BITS
    }

    /// The first word as stored: the instance with the mode (see [`tagged`]).
    pub fn tagged(&self) -> usize {
        self.instance
    }

    /// Whether the copy is of a held entry: the slot was written (a fresh slot has null
    /// pointers) and is not a hole (see [`HOLE`]: a lock released below others).
    pub fn held(&self) -> bool {
        !self.site.is_null() && !self.name_ptr.is_null() && self.instance & HOLE == 0
    }

    /// The class this copy names (a plain number: no decoding needed).
    pub fn class(&self) -> ClassId {
        ClassId::from_bits(self.class)
    }

    /// The fields, decoded.
    ///
    /// # Safety
    ///
    /// The copy must be one [`Slot::write`] (or a copy of one) stored whole: the owner's own
    /// slot, or a reader's copy that its read section validated. `site` then comes from a
    /// `&'static Location` and `name_ptr` with the length in `meta` from one `&'static str`
    /// (cut at a character boundary if over [`MAX_NAME_LEN`]: see [`name_meta`]).
    pub unsafe fn decode(&self) -> Shown {
        // SAFETY: the caller's contract (above).
        let (site, name) = unsafe {
            (
                &*self.site,
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    self.name_ptr,
                    name_len(self.meta),
                )),
            )
        };
        Shown {
            instance: self.instance(),
            class: ClassId::from_bits(self.class),
            mode: Mode::from_code(self.meta),
            trylock: self.meta & 4 != 0,
            named: self.meta & 8 != 0,
            subclass: (self.meta >> 8) as u8,
            name,
            site,
            tag: tag_of(self.meta),
        }
    }
}

// Eight words, one cache line: what a push stores, and the memo.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Slot>() == 64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_name_is_cut_at_a_character_boundary_and_leaves_the_tag_bits_free() {
        // Two-byte characters: 65,535 falls inside one, so the cut goes back a byte.
        let long: &'static str = Box::leak("é".repeat(40_000).into_boxed_str());
        let meta = name_meta(true, long);
        assert_eq!(name_len(meta), MAX_NAME_LEN - 1);
        assert!(long.is_char_boundary(name_len(meta)));
        assert_eq!(tag_of(meta), 0);
        assert!(is_named(meta));
        // A tag beside the name changes neither its length nor the named bit.
        let tagged = meta | tag_bits(0xbeef);
        assert_eq!(
            (name_len(tagged), tag_of(tagged)),
            (MAX_NAME_LEN - 1, 0xbeef)
        );
        // Short names are whole, and a tag's bits are apart from every other field's.
        assert_eq!(name_len(name_meta(false, "Mutex")), 5);
        let all_but_tag = shown_meta(Mode::Upgradable, true, true, 0xff, long)
            | PAIRED
            | PIN_MASK
            | LEFT_NESTED
            | UNRECORDED;
        assert_eq!(all_but_tag & tag_bits(u16::MAX), 0);
    }

    fn entry(chain_key: u64) -> HeldLock {
        HeldLock {
            chain_key,
            ..HeldLock::for_test(0x1000)
        }
    }

    fn holds_memo(s: &Slot, h: &HeldLock, below: u64) -> bool {
        let meta = shown_meta(h.mode, h.trylock, h.named, h.subclass, h.name);
        s.holds_memo(
            below,
            h.class,
            &PlainWords {
                instance: h.instance,
                mode: h.mode,
                meta,
                site: h.site,
                name_ptr: h.name.as_ptr(),
            },
        )
    }

    /// The memo vouches only for the chain key below it was set over, and every store of
    /// the entry's words or chain key takes it away.
    #[test]
    fn the_memo_is_over_one_key_below_and_every_store_clears_it() {
        let (below, other) = (1 << 62 | 7, 1 << 62 | 8);
        let h = entry(1 << 62 | 99);
        let s = Slot::default();
        s.write(&h);
        assert!(!holds_memo(&s, &h, below), "no memo after a write");
        s.set_memo(below);
        assert!(holds_memo(&s, &h, below));
        assert!(!holds_memo(&s, &h, other), "another key below");
        let mut read = h;
        read.mode = Mode::RecursiveRead;
        assert!(!holds_memo(&s, &read, below), "another mode");

        s.set_chain_key(h.chain_key);
        assert!(!holds_memo(&s, &h, below), "a chain key store clears it");
        s.set_memo(below);
        s.write(&h);
        assert!(!holds_memo(&s, &h, below), "a write clears it");
        s.set_memo(below);
        let copy = Slot::default();
        copy.copy_from(&s);
        assert!(!holds_memo(&copy, &h, below), "a copy does not carry it");
        assert!(holds_memo(&s, &h, below), "the copied slot keeps it");
        s.set_marks(1, false);
        assert!(!holds_memo(&s, &h, below), "a pinned entry never matches");
    }

    /// A slot left above the stack by an entry that moved down loses its marks but keeps its
    /// memo: the same entry taken again over the same key below needs no chain-cache probe,
    /// and a pinned entry left there matches nothing until its pins are gone.
    #[test]
    fn a_vacated_slot_keeps_its_memo_and_drops_its_marks() {
        let below = 1 << 62 | 7;
        let h = entry(1 << 62 | 99);
        let s = Slot::default();
        s.write(&h);
        s.set_memo(below);
        s.set_marks(2, true);
        assert!(!holds_memo(&s, &h, below), "pinned: no match");
        s.vacate();
        assert_eq!(s.marks(), (0, false));
        assert!(holds_memo(&s, &h, below));
        assert_eq!(
            s.chain_key(),
            h.chain_key,
            "with the chain key the memo was set with"
        );
    }

    /// The slot's own chain key computation (a rekey's) gives the whole entry's, for every
    /// mode, trylock and nest_lock, pinned and paired or not.
    #[test]
    fn a_slots_chain_key_is_its_entrys() {
        let below = 1 << 62 | 12_345;
        for mode in [
            Mode::Exclusive,
            Mode::Read,
            Mode::RecursiveRead,
            Mode::Upgradable,
        ] {
            for (trylock, nest_lock, pins) in [(false, 0, 0), (true, 0, 1), (false, 0x2000, 0)] {
                let h = HeldLock {
                    mode,
                    trylock,
                    nest_lock,
                    subclass: 3,
                    ..entry(7)
                };
                let s = Slot::default();
                s.write(&h);
                s.set_marks(pins, pins > 0);
                assert_eq!(s.chain_key_on(below), h.chain_key_on(below), "{h:?}");
                assert_eq!(s.chain_key_on(below), s.load().chain_key_on(below));
                // A cut's move: the same entry, re-keyed over `below`, with no memo.
                let to = Slot::default();
                to.write(&entry(1));
                to.set_memo(below);
                assert_eq!(to.take_rekeyed(&s, below), h.chain_key_on(below), "{h:?}");
                let moved = to.load();
                assert_eq!(moved.chain_key, h.chain_key_on(below));
                let (moved, was) = (
                    HeldLock {
                        chain_key: h.chain_key,
                        ..moved
                    },
                    HeldLock {
                        pin_count: pins,
                        paired: pins > 0,
                        ..h
                    },
                );
                assert_eq!(
                    format!("{moved:?}"),
                    format!("{was:?}"),
                    "every other field"
                );
                assert!(!holds_memo(&to, &h, below), "no memo");
            }
        }
    }
}
