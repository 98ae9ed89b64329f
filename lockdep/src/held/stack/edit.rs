//! Changes to the stack other than the fast paths' pushes and pops: a release anywhere in
//! the stack (a hole left where the entry was, closed before the next operation that is not
//! a release: the entries above then move down with new chain keys), a removal and re-insertion
//! (a guard moved between threads), a new class or mode of a held entry, pins, and the
//! whole stack taken at thread exit or forgotten at a reset. Every change that other threads
//! may see runs in one write section of the record.

use super::{Counts, Left, ThreadState};
use crate::class::ClassId;
use crate::held::record;
use crate::held::{Find, HeldLock};
use crate::mode::Mode;

impl ThreadState {
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

    /// Drops entry `i` (a release) with no hole left: a cut if it is not the top; returns what
    /// it carried. Releases use [`release_leaving_hole`](Self::release_leaving_hole); this is
    /// the stack's tests' plain form of it.
    #[cfg(test)]
    pub fn release_at(&mut self, i: usize) -> Left {
        let left = self.leave(i);
        if i + 1 == self.len() {
            self.pop_top();
        } else {
            self.cut(i);
        }
        left
    }

    /// The release of entry `i` (a release, the one operation that may leave holes): an entry
    /// below the top, in a stack with a shared record, becomes a hole (see
    /// [`close_holes`](Self::close_holes)) in a write section of one store, where a cut would
    /// move every entry above it down a slot with a new chain key; the top entry goes with the
    /// holes right below it. A vector of guards dropped as it is (the first taken released
    /// first) then costs one store per release, not a move of the rest of the stack, and the
    /// slots keep their entries and memos for the run taken again.
    pub fn release_leaving_hole(&mut self, i: usize) -> Left {
        let left = self.leave(i);
        let len = self.len();
        if i + 1 == len {
            self.pop_top();
            if self.holes > 0 {
                self.pop_holes();
            }
        } else if let Some(r) = self.record {
            let even = r.begin();
            self.slot(i).make_hole();
            r.end(even);
            self.hole_seq += 2;
            self.holes += 1;
        } else {
            self.cut(i);
        }
        left
    }

    /// The release of an entry below the top with nothing unusual about the stack (a record,
    /// no mark or nest_lock, no mail, lock_stat off), as [`release_leaving_hole`] makes it,
    /// with no borrow of the state: the release's second try, after the fast pops
    /// (`pop_plain`, `pop_below_top`) and before the general path. One walk down the stack
    /// for the entry, then one store in a write section. False (and nothing changed) if the
    /// entry is not held, is the top, or the stack is not so plain.
    ///
    /// [`release_leaving_hole`]: Self::release_leaving_hole
    #[inline]
    pub fn release_below_plain(&mut self, release: Find) -> bool {
        let Some(r) = self.record else {
            return false;
        };
        if self.counts.any() || r.is_unusual() {
            return false;
        }
        let len = self.len();
        match self.find_release(release) {
            Some(i) if i + 1 < len => {
                let even = r.begin();
                self.slot(i).make_hole();
                r.end(even);
                self.hole_seq += 2;
                self.holes += 1;
                // No fast-path push until the holes are closed (see `refresh_room`).
                self.room = 0;
                true
            }
            _ => false,
        }
    }

    /// Pops the holes on top of the stack (after a pop: the entries below the one released
    /// may be holes), filling them: the slots are then left above the stack as by a pop.
    fn pop_holes(&mut self) {
        let len = self.len();
        let below = self.slots()[..len]
            .iter()
            .rposition(|s| !s.is_hole())
            .map_or(0, |i| i + 1);
        if below < len {
            self.fill_holes_above(below, len);
        }
    }

    /// Drops the holes `from..len` (all of them holes, the top of the stack) in one write
    /// section: the depth becomes `from`, and each slot is filled (see `Slot::fill_hole`).
    /// No entry's words change, so the section counts in [`hole_seq`](Self::hole_seq).
    fn fill_holes_above(&mut self, from: usize, len: usize) {
        let r = self.record.expect("holes are made only in a shared record");
        let even = r.begin();
        for s in &self.slots()[from..len] {
            s.fill_hole();
        }
        r.store_len_in_section(record::with_depth(r.len_word(), from));
        r.end(even);
        self.hole_seq += 2;
        self.holes -= len - from;
    }

    /// Closes the holes below the depth (see [`release_leaving_hole`](Self::release_leaving_hole)),
    /// so that the stack holds exactly the locks held: the entries above the lowest hole move
    /// down over the holes with new chain keys (each key over the stack as it is: a hole's lock
    /// is not held, and the chain keys above it were made with it), in one write section.
    /// Holes that are only on top are popped, with no entry moved. Every operation but a
    /// release does this first (see `settle`): the holes are invisible outside a release's
    /// own walk. One load when there are none.
    #[inline]
    pub fn close_holes(&mut self) {
        if self.holes > 0 {
            self.close_holes_now();
        }
    }

    /// The acquisition's general path's first step when holes are left (an ordered run
    /// released first-taken-first, then taken again; a hand-over-hand step): closes them as
    /// [`close_holes`](Self::close_holes) does and recomputes the room, so that the fast
    /// path may push. With no borrow of the state: the caller holds none (see
    /// `thread::state_fast`), and mail, if any, waits for the next `settle` (closing holes
    /// first is what `settle` does too). Returns whether there were holes.
    #[inline]
    pub fn close_holes_for_push(&mut self) -> bool {
        if self.holes == 0 {
            return false;
        }
        self.close_holes_now();
        self.refresh_room();
        true
    }

    #[cold]
    fn close_holes_now(&mut self) {
        let len = self.len();
        let slots = &self.slots()[..len];
        let first = slots
            .iter()
            .position(|s| s.is_hole())
            .expect("the holes are counted");
        if slots[first..].iter().all(|s| s.is_hole()) {
            self.fill_holes_above(first, len);
            return;
        }
        let r = self.record.expect("holes are made only in a shared record");
        let even = r.begin();
        let mut key = if first == 0 {
            0
        } else {
            slots[first - 1].chain_key()
        };
        let mut to = first;
        for from in first..len {
            if !slots[from].is_hole() {
                key = slots[to].take_rekeyed(&slots[from], key);
                to += 1;
            }
        }
        // Above the new depth: copies of entries that moved down, and holes. Neither is held;
        // as a cut leaves its top slot, without marks and with no hole bit.
        for s in &slots[to..len] {
            s.vacate();
            s.fill_hole();
        }
        r.store_len_in_section(record::with_depth(r.len_word(), to));
        r.end(even);
        self.holes = 0;
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

    /// Marks entry `i` as one whose acquisition did not record its dependencies (see
    /// [`Slot::set_unrecorded`](crate::held::slot::Slot::set_unrecorded)).
    pub fn mark_unrecorded(&mut self, i: usize) {
        self.slot(i).set_unrecorded();
        // The mark is part of the chain key: the entry's, and so every one above it.
        self.rekey(i);
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
    /// The entry is marked unrecorded (see [`mark_unrecorded`](Self::mark_unrecorded)): no
    /// dependency from the locks below it into its new class was recorded, so a walk of the
    /// held locks must not take them as reaching a later lock through it.
    pub fn set_class(&mut self, i: usize, class: ClassId, subclass: u8) {
        let mut h = self.entry(i);
        h.class = class;
        h.subclass = subclass;
        self.edit(|st| {
            st.slot(i).write(&h);
            st.slot(i).set_unrecorded();
            st.rekey(i);
        });
    }

    /// Changes the mode of entry `i` and recomputes the chain keys from it up. An unrecorded
    /// entry stays so (its dependencies are no more recorded in another mode).
    pub fn set_mode(&mut self, i: usize, mode: Mode) {
        let mut h = self.entry(i);
        h.mode = mode;
        self.edit(|st| {
            let unrecorded = st.slot(i).is_unrecorded();
            st.slot(i).write(&h);
            if unrecorded {
                st.slot(i).set_unrecorded();
            }
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
        self.close_holes();
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
