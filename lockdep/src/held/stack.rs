//! A thread's held-lock stack and the bookkeeping that must agree with it.
//!
//! Invariants, kept by the methods below and nowhere else: every entry's chain key is its own
//! key over the entry below it (`HeldLock::chain_key_on`), so the stack's chain key is the top
//! entry's (0 when empty), read from its slot and kept nowhere else; `marks` is the sum of the
//! entries' pin counts plus the number of entries marked `paired`; `nested` is the number of
//! entries taken under a nest_lock; `room` is what [`ThreadState::refresh_room`] computes.
//!
//! # One storage
//!
//! The entries live in one array of [`Slot`]s, written once per push: while the thread holds
//! a shared record, the record's own slots (so other threads read the stack itself, under the
//! record's sequence counter; see [`record`]); without one (before the first
//! push, past the record limit, and after the exit check gave the record back) a private
//! array of the same slots. `base`/`cap` name the array in use, so the fast path reaches a
//! slot with no indirection and no test of which array it is. The slot keeps the fields every
//! path needs in eight words; a report decodes them into a [`HeldLock`].
//!
//! Why the record's slots and not the private array read by others: another thread may read
//! the stack at any time, so its storage must be atomics either way, and it must outlive the
//! thread (a reader may still be copying when the owner exits). The record's arrays are
//! never freed, so a reader needs no more than the record's sequence counter; a private
//! array that other threads read would need a way to free it safely at thread exit. The
//! private array serves only threads no other thread can see anyway (no record), and is
//! freed as usual. Costs on the owner's side: a push compares the slot with the entry first
//! and stores nothing when it already holds it (a loop re-taking the same locks), else
//! moves the record's counter when a reader could see the change; a LIFO pop is one store
//! of the record's depth word.

use std::cell::OnceCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::record::{self, Identity, Record};
use super::slot::{self, Find, Slot, Words};
use super::HeldLock;
use crate::chain::LocalCache;
use crate::class::ClassId;
use crate::mode::Mode;
use crate::pair_cache::PairCache;

/// Everything the validator keeps per thread. `repr(C)`: the fields the fast paths read come
/// first, next to the thread-local's borrow flag.
#[repr(C)]
pub(crate) struct ThreadState {
    /// The first of the `cap` slots in use: the record's array, or `own`'s (dangling when
    /// `cap` is 0).
    base: NonNull<Slot>,
    /// The fast path's room: it pushes only while `len` is below this. The smaller of `cap`
    /// and the depth limit (counted as `depth` counts it); kept by
    /// [`refresh_room`](Self::refresh_room) at the end of every slow path, so that one compare
    /// decides what took two tests. (A thread with no shared record never takes the fast
    /// path: [`fast_top`](Self::fast_top) needs the record's depth word.)
    room: usize,
    /// While the thread has no record: the number of held entries (the slots below it) in the
    /// low bits and the number of pushes so far above them, as the record's depth word keeps
    /// them (see `Record::store_len`). While it has one, the record's word is the only copy
    /// (see [`word`](Self::word)), so that a push or a pop stores one word.
    len_word: u64,
    /// The record whose slots hold the stack (claimed at the first push; `None` before, or
    /// past the record limit).
    record: Option<&'static Record>,
    /// The marks and the nested count (see [`Counts`]), in one word that the fast pop tests
    /// with one compare.
    counts: Counts,
    /// The number of slots at `base`.
    cap: usize,
    /// The private slots, while the thread has no record (empty otherwise).
    own: Vec<Slot>,
    /// The chains this thread validated (or found validated) recently.
    pub cache: LocalCache,
    /// The instance pairs this thread checked recently.
    pub pairs: PairCache,
    /// (validator thread number, thread name), filled in when a report first needs it, so
    /// that the thread-local can be const-initialized (no lazy-init check on the fast path).
    identity: OnceCell<(u64, String)>,
    /// No record is to be claimed: the record table was full at the last try, or the thread's
    /// exit check has run (its record was given back; see [`reset_after_exit`]).
    ///
    /// [`reset_after_exit`]: ThreadState::reset_after_exit
    unclaimable: bool,
}

/// What [`ThreadState::fast_top`] found: the record and the depth word it read (a push made
/// with it must be the thread's next change to its stack).
#[derive(Clone, Copy)]
pub(crate) struct FastTop {
    r: &'static Record,
    word: u64,
}

impl FastTop {
    /// The number of held entries.
    #[inline(always)]
    pub fn len(self) -> usize {
        record::depth_of(self.word)
    }
}

/// A stack's two counters, in one word (so that the fast pop tests both with one compare):
/// in the low half, the sum of the held entries' pin counts plus the number of entries marked
/// `paired`, so that a release need not read the entry when nothing is pinned or paired (the
/// usual case); in the high half, the number of held entries taken under a nest_lock, which
/// do not count against the depth limit (the kernel folds them into one entry).
#[derive(Clone, Copy, Debug)]
struct Counts(u64);

impl Counts {
    /// The pin counts plus the paired marks.
    #[inline(always)]
    fn marks(self) -> u32 {
        self.0 as u32
    }

    /// The entries taken under a nest_lock.
    #[inline(always)]
    fn nested(self) -> u32 {
        (self.0 >> 32) as u32
    }

    #[inline(always)]
    fn set_marks(&mut self, marks: u32) {
        self.0 = self.0 & !u64::from(u32::MAX) | u64::from(marks);
    }

    #[inline(always)]
    fn set_nested(&mut self, nested: u32) {
        self.0 = self.0 & u64::from(u32::MAX) | u64::from(nested) << 32;
    }

    /// Whether either counter is non-zero.
    #[inline(always)]
    fn any(self) -> bool {
        self.0 != 0
    }
}

/// A plain acquisition (no nest_lock, no pin, not paired), as the fast path's pushes take it.
#[derive(Clone, Copy)]
pub(crate) struct Plain {
    pub instance: usize,
    pub class: ClassId,
    pub mode: Mode,
    pub trylock: bool,
    pub subclass: u8,
    pub named: bool,
    pub site: &'static std::panic::Location<'static>,
    pub name: &'static str,
    /// `slot::name_meta(named, name)`, as the lock map keeps it made.
    pub name_meta: u64,
}

impl Plain {
    /// Its slot's `meta` word: the acquisition's bits (constants on the fast path) and the
    /// map's name bits, made when the map was.
    #[inline(always)]
    fn meta(&self) -> u64 {
        debug_assert_eq!(self.name_meta, slot::name_meta(self.named, self.name));
        slot::acquisition_meta(self.mode, self.trylock, self.subclass) | self.name_meta
    }

    /// The shown words the fast path's shortcuts compare.
    #[inline(always)]
    fn words(&self) -> slot::PlainWords {
        slot::PlainWords {
            instance: self.instance,
            mode: self.mode,
            meta: self.meta(),
            site: self.site,
            name_ptr: self.name.as_ptr(),
        }
    }

    /// Its held entry, with chain key `chain_key`.
    #[inline(always)]
    pub fn entry(&self, chain_key: u64) -> HeldLock {
        HeldLock {
            class: self.class,
            instance: self.instance,
            name: self.name,
            named: self.named,
            mode: self.mode,
            trylock: self.trylock,
            subclass: self.subclass,
            nest_lock: 0,
            site: self.site,
            chain_key,
            pin_count: 0,
            paired: false,
            upgrade: false,
        }
    }
}

/// What leaving the stack found on an entry (both zero/false in the usual case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Left {
    /// Its pin count.
    pub pins: u32,
    /// Whether it was marked `paired`.
    pub paired: bool,
}

/// An entry ready to be pushed: its chain key is computed over the stack's top as it was when
/// [`ThreadState::next`] made it. Push it before the stack changes.
pub(crate) struct Next {
    entry: HeldLock,
    /// The top key it was computed over (checked in debug builds).
    below: u64,
}

impl Next {
    /// The chain key of the stack with this entry pushed.
    #[inline]
    pub fn key(&self) -> u64 {
        self.entry.chain_key
    }
}

/// The held entries, bottom first: a view of the slots that decodes each entry it yields.
#[derive(Clone, Copy)]
pub(crate) struct Entries<'a> {
    slots: &'a [Slot],
}

impl<'a> Entries<'a> {
    /// The number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The entries, bottom first.
    #[inline]
    pub fn iter(&self) -> EntryIter<'a> {
        self.into_iter()
    }

    /// The entries, copied out.
    pub fn to_vec(self) -> Vec<HeldLock> {
        self.iter().collect()
    }
}

/// The iterator of [`Entries`].
pub(crate) type EntryIter<'a> = std::iter::Map<std::slice::Iter<'a, Slot>, fn(&Slot) -> HeldLock>;

impl<'a> IntoIterator for Entries<'a> {
    type Item = HeldLock;
    type IntoIter = EntryIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.slots.iter().map(Slot::load as fn(&Slot) -> HeldLock)
    }
}

static NEXT_TID: AtomicU64 = AtomicU64::new(1);

/// Stores `words` in `slot`, which is about to be pushed and does not hold them: the record's
/// counter moves first if a reader could see a change (a slot that shows the entry with other
/// owner's words is rewritten with no move: no reader sees a difference).
#[inline(always)]
fn rewrite(slot: &Slot, r: &Record, words: &Words) {
    if !slot.shows(words) {
        r.will_push();
    }
    slot.store(words);
}

impl ThreadState {
    pub(crate) const fn new() -> ThreadState {
        ThreadState {
            base: NonNull::dangling(),
            cap: 0,
            room: 0,
            len_word: 0,
            own: Vec::new(),
            counts: Counts(0),
            cache: LocalCache::new(),
            pairs: PairCache::new(),
            identity: OnceCell::new(),
            record: None,
            unclaimable: false,
        }
    }

    /// The slots in use (`cap` of them).
    #[inline(always)]
    fn slots(&self) -> &[Slot] {
        // SAFETY: `base` and `cap` name either the record's array (leaked, never freed) or
        // `own`'s buffer (`use_own` sets them whenever `own` changes, and nothing else changes
        // it), or nothing (`cap` 0, `base` dangling and aligned).
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.cap) }
    }

    /// Slot `i`, below `cap`.
    #[inline(always)]
    fn slot(&self, i: usize) -> &Slot {
        &self.slots()[i]
    }

    /// Makes `own` the array in use.
    fn use_own(&mut self, own: Vec<Slot>) {
        self.own = own;
        self.cap = self.own.len();
        self.base = NonNull::new(self.own.as_mut_ptr()).expect("a Vec's pointer is not null");
    }

    /// Makes the record's `slots` the array in use.
    fn use_shared(&mut self, slots: &'static [Slot]) {
        self.own = Vec::new();
        self.cap = slots.len();
        self.base = NonNull::from(slots).cast();
    }

    /// A private array of `cap` slots holding the stack's entries.
    fn private_copy(&self, cap: usize) -> Vec<Slot> {
        let own: Vec<Slot> = (0..cap).map(|_| Slot::default()).collect();
        for (to, from) in own.iter().zip(&self.slots()[..self.len()]) {
            to.copy_from(from);
        }
        own
    }

    /// The state after the thread's exit check gave the record back: claims no record again,
    /// and keeps no spare room (see [`trim_after_exit`](Self::trim_after_exit)). Entries
    /// still held stay, so that thread-local destructors that run later can release them.
    pub(crate) fn reset_after_exit(&mut self) {
        debug_assert!(self.record.is_none(), "the record was given back");
        self.unclaimable = true;
        self.trim_after_exit();
    }

    /// After an operation of a thread whose exit check ran: no spare room on the stack (so
    /// the fast path, which never allocates, leaves every operation to the slow path), and no
    /// memory at all when it is empty.
    pub(crate) fn trim_after_exit(&mut self) {
        debug_assert!(self.record.is_none(), "late mode has no record");
        if self.cap != self.len() {
            let own = self.private_copy(self.len());
            self.use_own(own);
        }
        self.pairs.shrink();
    }

    /// The shared record of this stack, if it has one.
    #[inline]
    pub fn record(&self) -> Option<&'static Record> {
        self.record
    }

    /// Claims a shared record and moves the stack into its slots (the first push of the
    /// thread).
    #[cold]
    fn claim_record(&mut self) {
        let (id, name) = self.identity().clone();
        let std_id = std::panic::catch_unwind(|| std::thread::current().id()).ok();
        let identity = Identity {
            id,
            name,
            std_id,
            os_tid: os_tid(),
        };
        // The private stack's depth, read before the record's word becomes the depth.
        let len = self.len();
        self.record = record::claim(identity);
        match self.record {
            Some(r) => {
                let mut slots = r.slots();
                if slots.len() < len {
                    slots = r.grow(0, len.next_power_of_two());
                }
                let even = r.begin();
                for (to, from) in slots.iter().zip(&self.slots()[..len]) {
                    to.copy_from(from);
                }
                // The count of pushes goes on from the record's (its watchers compare it).
                r.store_len_in_section(record::with_depth(r.len_word(), len));
                r.end(even);
                self.use_shared(slots);
            }
            // The table is full: this thread's stack stays private (not in dumps or other
            // threads' checks), and no later push tries again.
            None => self.unclaimable = true,
        }
    }

    /// Gives the shared record back (thread exit): the entries still held move to a private
    /// array first, as the record's next owner writes its slots.
    pub fn give_back_record(&mut self) {
        if let Some(r) = self.record {
            let own = self.private_copy(self.len());
            self.use_own(own);
            self.len_word = r.len_word();
            self.record = None;
            r.give_back();
        }
    }

    /// Applies what other threads asked of this stack (releases of guards dropped on another
    /// thread, locks freed elsewhere). One relaxed load when there is nothing.
    #[inline]
    pub fn settle(&mut self) {
        if let Some(r) = self.record {
            if r.has_mail() {
                self.apply_mail(r);
            }
        }
    }

    /// Recomputes [`room`](Self::room) from the array, the nest count and the depth limit as
    /// they are now. Every slow path ends with it (see `with_state`); `set_max_depth` sends
    /// every thread's next operation to one.
    #[inline]
    pub(crate) fn refresh_room(&mut self) {
        self.room = self
            .cap
            .min(crate::settings::max_depth().saturating_add(self.counts.nested() as usize));
    }

    /// What a fast-path push needs, if the fast path may push: the record and its depth word,
    /// when there is room (see [`room`](Self::room)) and nothing unusual waits. Two loads
    /// from the record's owner line.
    #[inline(always)]
    pub fn fast_top(&self) -> Option<FastTop> {
        let r = self.record?;
        let word = r.len_word();
        if record::depth_of(word) >= self.room || r.is_unusual() {
            return None;
        }
        Some(FastTop { r, word })
    }

    /// The chain key of the stack's `len` bottom entries (0 for none): the fast path's
    /// [`top_key`](Self::top_key), with the depth it read already.
    #[inline(always)]
    pub fn key_below(&self, len: usize) -> u64 {
        match len {
            0 => 0,
            len => self.top_slot(len - 1).chain_key(),
        }
    }

    #[cold]
    fn apply_mail(&mut self, r: &'static Record) {
        for m in r.take_mail() {
            if m.forget_chains {
                self.forget_chains();
                continue;
            }
            if let Some(mode) = m.becomes {
                if let Some(i) = self.find_release(m.find()) {
                    self.set_mode(i, mode);
                }
                continue;
            }
            while let Some(i) = self.find_release(m.find()) {
                // Its pairs are the poster's business (it marks the map, or forgets the
                // freed instance itself).
                let _ = self.remove(i);
                if !m.all {
                    break;
                }
            }
        }
    }

    /// This thread's validator number (unique, never reused) and name.
    pub fn identity(&self) -> &(u64, String) {
        self.identity.get_or_init(|| {
            // `thread::current()` may panic while the thread's locals are being destroyed
            // (a report at thread exit); fall back to a placeholder name then.
            let name = std::panic::catch_unwind(|| {
                std::thread::current()
                    .name()
                    .unwrap_or("<unnamed>")
                    .to_owned()
            })
            .unwrap_or_else(|_| "<exiting>".to_owned());
            // Relaxed: a unique number is all that is needed.
            (NEXT_TID.fetch_add(1, Ordering::Relaxed), name)
        })
    }

    /// The held entries' slots, bottom first: for scans that need a few words of each entry
    /// (its instance, class and mode), not each whole entry decoded.
    #[inline]
    pub fn held_slots(&self) -> &[Slot] {
        &self.slots()[..self.len()]
    }

    /// The held entries, bottom first.
    #[inline]
    pub fn entries(&self) -> Entries<'_> {
        Entries {
            slots: &self.slots()[..self.len()],
        }
    }

    /// Held entry `i`. Panics if there is no such entry.
    #[inline]
    pub fn entry(&self, i: usize) -> HeldLock {
        self.entries().slots[i].load()
    }

    /// The chain key of the current stack (0 when empty): the top entry's. Not kept in a field
    /// of its own, so that a pop stores only the depth (measured faster than keeping it).
    #[inline(always)]
    pub fn top_key(&self) -> u64 {
        self.key_below(self.len())
    }

    /// Whether a held entry's instance (a lock map's address) lies in `[lo, hi)`: one pass over
    /// the entries' first words.
    #[inline]
    pub fn holds_instance_in(&self, lo: usize, hi: usize) -> bool {
        self.slots()[..self.len()]
            .iter()
            .any(|s| (lo..hi).contains(&s.instance()))
    }

    /// Index of the topmost entry for this instance.
    #[inline]
    pub fn find(&self, instance: usize) -> Option<usize> {
        self.slots()[..self.len()]
            .iter()
            .rposition(|s| s.instance() == instance)
    }

    /// Index of the entry `release` names: the topmost of its instance in its mode if it
    /// gives one and the thread has such an entry, else the topmost of its instance.
    #[inline]
    pub fn find_release(&self, release: Find) -> Option<usize> {
        release.pick(&self.slots()[..self.len()], Slot::tagged)
    }

    /// The depth word: the record's while the thread has one, else
    /// [`len_word`](Self::len_word).
    #[inline(always)]
    fn word(&self) -> u64 {
        match self.record {
            Some(r) => r.len_word(),
            None => self.len_word,
        }
    }

    /// Sets the depth word (see [`word`](Self::word)); published with
    /// [`Record::store_len`], or inside a write section if `in_section`.
    #[inline(always)]
    fn set_word(&mut self, w: u64, in_section: bool) {
        match self.record {
            Some(r) if in_section => r.store_len_in_section(w),
            Some(r) => r.store_len(w),
            None => self.len_word = w,
        }
    }

    /// The number of held entries (the depth bits of the [`word`](Self::word)).
    #[inline(always)]
    pub fn len(&self) -> usize {
        record::depth_of(self.word())
    }

    /// The depth that counts against the limit: held entries not covered by a nest_lock.
    #[inline]
    pub fn depth(&self) -> usize {
        self.len() - self.counts.nested() as usize
    }

    /// Prepares `entry` for a push onto the stack as it is now: computes its chain key.
    #[inline]
    pub fn next(&self, mut entry: HeldLock) -> Next {
        let below = self.top_key();
        entry.chain_key = entry.chain_key_on(below);
        Next { entry, below }
    }

    /// Pushes an entry made by [`next`](Self::next) on this stack, unchanged since: claims
    /// the record at the thread's first push, and grows the array when it is full.
    #[inline]
    pub fn push(&mut self, next: Next) {
        if self.record.is_none() && !self.unclaimable {
            self.claim_record();
        }
        if !self.has_room() {
            self.grow();
        }
        self.push_in_room(next);
    }

    /// Doubles the array in use (at least 4 slots), keeping the entries.
    #[cold]
    fn grow(&mut self) {
        // Past `MAX_HELD` entries the length would not fit its word: the slots alone would
        // take hundreds of GiB by then, so the allocation fails first on any real machine.
        assert!(
            self.cap < record::MAX_HELD,
            "lockdep: a thread holds {} locks at once, the most a held-lock stack holds",
            record::MAX_HELD
        );
        let cap = (self.cap * 2).clamp(4, record::MAX_HELD);
        match self.record {
            Some(r) => {
                let slots = r.grow(self.len(), cap);
                self.use_shared(slots);
            }
            None => {
                let own = self.private_copy(cap);
                self.use_own(own);
            }
        }
    }

    /// Whether a push needs no allocation. The fast path pushes only then (with
    /// [`push_in_room`](Self::push_in_room)) and leaves growth to the slow path, so that no
    /// call is made while the new entry's fields are in registers.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.len() < self.cap
    }

    /// [`push`](Self::push) into room that [`has_room`](Self::has_room) found: never
    /// allocates, and stores each word of the entry once, into its slot. Panics if there is
    /// no room.
    #[inline(always)]
    pub fn push_in_room(&mut self, next: Next) {
        let entry = self.account(next);
        let len = self.len();
        let slot = self.slot(len);
        let words = Words::of(&entry);
        // The room came from a `push`, which claimed the record if there is one to claim.
        match self.record {
            Some(r) => {
                // A slot that holds the entry already (the same lock at the same depth, as
                // last time) is left alone.
                if !slot.holds(&words) {
                    rewrite(slot, r, &words);
                }
                r.store_len(record::pushed_word(r.len_word()));
            }
            None => {
                slot.store(&words);
                self.len_word = record::pushed_word(self.len_word);
            }
        }
    }

    /// The fast path's push of a plain chain head (the stack is empty, as `top` found it):
    /// when the bottom slot already holds it (see [`Slot::holds_head`]) only the depth is
    /// stored, and no chain key is computed; else the whole entry.
    #[inline(always)]
    pub fn push_head_fast(&mut self, top: FastTop, p: &Plain) {
        let FastTop { r, word } = top;
        debug_assert_eq!(record::depth_of(word), 0);
        let slot = self.top_slot_in_room(0);
        if !slot.holds_head(p.class, &p.words()) {
            let key = HeldLock::chain_key_of(0, p.class, p.mode, p.trylock, 0);
            rewrite(slot, r, &Words::plain(&p.words(), p.class, key));
        }
        r.store_len(record::pushed_word(word));
    }

    /// The fast path's push of a plain entry over the non-empty stack `top` found, whose
    /// chain key below is `below`, if the top slot's memo says that the chain is valid (see
    /// [`Slot::holds_memo`]): then only the depth is stored, and neither the chain key nor
    /// the chain cache is needed. False (and nothing changed) otherwise.
    #[inline(always)]
    pub fn push_memo_fast(&mut self, top: FastTop, below: u64, p: &Plain) -> bool {
        let FastTop { r, word } = top;
        let slot = self.top_slot_in_room(record::depth_of(word));
        if !slot.holds_memo(below, p.class, &p.words()) {
            return false;
        }
        r.store_len(record::pushed_word(word));
        true
    }

    /// The fast path's push of a plain entry over the non-empty stack `top` found, whose
    /// chain key below is `below` and whose own chain key `key` was found valid (in the
    /// chain cache, or a trylock): the slot is rewritten unless it holds the entry already
    /// (see [`Slot::holds_fast`]), and its memo is set, so that the next such push needs
    /// only [`push_memo_fast`](Self::push_memo_fast).
    #[inline(always)]
    pub fn push_fast(&mut self, top: FastTop, below: u64, key: u64, p: &Plain) {
        self.push_plain(top, key, p, Some(below));
    }

    /// Whether any of the `len` bottom entries (the whole stack, as the fast path read its
    /// depth) is of class `class` or of instance `instance`: for a hit on a marked chain
    /// (see `chain::Hit::Nested`), which the fast path may take only when neither is held.
    /// One pass over the slots, two compares each.
    #[inline]
    pub fn holds_class_or_instance(&self, len: usize, class: ClassId, instance: usize) -> bool {
        self.slots()[..len]
            .iter()
            .any(|s| s.class_bits() == class.to_bits() || s.instance() == instance)
    }

    /// [`push_fast`](Self::push_fast) for a chain found valid by a marked hit whose held
    /// instances were just checked: the same push, but the memo is cleared, not set, since a
    /// memo hit would skip that check the next time.
    #[inline(always)]
    pub fn push_fast_checked(&mut self, top: FastTop, key: u64, p: &Plain) {
        self.push_plain(top, key, p, None);
    }

    /// The two pushes above: the slot rewritten unless it holds the entry, then its memo set
    /// over the chain key `memo` below, or cleared (`None`), then the depth stored.
    #[inline(always)]
    fn push_plain(&mut self, top: FastTop, key: u64, p: &Plain, memo: Option<u64>) {
        let FastTop { r, word } = top;
        let slot = self.top_slot_in_room(record::depth_of(word));
        if !slot.holds_fast(key, &p.words()) {
            rewrite(slot, r, &Words::plain(&p.words(), p.class, key));
        }
        match memo {
            Some(below) => slot.set_memo(below),
            None => slot.forget_memo(),
        }
        r.store_len(record::pushed_word(word));
    }

    /// Slot `i` with no bounds check, for a push into room: `i` must be below `cap`.
    #[inline(always)]
    fn top_slot_in_room(&self, i: usize) -> &Slot {
        debug_assert!(i < self.cap);
        // SAFETY: `i < cap` (the caller's contract, from `room <= cap`), and `base..cap` are
        // live slots (see `slots`).
        unsafe { &*self.base.as_ptr().add(i) }
    }

    /// The counters' share of a push; returns the entry to store.
    #[inline(always)]
    fn account(&mut self, next: Next) -> HeldLock {
        debug_assert_eq!(next.below, self.top_key(), "the stack changed since `next`");
        let Next { entry, .. } = next;
        self.counts
            .set_nested(self.counts.nested() + u32::from(entry.nest_lock != 0));
        self.counts
            .set_marks(self.counts.marks() + u32::from(entry.pin_count) + u32::from(entry.paired));
        entry
    }

    /// The whole of the usual release: pops the top entry if it is the one `release` names,
    /// the thread has a record (the stack of one without is left to the general path) and no
    /// held entry carries a mark or a nest_lock; false (and nothing changes) otherwise.
    #[inline(always)]
    pub fn pop_plain(&mut self, release: Find) -> bool {
        let Some(r) = self.record else {
            return false;
        };
        let word = r.len_word();
        let len = record::depth_of(word);
        // One test of the two counters: anything unusual goes the general way.
        if len == 0
            || !release.matches(self.top_slot(len - 1))
            || self.counts.any()
            || r.is_unusual()
        {
            return false;
        }
        r.store_len(record::popped_word(word));
        true
    }

    /// The release of the entry just below the top, when it is the one `release` names and
    /// the top is not: a pair released in the order taken (a tuple or a struct of guards
    /// drops its first field first). The same conditions as [`pop_plain`](Self::pop_plain)
    /// (a record, no mark or nest_lock on the stack, nothing unusual), then the top moves
    /// down a slot with its new chain key, as [`release_at`](Self::release_at) does: the
    /// release's fast path, after `pop_plain` (no call, no borrow of the state). False (and
    /// nothing changes) otherwise.
    #[inline(always)]
    pub fn pop_below_top(&mut self, release: Find) -> bool {
        let Some(r) = self.record else {
            return false;
        };
        let word = r.len_word();
        let len = record::depth_of(word);
        if len < 2
            || self.counts.any()
            || r.is_unusual()
            || release.matches(self.top_slot(len - 1))
            || !release.matches(self.top_slot(len - 2))
        {
            return false;
        }
        // No marks and no nest_lock anywhere (the counters are zero): nothing to take from
        // the entry, and the top slot, left above the stack, has no marks to forget. The
        // cut of one slot, unrolled: the top moves down with its chain key made over the
        // entry below (0 for none), in one write section.
        let below = if len > 2 {
            self.top_slot(len - 3).chain_key()
        } else {
            0
        };
        let even = r.begin();
        self.top_slot(len - 2)
            .take_rekeyed(self.top_slot(len - 1), below);
        r.store_len_in_section(record::popped_word(word));
        r.end(even);
        true
    }

    /// Held entry `i`'s slot with no bounds check (the release's hot path has no panic
    /// branch, so it saves no register). `i` must be below `len`.
    #[inline(always)]
    fn top_slot(&self, i: usize) -> &Slot {
        debug_assert!(i < self.len());
        // SAFETY: `i < len <= cap` (the caller's contract; `len` only grows by a push into
        // room), and `base..cap` are live slots (see `slots`).
        unsafe { &*self.base.as_ptr().add(i) }
    }

    /// Pops the top entry (the LIFO case: no chain keys to recompute): the slot stays as it
    /// is, and the record's depth is the one shared store.
    #[inline(always)]
    fn pop_top(&mut self) {
        self.set_word(record::popped_word(self.word()), false);
    }

    /// Bookkeeping for entry `i` leaving the stack; returns its pins and paired mark.
    #[inline]
    fn leave(&mut self, i: usize) -> Left {
        let left = self.take_marks(i);
        if self.counts.nested() > 0 && self.slot(i).nest_lock() != 0 {
            self.counts.set_nested(self.counts.nested() - 1);
            // Left above the stack (a pop) it keeps its nest_lock: no shortcut may take it.
            self.slot(i).left_nested();
        }
        left
    }

    /// True if any held entry carries a mark (a pin or a checked instance pair).
    #[inline]
    pub fn any_marked(&self) -> bool {
        self.counts.marks() != 0
    }

    /// Drops entry `i` (a release); returns what it carried. Always inlined: it is the whole
    /// of a release's work on the hot path.
    #[inline(always)]
    pub fn release_at(&mut self, i: usize) -> Left {
        let left = self.leave(i);
        if i + 1 == self.len() {
            self.pop_top();
        } else {
            self.cut(i);
        }
        left
    }

    /// Clears entry `i`'s pin count and paired mark and returns them; reads the entry only if
    /// something is pinned or paired.
    #[inline]
    fn take_marks(&mut self, i: usize) -> Left {
        if self.counts.marks() == 0 {
            return Left {
                pins: 0,
                paired: false,
            };
        }
        let (pins, paired) = self.slot(i).marks();
        self.slot(i).set_marks(0, false);
        let pins = u32::from(pins);
        self.counts
            .set_marks(self.counts.marks() - (pins + u32::from(paired)));
        Left { pins, paired }
    }

    /// Marks entry `i` as the source of a checked instance pair.
    pub fn mark_paired(&mut self, i: usize) {
        let (pins, paired) = self.slot(i).marks();
        if !paired {
            self.slot(i).set_marks(pins, true);
            self.counts.set_marks(self.counts.marks() + 1);
        }
    }

    /// Removes entry `i` and returns it, recomputing the chain keys of the entries above it
    /// (the kernel re-acquires them in `__lock_release()`; we do not re-validate, because every
    /// dependency among the remaining locks is already implied by the graph).
    pub fn remove(&mut self, i: usize) -> HeldLock {
        let mut h = self.entry(i);
        let left = self.leave(i);
        // The removed entry keeps its marks (a detached lock carries them to its new thread).
        h.pin_count = left.pins as u16;
        h.paired = left.paired;
        self.cut(i);
        h
    }

    /// Puts `entry` back at index `i` (at most the depth: then on top), the entries from `i`
    /// up moving up one slot, with new chain keys: the inverse of [`remove`](Self::remove).
    pub fn insert(&mut self, i: usize, entry: HeldLock) {
        let next = self.next(entry);
        self.push(next);
        let top = self.len() - 1;
        if i < top {
            self.edit(|st| {
                let slots = &st.slots()[..st.len()];
                let moved = slots[top].load();
                for j in (i..top).rev() {
                    slots[j + 1].copy_from(&slots[j]);
                }
                slots[i].write(&moved);
                st.rekey(i);
            });
        }
    }

    /// Takes entry `i` (not the top) out: the entries above move down one slot, with new
    /// chain keys, in one write section.
    fn cut(&mut self, i: usize) {
        self.edit(|st| {
            let slots = &st.slots()[..st.len()];
            let mut key = if i == 0 { 0 } else { slots[i - 1].chain_key() };
            for j in i + 1..slots.len() {
                key = slots[j - 1].take_rekeyed(&slots[j], key);
            }
            slots[slots.len() - 1].vacate();
            st.set_word(record::popped_word(st.word()), true);
        });
    }

    /// Runs `f`, a change to shown fields of the held entries or to their number, in a write
    /// section of the record (if there is one), and publishes the depth it leaves.
    fn edit(&mut self, f: impl FnOnce(&mut ThreadState)) {
        match self.record {
            Some(r) => {
                let even = r.begin();
                f(self);
                r.end(even);
            }
            None => f(self),
        }
    }

    /// Changes the class (and subclass) of entry `i` and recomputes the chain keys from it up.
    pub fn set_class(&mut self, i: usize, class: ClassId, subclass: u8) {
        let mut h = self.entry(i);
        h.class = class;
        h.subclass = subclass;
        self.edit(|st| {
            st.slot(i).write(&h);
            st.rekey(i);
        });
    }

    /// Changes the mode of entry `i` and recomputes the chain keys from it up.
    pub fn set_mode(&mut self, i: usize, mode: Mode) {
        let mut h = self.entry(i);
        h.mode = mode;
        self.edit(|st| {
            st.slot(i).write(&h);
            st.rekey(i);
        });
    }

    /// Adds one pin to entry `i`.
    pub fn pin(&mut self, i: usize) {
        let (pins, paired) = self.slot(i).marks();
        if let Some(p) = pins.checked_add(1) {
            self.slot(i).set_marks(p, paired);
            self.counts.set_marks(self.counts.marks() + 1);
        }
    }

    /// Removes one pin from entry `i`; false (and nothing changes) if it has none.
    pub fn unpin(&mut self, i: usize) -> bool {
        let (pins, paired) = self.slot(i).marks();
        if pins == 0 {
            return false;
        }
        self.slot(i).set_marks(pins - 1, paired);
        self.counts.set_marks(self.counts.marks() - 1);
        true
    }

    /// Takes every entry off the stack (thread exit), leaving it empty.
    pub fn take_all(&mut self) -> Vec<HeldLock> {
        let all = self.entries().to_vec();
        self.counts = Counts(0);
        // As a pop: the slots stay as they are.
        self.set_word(record::with_depth(self.word(), 0), false);
        all
    }

    /// Forgets every chain this thread cached: its chain cache and every slot's memo (see
    /// [`Mail::forget_chains`](record::Mail)).
    pub fn forget_chains(&mut self) {
        self.cache.clear();
        for slot in self.slots() {
            slot.forget_memo();
        }
    }

    /// Forgets the stack and the chain cache (the validator's reset).
    pub fn clear(&mut self) {
        self.take_all();
        self.cache.clear();
        self.pairs.clear();
    }

    /// Recomputes the chain keys from entry `i` up (shown fields unchanged).
    fn rekey(&mut self, i: usize) {
        let slots = &self.slots()[..self.len()];
        let mut key = if i == 0 { 0 } else { slots[i - 1].chain_key() };
        for s in &slots[i..] {
            key = s.chain_key_on(key);
            s.set_chain_key(key);
        }
    }
}

/// The kernel's id of the calling thread, where the platform has one.
fn os_tid() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` has no preconditions.
        Some(unsafe { libc::gettid() } as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_CLASSES;

    /// Lock instance number `n`: a map's address has its low bits free for a slot's mode
    /// bits, so test instances are multiples of 8 too.
    const fn inst(n: usize) -> usize {
        n << 3
    }

    /// The number of lock instance `instance` (see [`inst`]).
    const fn num(instance: usize) -> usize {
        instance >> 3
    }

    fn entry(n: usize) -> HeldLock {
        HeldLock::for_test(inst(n))
    }

    fn push(st: &mut ThreadState, e: HeldLock) {
        let n = st.next(e);
        st.push(n);
    }

    /// The keys a fresh stack of these entries would have.
    fn fresh_keys(st: &ThreadState) -> Vec<u64> {
        let mut key = 0;
        st.entries()
            .iter()
            .map(|e| {
                key = e.chain_key_on(key);
                key
            })
            .collect()
    }

    fn keys(st: &ThreadState) -> Vec<u64> {
        st.entries().iter().map(|e| e.chain_key).collect()
    }

    #[test]
    fn push_and_lifo_release_keep_the_top_key() {
        let mut st = ThreadState::new();
        assert_eq!(st.top_key(), 0);
        push(&mut st, entry(1));
        let one = st.top_key();
        push(&mut st, entry(2));
        assert_eq!(keys(&st), fresh_keys(&st));
        assert_eq!(st.top_key(), *keys(&st).last().unwrap());
        st.release_at(1);
        assert_eq!(st.top_key(), one);
        st.release_at(0);
        assert_eq!(st.top_key(), 0);
    }

    #[test]
    fn out_of_order_release_rekeys_the_entries_above() {
        let mut st = ThreadState::new();
        for i in 1..=4 {
            push(&mut st, entry(i));
        }
        st.release_at(1);
        assert_eq!(st.entries().len(), 3);
        assert_eq!(keys(&st), fresh_keys(&st));
        assert_eq!(st.top_key(), *keys(&st).last().unwrap());
        let removed = st.remove(0);
        assert_eq!(removed.instance, inst(1));
        assert_eq!(keys(&st), fresh_keys(&st));
    }

    /// The release of the entry below the top without the general path: only when the top
    /// is not the entry named and the one below is, and nothing is marked; it leaves the
    /// stack (and the record readers see) as `release_at` does.
    #[test]
    fn a_release_below_the_top_is_the_general_release() {
        let mut st = ThreadState::new();
        for i in 1..=3 {
            push(&mut st, entry(i));
        }
        assert!(
            !st.pop_below_top(Find::any(inst(3))),
            "the top: pop_plain's"
        );
        assert!(
            !st.pop_below_top(Find::any(inst(1))),
            "deeper: the general path's"
        );
        assert!(
            !st.pop_below_top(Find::in_mode(inst(2), Mode::Read)),
            "another mode"
        );
        assert!(st.pop_below_top(Find::any(inst(2))));
        assert_eq!(instances(&st), [1, 3]);
        assert_eq!(keys(&st), fresh_keys(&st));
        let r = st.record().expect("a record");
        assert_eq!(shown(r), [1, 3]);
        st.pin(0);
        assert!(
            !st.pop_below_top(Find::any(inst(1))),
            "a mark: the general path's"
        );
        assert!(st.unpin(0));
        assert!(st.pop_below_top(Find::any(inst(1))));
        assert_eq!(instances(&st), [3]);
        assert!(
            !st.pop_below_top(Find::any(inst(3))),
            "one entry: nothing below"
        );
        st.take_all();
        st.give_back_record();
    }

    #[test]
    fn mode_and_class_changes_rekey() {
        let mut st = ThreadState::new();
        push(&mut st, entry(1));
        push(&mut st, entry(2));
        let before = st.top_key();
        st.set_mode(0, Mode::Read);
        assert_ne!(st.top_key(), before);
        assert_eq!(keys(&st), fresh_keys(&st));
        st.set_class(1, ClassId::new(9, 1), 1);
        assert_eq!(st.entry(1).subclass, 1);
        assert_eq!(keys(&st), fresh_keys(&st));
    }

    #[test]
    fn nest_covered_entries_do_not_count_against_the_depth() {
        let mut st = ThreadState::new();
        push(&mut st, entry(1));
        for i in 2..5 {
            push(
                &mut st,
                HeldLock {
                    nest_lock: 1,
                    ..entry(i)
                },
            );
        }
        assert_eq!(st.depth(), 1);
        st.release_at(2);
        assert_eq!(st.depth(), 1);
        st.release_at(0);
        assert_eq!(st.depth(), 0);
        assert_eq!(st.entries().len(), 2);
    }

    #[test]
    fn pins_are_returned_by_the_release_that_drops_them() {
        let mut st = ThreadState::new();
        push(&mut st, entry(1));
        push(&mut st, entry(2));
        st.pin(0);
        st.pin(0);
        assert!(st.unpin(0));
        assert!(!st.unpin(1), "entry 1 has no pin");
        assert_eq!(st.release_at(1).pins, 0);
        assert_eq!(st.release_at(0).pins, 1);
    }

    #[test]
    fn paired_marks_are_returned_by_the_release_or_carried_by_a_removal() {
        let mut st = ThreadState::new();
        for i in 1..=3 {
            push(&mut st, entry(i));
        }
        st.mark_paired(0);
        st.mark_paired(0);
        st.mark_paired(2);
        assert_eq!(
            st.release_at(2),
            Left {
                pins: 0,
                paired: true
            }
        );
        assert!(!st.release_at(1).paired);
        assert!(st.remove(0).paired, "a detached entry keeps its mark");
        push(&mut st, entry(4));
        assert!(!st.release_at(0).paired, "the counter went back to zero");
    }

    #[test]
    fn take_all_and_clear_empty_the_stack() {
        let mut st = ThreadState::new();
        push(
            &mut st,
            HeldLock {
                nest_lock: 7,
                ..entry(1)
            },
        );
        st.pin(0);
        st.cache.insert(42, false);
        assert_eq!(st.take_all().len(), 1);
        assert_eq!((st.top_key(), st.depth()), (0, 0));
        push(&mut st, entry(2));
        st.clear();
        assert!(st.entries().is_empty());
        assert_eq!(st.cache.lookup(42), crate::chain::Hit::Miss);
        // The counters were reset with the stack: a new entry releases cleanly.
        push(&mut st, entry(3));
        assert_eq!(st.release_at(0).pins, 0);
    }

    /// The instances the record shows, bottom first.
    fn shown(r: &'static Record) -> Vec<usize> {
        let snap = r.snapshot(false).expect("the record is owned");
        snap.entries().map(|e| num(e.instance)).collect()
    }

    fn instances(st: &ThreadState) -> Vec<usize> {
        st.entries().iter().map(|e| num(e.instance)).collect()
    }

    #[test]
    fn the_record_is_the_stack_through_growth_and_edits() {
        let mut st = ThreadState::new();
        // Deeper than a new record's array: the stack moves to a larger one.
        for i in 1..=70 {
            push(&mut st, entry(i));
        }
        let r = st.record().expect("a record was claimed at the first push");
        assert_eq!(shown(r), (1..=70).collect::<Vec<_>>());
        assert_eq!(keys(&st), fresh_keys(&st));
        st.release_at(10);
        st.set_mode(3, Mode::Read);
        assert_eq!(st.remove(0).instance, inst(1));
        assert_eq!(shown(r), instances(&st));
        assert_eq!(keys(&st), fresh_keys(&st));
        let snap = r.snapshot(false).unwrap();
        assert_eq!(snap.entries().nth(2).unwrap().mode, Mode::Read);
        while st.entries().len() > 30 {
            st.release_at(st.entries().len() - 1);
        }
        assert_eq!(shown(r), instances(&st));
        st.take_all();
        assert!(shown(r).is_empty());
        assert_eq!(st.top_key(), 0);
        st.give_back_record();
    }

    #[test]
    fn giving_the_record_back_keeps_the_entries_privately() {
        let mut st = ThreadState::new();
        for i in 1..=3 {
            push(&mut st, entry(i));
        }
        st.pin(1);
        let r = st.record().unwrap();
        let before = (keys(&st), st.top_key());
        st.give_back_record();
        assert!(r.snapshot(false).is_none(), "the record is free");
        st.reset_after_exit();
        assert_eq!(instances(&st), [1, 2, 3]);
        assert_eq!((keys(&st), st.top_key()), before);
        // Late mode: no spare room (the fast path never pushes), and no record is claimed.
        assert!(!st.has_room());
        push(&mut st, entry(4));
        st.trim_after_exit();
        assert!(st.record().is_none());
        assert!(!st.has_room());
        assert_eq!(st.release_at(1).pins, 1, "the pin moved with its entry");
        st.trim_after_exit();
        assert_eq!(instances(&st), [1, 3, 4]);
        assert_eq!(keys(&st), fresh_keys(&st));
        st.take_all();
        st.trim_after_exit();
        assert_eq!(st.cap, 0, "an empty late stack keeps no memory");
    }

    #[test]
    fn a_thread_past_the_record_limit_keeps_a_private_stack() {
        let mut st = ThreadState::new();
        // What a failed claim leaves (the table was full).
        st.unclaimable = true;
        for i in 1..=40 {
            push(&mut st, entry(i));
        }
        assert!(st.record().is_none());
        assert_eq!(instances(&st), (1..=40).collect::<Vec<_>>());
        assert_eq!(keys(&st), fresh_keys(&st));
        assert!(
            st.has_room(),
            "private growth doubles: the fast path can push"
        );
        st.release_at(5);
        st.pin(0);
        assert_eq!(keys(&st), fresh_keys(&st));
        assert_eq!(st.remove(0).pin_count, 1);
        assert_eq!(st.entries().len(), 38);
    }

    #[test]
    fn readers_never_see_a_torn_stack() {
        use std::sync::atomic::AtomicBool;
        use std::sync::{mpsc, Arc};
        // Every consistent state: instances strictly rising, each entry's name and class
        // chosen by its instance. A torn copy (a slot from two entries, or a depth from
        // another state) breaks it.
        const NAMES: [&str; 3] = ["a", "bb", "cccc"];
        fn make(i: usize) -> HeldLock {
            HeldLock {
                class: ClassId::new((i % MAX_CLASSES) as u32, 1),
                name: NAMES[i % 3],
                ..entry(i)
            }
        }
        let (tx, rx) = mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        let copies = Arc::new(AtomicU64::new(0));
        let (stop, copied) = (done.clone(), copies.clone());
        let reader = std::thread::spawn(move || {
            let r: &'static Record = rx.recv().unwrap();
            let mut seen = 0u64;
            // Relaxed: a stop flag; the join below orders the rest.
            while !stop.load(Ordering::Relaxed) {
                if let Some(snap) = r.snapshot(false) {
                    let mut last = 0;
                    for e in snap.entries() {
                        let i = num(e.instance);
                        assert!(i > last, "instances rise");
                        assert_eq!(e.class, ClassId::new((i % MAX_CLASSES) as u32, 1));
                        assert_eq!(e.name, NAMES[i % 3]);
                        last = i;
                    }
                    seen += 1;
                    // Relaxed: a progress count for the owner's loop bound.
                    copied.store(seen, Ordering::Relaxed);
                }
            }
            seen
        });
        let mut st = ThreadState::new();
        push(&mut st, make(1));
        tx.send(st.record().unwrap()).unwrap();
        let mut next = 2;
        // At least 20,000 changes, and on until the reader made 1,000 copies while they ran.
        let mut round = 0usize;
        // Relaxed: a progress count (see the reader).
        // (A reader that failed ends the loop too.)
        while (round < 20_000 || copies.load(Ordering::Relaxed) < 1_000) && !reader.is_finished() {
            round += 1;
            match round % 5 {
                // Pushes (the stack grows past the first array now and then).
                0..=2 => {
                    push(&mut st, make(next));
                    next += 1;
                }
                // A LIFO pop.
                3 => {
                    if let Some(top) = st.entries().len().checked_sub(1) {
                        st.release_at(top);
                    }
                }
                // An out-of-order release (entries move down a slot).
                _ => {
                    let n = st.entries().len();
                    if n > 2 {
                        st.release_at(n / 2);
                    }
                }
            }
            if st.entries().len() > 100 {
                st.take_all();
            }
        }
        // Relaxed: see the reader.
        done.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() >= 1_000);
        st.take_all();
        st.give_back_record();
    }
}
