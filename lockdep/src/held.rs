//! The per-thread held-lock stack (the kernel's `task_struct::held_locks[]`).

use std::cell::{OnceCell, RefCell};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::chain::{self, LocalCache};
use crate::types::{ClassId, Mode};

/// One entry of a thread's held-lock stack (the kernel's `struct held_lock`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeldLock {
    pub class: ClassId,
    /// Address of the lock map: the lock instance.
    pub instance: usize,
    pub name: &'static str,
    pub mode: Mode,
    pub trylock: bool,
    pub subclass: u8,
    /// Instance address of the nest_lock this acquisition was made under, or 0.
    pub nest_lock: usize,
    pub site: &'static Location<'static>,
    /// Chain key of the stack up to and including this entry.
    pub chain_key: u64,
    /// `lockdep_pin_lock()` count; releasing a pinned lock is reported.
    pub pin_count: u32,
}

/// Everything the validator keeps per thread.
pub(crate) struct ThreadState {
    pub held: Vec<HeldLock>,
    /// Chain key of the whole stack (the top entry's key, 0 when empty), kept apart so an
    /// acquire does not have to load it through the stack.
    pub top: u64,
    pub cache: LocalCache,
    /// Set once the depth limit was reported for this thread (reported once, never silent).
    pub depth_reported: bool,
    /// Sum of the held entries' pin counts, so a release need not read the entry when nothing
    /// is pinned (the usual case).
    pub pins: u32,
    /// Number of held entries taken under a nest_lock. They do not count against the depth
    /// limit (the kernel folds them into one entry).
    pub nested: u32,
    /// (validator thread number, thread name), filled in when a report first needs it, so
    /// that the thread-local can be const-initialized (no lazy-init check on the fast path).
    identity: OnceCell<(u64, String)>,
}

static NEXT_TID: AtomicU64 = AtomicU64::new(1);

impl ThreadState {
    const fn new() -> ThreadState {
        ThreadState {
            held: Vec::new(),
            top: 0,
            cache: LocalCache::new(),
            depth_reported: false,
            pins: 0,
            nested: 0,
            identity: OnceCell::new(),
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

    /// Pushes an entry, computing its chain key from the current top.
    pub fn push(&mut self, mut h: HeldLock) {
        h.chain_key = chain::mix(self.top_key(), h.class, h.mode, h.trylock, h.nest_lock != 0);
        self.nested += u32::from(h.nest_lock != 0);
        self.top = h.chain_key;
        self.held.push(h);
    }

    /// The depth that counts against the limit: held entries not covered by a nest_lock.
    #[inline]
    pub fn depth(&self) -> usize {
        self.held.len() - self.nested as usize
    }

    /// Bookkeeping for entry `i` leaving the stack; returns its pin count.
    #[inline]
    fn leave(&mut self, i: usize) -> u32 {
        let pins = self.take_pins(i);
        if self.nested > 0 && self.held[i].nest_lock != 0 {
            self.nested -= 1;
        }
        pins
    }

    /// Drops entry `i` (a release); returns the pin count it had.
    #[inline]
    pub fn release_at(&mut self, i: usize) -> u32 {
        let pins = self.leave(i);
        if i + 1 == self.held.len() {
            // The usual LIFO case: no chain keys to recompute.
            self.held.pop();
            self.top = self.held.last().map_or(0, |h| h.chain_key);
        } else {
            self.held.remove(i);
            self.rekey(i);
        }
        pins
    }

    /// Clears entry `i`'s pin count and returns it; reads the entry only if something is
    /// pinned.
    #[inline]
    fn take_pins(&mut self, i: usize) -> u32 {
        if self.pins == 0 {
            return 0;
        }
        let p = std::mem::take(&mut self.held[i].pin_count);
        self.pins -= p;
        p
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

    fn rekey(&mut self, i: usize) {
        let mut key = if i == 0 {
            0
        } else {
            self.held[i - 1].chain_key
        };
        for e in &mut self.held[i..] {
            key = chain::mix(key, e.class, e.mode, e.trylock, e.nest_lock != 0);
            e.chain_key = key;
        }
        self.top = key;
    }

    /// Removes entry `i` and recomputes the chain keys of the entries above it (the kernel
    /// re-acquires them in `__lock_release()`; we do not re-validate, because every
    /// dependency among the remaining locks is already implied by the graph).
    pub fn remove(&mut self, i: usize) -> HeldLock {
        self.leave(i);
        let h = self.held.remove(i);
        self.rekey(i);
        h
    }
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.held);
        crate::release::thread_exit(self, held);
    }
}

thread_local! {
    static STATE: RefCell<ThreadState> = const { RefCell::new(ThreadState::new()) };
}

/// Runs `f` on this thread's state. Returns `None` (and tracks nothing) while the thread's
/// validator state is being destroyed at thread exit, or if the state is already borrowed
/// (the validator never calls out while it holds the borrow, so that would be a signal
/// handler re-entering it).
#[inline]
pub(crate) fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    STATE
        .try_with(|s| s.try_borrow_mut().ok().map(|mut s| f(&mut s)))
        .ok()
        .flatten()
}
