//! The fast paths' share of the stack: the checks that let a push or a pop go without a call
//! (a record, room, nothing unusual), the pushes of a chain head, a memo hit and a cached
//! chain, and the pops of the top entry and of the one just below it. They are inlined
//! into lockdep's fast paths, and read the stack with no bounds check.

use super::{rewrite, FastTop, Plain, ThreadState};
use crate::class::ClassId;
use crate::held::record::{self, Record};
use crate::held::slot::{Find, Slot, Words};
use crate::held::HeldLock;

impl ThreadState {
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
    /// instances were just checked: the same push, but with a nested memo, not a memo (a memo
    /// hit would skip the instance check the next time; a nested memo hit skips it only while
    /// the stack below shows the same instances, see [`Slot::holds_nested_memo`]).
    #[inline(always)]
    pub fn push_fast_checked(&mut self, top: FastTop, key: u64, p: &Plain) {
        self.push_plain(top, key, p, None);
    }

    /// The push of an entry on a marked chain whose chain key `key` the caller found valid in
    /// the chain cache, if the slot's nested memo vouches for its instance check (see
    /// [`Slot::holds_nested_memo`]; the caller checked the pair cache's epoch): then only the
    /// depth is stored. A shard of a sharded map taken again in the same order as before, say.
    /// False (and nothing changed) otherwise.
    #[inline(always)]
    pub fn push_nested_memo(&mut self, top: FastTop, key: u64, p: &Plain) -> bool {
        let FastTop { r, word } = top;
        let slot = self.top_slot_in_room(record::depth_of(word));
        if !slot.holds_nested_memo(self.nested_seq(r), key, &p.words()) {
            return false;
        }
        r.store_len(record::pushed_word(word));
        true
    }

    /// The pushes above: the slot rewritten unless it holds the entry, then its memo set over
    /// the chain key `memo` below, or (`None`) its nested memo set with the record's counter
    /// as the rewrite left it, then the depth stored.
    #[inline(always)]
    fn push_plain(&mut self, top: FastTop, key: u64, p: &Plain, memo: Option<u64>) {
        let FastTop { r, word } = top;
        let slot = self.top_slot_in_room(record::depth_of(word));
        if !slot.holds_fast(key, &p.words()) {
            rewrite(slot, r, &Words::plain(&p.words(), p.class, key));
        }
        match memo {
            Some(below) => slot.set_memo(below),
            None => slot.set_nested_memo(self.nested_seq(r)),
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
    /// (a record, no mark or nest_lock on the stack, nothing unusual) and no hole below (the
    /// release of a run first taken first goes on making holes: see
    /// `ThreadState::release_leaving_hole`), then the top moves
    /// down a slot with its new chain key, as a cut (see `ThreadState::remove`) does: the
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
            // Last: tested before the slots' compares, this load changed the inlined
            // release's layout (+0.2 ns a lock on rows that never get here).
            || self.holes != 0
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

    /// The thread's shared record, if it has one and nothing unusual waits (mail, whose
    /// edits a borrow of the state applies first: see `settle`): for the condvar's sleep and
    /// wake-up stamps, which need no borrow then.
    #[inline]
    pub fn plain_record(&self) -> Option<&'static Record> {
        self.record.filter(|r| !r.is_unusual())
    }

    /// The subclass and nest lock's instance (0 for none) of the entry `find` names (the one
    /// a release would take, see `find_release`), for a release-and-relock
    /// (`crate::relock_of`), with no borrow of the state: `None` where the general path must
    /// answer (no record, or the record is unusual: mail that may take entries off comes
    /// first), else the entry's facts if one matches.
    #[inline]
    pub fn relock_facts(&self, find: Find) -> Option<Option<(u8, usize)>> {
        self.plain_record()?;
        Some(self.find_release(find).map(|i| {
            let s = self.top_slot(i);
            (s.subclass(), s.nest_lock())
        }))
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
}
