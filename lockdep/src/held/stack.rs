//! A thread's held-lock stack and the bookkeeping that must agree with it.
//!
//! Invariants, kept by the methods below and nowhere else: `top` is the chain key of the top
//! entry (0 when empty); every entry's `chain_key` is its own key over the entry below it
//! (`HeldLock::chain_key_on`); `marks` is the sum of the entries' pin counts plus the number
//! of entries marked `paired`; `nested` is the number of entries taken under a nest_lock.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::record::{self, Identity, Record};
use super::HeldLock;
use crate::chain::LocalCache;
use crate::class::ClassId;
use crate::mode::Mode;
use crate::pair_cache::PairCache;

/// Everything the validator keeps per thread.
pub(crate) struct ThreadState {
    held: Vec<HeldLock>,
    /// Chain key of the whole stack (the top entry's key, 0 when empty), kept apart so an
    /// acquire does not have to load it through the stack.
    top: u64,
    /// Sum of the held entries' pin counts plus the number of entries marked `paired`, so a
    /// release need not read the entry when nothing is pinned or paired (the usual case).
    marks: u32,
    /// Number of held entries taken under a nest_lock. They do not count against the depth
    /// limit (the kernel folds them into one entry).
    nested: u32,
    /// The chains this thread validated (or found validated) recently.
    pub cache: LocalCache,
    /// The instance pairs this thread checked recently.
    pub pairs: PairCache,
    /// (validator thread number, thread name), filled in when a report first needs it, so
    /// that the thread-local can be const-initialized (no lazy-init check on the fast path).
    identity: OnceCell<(u64, String)>,
    /// The copy of the stack other threads read (claimed at the first push; `None` before,
    /// or past the record limit).
    record: Option<&'static Record>,
    /// No record is to be claimed: the record table was full at the last try, or the thread's
    /// exit check has run (its record was given back; see [`reset_after_exit`]).
    ///
    /// [`reset_after_exit`]: ThreadState::reset_after_exit
    unclaimable: bool,
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

static NEXT_TID: AtomicU64 = AtomicU64::new(1);

impl ThreadState {
    pub(crate) const fn new() -> ThreadState {
        ThreadState {
            held: Vec::new(),
            top: 0,
            marks: 0,
            nested: 0,
            cache: LocalCache::new(),
            pairs: PairCache::new(),
            identity: OnceCell::new(),
            record: None,
            unclaimable: false,
        }
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
        if self.held.is_empty() {
            self.held = Vec::new();
        } else {
            self.held.shrink_to_fit();
        }
    }

    /// The shared record of this stack, if it has one.
    #[inline]
    pub fn record(&self) -> Option<&'static Record> {
        self.record
    }

    /// Claims a shared record and copies the stack into it (the first push of the thread).
    #[cold]
    fn claim_record(&mut self) {
        if self.unclaimable {
            return;
        }
        let (id, name) = self.identity().clone();
        let std_id = std::panic::catch_unwind(|| std::thread::current().id()).ok();
        let identity = Identity {
            id,
            name,
            std_id,
            os_tid: os_tid(),
        };
        self.record = record::claim(identity);
        match self.record {
            Some(r) => r.rewrite(0, &self.held),
            // The table is full: this thread's stack stays private (not in dumps or other
            // threads' checks), and no later push tries again.
            None => self.unclaimable = true,
        }
    }

    /// Gives the shared record back (thread exit), after the stack was emptied.
    pub fn give_back_record(&mut self) {
        if let Some(r) = self.record.take() {
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

    #[cold]
    fn apply_mail(&mut self, r: &'static Record) {
        for m in r.take_mail() {
            while let Some(i) = self.find(m.instance) {
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

    /// The held entries, bottom first.
    #[inline]
    pub fn entries(&self) -> &[HeldLock] {
        &self.held
    }

    /// The chain key of the current stack (0 when empty).
    #[inline]
    pub fn top_key(&self) -> u64 {
        self.top
    }

    /// Index of the topmost entry for this instance.
    #[inline]
    pub fn find(&self, instance: usize) -> Option<usize> {
        self.held.iter().rposition(|h| h.instance == instance)
    }

    /// The depth that counts against the limit: held entries not covered by a nest_lock.
    #[inline]
    pub fn depth(&self) -> usize {
        self.held.len() - self.nested as usize
    }

    /// Prepares `entry` for a push onto the stack as it is now: computes its chain key.
    #[inline]
    pub fn next(&self, mut entry: HeldLock) -> Next {
        entry.chain_key = entry.chain_key_on(self.top);
        Next {
            entry,
            below: self.top,
        }
    }

    /// Pushes an entry made by [`next`](Self::next) on this stack, unchanged since. Always
    /// inlined: it is the fast path's only write (out of line, the entry is spilled and
    /// copied once more).
    #[inline(always)]
    pub fn push(&mut self, next: Next) {
        let i = self.held.len();
        let entry = self.account(next);
        // The shared copy from the entry as it is (in registers), before it moves.
        if let Some(r) = self.record {
            r.pushed(i, &entry);
            self.held.push(entry);
        } else {
            self.held.push(entry);
            self.claim_record();
        }
    }

    /// Whether a push needs no allocation. The fast path pushes only then (with
    /// [`push_in_room`](Self::push_in_room)) and leaves growth to the slow path, so that no
    /// call is made while the new entry's fields are in registers.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.held.len() < self.held.capacity()
    }

    /// [`push`](Self::push) into room that [`has_room`](Self::has_room) found: never
    /// allocates. Panics if there is no room.
    #[inline]
    pub fn push_in_room(&mut self, next: Next) {
        let entry = self.account(next);
        let len = self.held.len();
        // The room came from a `push`, which claimed the record if there is one to claim.
        if let Some(r) = self.record {
            r.pushed(len, &entry);
        }
        self.held.spare_capacity_mut()[0].write(entry);
        // SAFETY: the element at `len` (the first spare slot, within capacity: the indexing
        // above panics otherwise) was just initialized.
        unsafe { self.held.set_len(len + 1) };
    }

    /// The counters' and the top key's share of a push; returns the entry to store.
    #[inline]
    fn account(&mut self, next: Next) -> HeldLock {
        debug_assert_eq!(next.below, self.top, "the stack changed since `next`");
        let Next { entry, .. } = next;
        self.nested += u32::from(entry.nest_lock != 0);
        self.marks += u32::from(entry.pin_count) + u32::from(entry.paired);
        self.top = entry.chain_key;
        entry
    }

    /// The whole of the usual release: pops the top entry if it is `instance`'s and no held
    /// entry carries a mark or a nest_lock; false (and nothing changes) otherwise.
    #[inline(always)]
    pub fn pop_plain(&mut self, instance: usize) -> bool {
        let len = self.held.len();
        // One test of the two counters: anything unusual goes the general way.
        if len == 0 || self.held[len - 1].instance != instance || (self.marks | self.nested) != 0 {
            return false;
        }
        self.held.pop();
        self.top = if len == 1 {
            0
        } else {
            self.held[len - 2].chain_key
        };
        if let Some(r) = self.record {
            r.popped(len - 1);
        }
        true
    }

    /// Bookkeeping for entry `i` leaving the stack; returns its pins and paired mark.
    #[inline]
    fn leave(&mut self, i: usize) -> Left {
        let left = self.take_marks(i);
        if self.nested > 0 && self.held[i].nest_lock != 0 {
            self.nested -= 1;
        }
        left
    }

    /// True if any held entry carries a mark (a pin or a checked instance pair).
    #[inline]
    pub fn any_marked(&self) -> bool {
        self.marks != 0
    }

    /// Drops entry `i` (a release); returns what it carried. Always inlined: it is the whole
    /// of a release's work on the hot path.
    #[inline(always)]
    pub fn release_at(&mut self, i: usize) -> Left {
        let left = self.leave(i);
        if i + 1 == self.held.len() {
            // The usual LIFO case: no chain keys to recompute.
            self.held.pop();
            self.top = self.held.last().map_or(0, |h| h.chain_key);
            if let Some(r) = self.record {
                r.popped(i);
            }
        } else {
            self.held.remove(i);
            self.rekey(i);
        }
        left
    }

    /// Clears entry `i`'s pin count and paired mark and returns them; reads the entry only if
    /// something is pinned or paired.
    #[inline]
    fn take_marks(&mut self, i: usize) -> Left {
        if self.marks == 0 {
            return Left {
                pins: 0,
                paired: false,
            };
        }
        let pins = u32::from(std::mem::take(&mut self.held[i].pin_count));
        let paired = std::mem::take(&mut self.held[i].paired);
        self.marks -= pins + u32::from(paired);
        Left { pins, paired }
    }

    /// Marks entry `i` as the source of a checked instance pair.
    pub fn mark_paired(&mut self, i: usize) {
        if !self.held[i].paired {
            self.held[i].paired = true;
            self.marks += 1;
        }
    }

    /// Removes entry `i` and returns it, recomputing the chain keys of the entries above it
    /// (the kernel re-acquires them in `__lock_release()`; we do not re-validate, because every
    /// dependency among the remaining locks is already implied by the graph).
    pub fn remove(&mut self, i: usize) -> HeldLock {
        let left = self.leave(i);
        let mut h = self.held.remove(i);
        // The removed entry keeps its marks (a detached lock carries them to its new thread).
        h.pin_count = left.pins as u16;
        h.paired = left.paired;
        self.rekey(i);
        h
    }

    /// Changes the class (and subclass) of entry `i` and recomputes the chain keys from it up.
    pub fn set_class(&mut self, i: usize, class: ClassId, subclass: u8) {
        self.held[i].class = class;
        self.held[i].subclass = subclass;
        self.rekey(i);
    }

    /// Changes the mode of entry `i` and recomputes the chain keys from it up.
    pub fn set_mode(&mut self, i: usize, mode: Mode) {
        self.held[i].mode = mode;
        self.rekey(i);
    }

    /// Adds one pin to entry `i`.
    pub fn pin(&mut self, i: usize) {
        if let Some(p) = self.held[i].pin_count.checked_add(1) {
            self.held[i].pin_count = p;
            self.marks += 1;
        }
    }

    /// Removes one pin from entry `i`; false (and nothing changes) if it has none.
    pub fn unpin(&mut self, i: usize) -> bool {
        if self.held[i].pin_count == 0 {
            return false;
        }
        self.held[i].pin_count -= 1;
        self.marks -= 1;
        true
    }

    /// Takes every entry off the stack (thread exit), leaving it empty.
    pub fn take_all(&mut self) -> Vec<HeldLock> {
        self.top = 0;
        self.marks = 0;
        self.nested = 0;
        if let Some(r) = self.record {
            r.rewrite(0, &[]);
        }
        std::mem::take(&mut self.held)
    }

    /// Forgets the stack and the chain cache (the validator's reset).
    pub fn clear(&mut self) {
        self.take_all();
        self.cache.clear();
        self.pairs.clear();
    }

    fn rekey(&mut self, i: usize) {
        let mut key = if i == 0 {
            0
        } else {
            self.held[i - 1].chain_key
        };
        for e in &mut self.held[i..] {
            key = e.chain_key_on(key);
            e.chain_key = key;
        }
        self.top = key;
        // Every change but a push and a LIFO pop ends here: the shared copy follows.
        if let Some(r) = self.record {
            r.rewrite(i, &self.held);
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
    use std::panic::Location;

    fn entry(instance: usize) -> HeldLock {
        HeldLock {
            class: ClassId::new(instance as u32, 1),
            instance,
            name: "L",
            named: true,
            mode: Mode::Exclusive,
            trylock: false,
            subclass: 0,
            nest_lock: 0,
            site: Location::caller(),
            chain_key: 0,
            pin_count: 0,
            paired: false,
        }
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
        assert_eq!(removed.instance, 1);
        assert_eq!(keys(&st), fresh_keys(&st));
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
        assert_eq!(st.entries()[1].subclass, 1);
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
}
