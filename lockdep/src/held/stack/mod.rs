//! A thread's held-lock stack and the bookkeeping that must agree with it.
//!
//! Invariants, kept by the methods below and nowhere else: every entry's chain key is its own
//! key over the entry below it (`HeldLock::chain_key_on`), so the stack's chain key is the top
//! entry's (0 when empty), read from its slot and kept nowhere else, except above a *hole* (an
//! entry released below others, see `ThreadState::release_leaving_hole`): holes exist only
//! between a release and the thread's next other operation on its stack, which closes them
//! first (`ThreadState::close_holes`), and `holes` counts them; `marks` is the sum of the
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
//!
//! This file has the state, its storage and record, the queries and the general push;
//! [`fast`] has what the fast paths do to the stack, [`edit`] every other change.

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

mod edit;
mod fast;

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
    /// The number of holes below the depth (see [`close_holes`](Self::close_holes)): entries
    /// released while entries above them stayed held. While there are any, `room` is 0, so
    /// that every acquisition goes where the holes are closed first.
    holes: usize,
    /// How far the record's sequence counter moved in the write sections that only made or
    /// filled holes (by two each, since the record was claimed): a nested memo takes the
    /// counter less this (see [`nested_seq`](Self::nested_seq)), so that a run of locks
    /// released first-taken-first and taken again in the same order keeps its memos.
    hole_seq: u64,
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
    /// `slot::name_meta(named, name)` with the map's pair tag, as the lock map keeps it made.
    pub name_meta: u64,
}

impl Plain {
    /// Its slot's `meta` word: the acquisition's bits (constants on the fast path) and the
    /// map's name bits, made when the map was.
    #[inline(always)]
    fn meta(&self) -> u64 {
        debug_assert_eq!(
            self.name_meta & !slot::tag_bits(u16::MAX),
            slot::name_meta(self.named, self.name)
        );
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
            tag: slot::tag_of(self.name_meta),
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
            holes: 0,
            hole_seq: 0,
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
                // A private stack has no holes; the nested memos' counter starts anew.
                debug_assert_eq!(self.holes, 0);
                self.hole_seq = 0;
            }
            // The table is full: this thread's stack stays private (not in dumps or other
            // threads' checks), and no later push tries again.
            None => self.unclaimable = true,
        }
    }

    /// Gives the shared record back (thread exit): the entries still held move to a private
    /// array first, as the record's next owner writes its slots.
    pub fn give_back_record(&mut self) {
        self.close_holes();
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
        self.close_holes();
        if let Some(r) = self.record {
            if r.has_mail() {
                self.apply_mail(r);
            }
        }
    }

    /// [`settle`](Self::settle) for a release, which may leave holes (see
    /// [`release_leaving_hole`](Self::release_leaving_hole)) and so keeps those it finds,
    /// unless mail waits (the mail's edits are made on a stack with none).
    #[inline]
    pub fn settle_keeping_holes(&mut self) {
        if let Some(r) = self.record {
            if r.has_mail() {
                self.close_holes();
                self.apply_mail(r);
            }
        }
    }

    /// The record's sequence counter as nested memos take it (see
    /// `Slot::holds_nested_memo`): less its moves by sections that only made or filled holes
    /// (see [`hole_seq`](Self::hole_seq)), which leave every entry's words as they were. It
    /// never decreases while the thread holds the record: every other move of the counter
    /// moves it.
    #[inline(always)]
    fn nested_seq(&self, r: &Record) -> u64 {
        r.seq_owner() - self.hole_seq
    }

    /// Recomputes [`room`](Self::room) from the array, the nest count and the depth limit as
    /// they are now. Every slow path ends with it (see `with_state`); `set_max_depth` sends
    /// every thread's next operation to one.
    #[inline]
    pub(crate) fn refresh_room(&mut self) {
        self.room = if self.holes == 0 {
            self.cap
                .min(crate::settings::max_depth().saturating_add(self.counts.nested() as usize))
        } else {
            // Holes below: no fast-path push (see `holes`).
            0
        };
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

    /// Empties the thread's pair cache if it was filled under another pair epoch than `epoch`
    /// (see `PairCache::sync`), and then forgets every nested memo (see
    /// `Slot::holds_nested_memo`) by moving the record's counter: a memo vouches for an
    /// instance check whose pairs were checked under the old epoch.
    #[inline]
    pub fn sync_pairs(&mut self, epoch: u64) {
        if self.pairs.sync(epoch) {
            if let Some(r) = self.record {
                r.forget_nested_memos();
            }
        }
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
mod tests;
