//! The shared held-lock record: one holder's held-lock stack, stored where any thread can
//! read it (the kernel walks every task's `held_locks[]` in `debug_show_all_locks()`; a
//! userspace process has no scheduler lock to stop the world with, so readers retry instead).
//!
//! # Design
//!
//! - **One record per holder**, in a process-wide table of records that are never freed: a
//!   thread claims a free record at its first acquisition and gives it back at exit, and a
//!   record's [`Holder`] (its table index and a generation bumped at every claim) names one
//!   holding, so a token of a thread that exited never reaches the record's next owner.
//! - **The record's slots are the stack**, not a copy of it: the owner's
//!   [`ThreadState`](super::ThreadState) pushes into them and pops from them, and keeps no
//!   other array while it holds the record, so a push stores each word of an entry once (see
//!   [`slot`](super::slot): every field an atomic, relaxed stores that compile to plain
//!   ones). The array is never freed: a deeper stack moves to a larger one (the old one
//!   stays for readers that may still copy from it), and the record keeps the last one for
//!   its next owner.
//! - **The owner writes, others read**, under a sequence counter (a seqlock, as the
//!   kernel's `seqcount_t`): a push moves the counter once and then writes the slot and the
//!   depth (the slots below do not change, so only a reader that still counts the slot from
//!   before a pop can see it change, and the counter tells it); a LIFO pop is one store of
//!   the depth; any other change (an out-of-order release, a mode change, a move to a larger
//!   array) is a write section with the counter odd. A reader copies the slots' shown fields
//!   and retries if the counter was odd or moved. The header with the counter, the depth and
//!   the wait is on the owner's own cache line.
//! - **Requests go the other way through a mailbox**: another thread that must change the
//!   stack (a guard released on another thread, a lock freed while this one holds it) posts
//!   the instance under the mailbox mutex and raises a flag; the owner applies the mail the
//!   next time it touches its stack (one relaxed load of a flag on its own line).
//! - **The wait**: while the owner blocks on a contended lock, the header names the entry it
//!   waits for and since when; the watchdog and the dump read it like the slots. While the
//!   owner sleeps in a condvar wait, the same fields name the entry of the mutex it released
//!   (on the stack still, validated for the re-lock, but not held) and the record also names
//!   the condvar: a distinct state, "sleeping on a condvar to re-lock this mutex", which the
//!   dump shows as such and the watchdog neither follows nor judges.
//! - **Async tasks, later**: nothing here is tied to an OS thread but the claim. A task that
//!   holds locks across polls will own a record of its own, and the thread-local "current
//!   record" that the stack operations write to will be swapped by the task's future around
//!   each poll (the task's stack travels with the task from worker to worker, and a worker's
//!   dump shows the task it is polling). The owner-writes rule still holds: one poll runs on
//!   one thread at a time.

use std::panic::Location;
use std::sync::atomic::{fence, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::slot::{Find, RawSlot, Slot};
use crate::class::ClassId;
use crate::fork::{self, Participant, Rank};
use crate::mode::Mode;

/// The most records (threads holding locks at one time, as records are reused). Threads past
/// it are validated as usual but are invisible to other threads' checks and to the dump.
pub(crate) const MAX_RECORDS: usize = 4096;
/// Bits of [`Record::len`] that hold the depth.
const DEPTH_BITS: u32 = 32;
const DEPTH_MASK: u64 = (1 << DEPTH_BITS) - 1;

/// Slots of a new record; a deeper stack moves to an array twice as large (see
/// [`Record::grow`]).
const FIRST_SLOTS: usize = 32;

/// A record's slots. Never freed: a reader may still copy from an array its owner has
/// outgrown, and the record keeps its last array for its next owner (a record's arrays add up
/// to less than twice its largest).
struct Array {
    slots: Box<[Slot]>,
}

impl Array {
    fn leak(cap: usize) -> &'static Array {
        Box::leak(Box::new(Array {
            slots: (0..cap).map(|_| Slot::default()).collect(),
        }))
    }
}

/// Who a record's owner is, for reports and dumps. Written at claim, under its mutex.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    /// The validator's thread number.
    pub id: u64,
    pub name: String,
    pub std_id: Option<std::thread::ThreadId>,
    /// The kernel's thread id, where there is one.
    pub os_tid: Option<u64>,
}

/// A request from another thread to take entries of `instance` off the owner's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mail {
    pub instance: usize,
    /// The mode of the entry to take (a guard's, which knows it), or `None` for any.
    pub mode: Option<Mode>,
    /// Every entry of the instance (its lock was freed) rather than the topmost one (a guard
    /// released on another thread).
    pub all: bool,
    /// Not a release: the entry stays, held in this mode from now on (a guard that moved to
    /// another thread was downgraded or upgraded there).
    pub becomes: Option<Mode>,
    /// Neither: forget every cached chain (the instance is 0). The key of a held lock was
    /// unregistered: chains over the held entry, whose class is dead now, were validated
    /// while it was live, and the same keys now need another validation.
    pub forget_chains: bool,
}

impl Mail {
    /// The mail that asks the owner to forget its cached chains.
    pub const FORGET_CHAINS: Mail = Mail {
        instance: 0,
        mode: None,
        all: false,
        becomes: None,
        forget_chains: true,
    };

    /// Which entry the mail takes (the topmost of the instance in its mode, else in any).
    pub fn find(&self) -> Find {
        Find::of(self.instance, self.mode)
    }
}

/// A record: the header the owner writes (one cache line: `repr(C)` keeps the fields in this
/// order, the owner's first), its slots, and the mailbox.
#[repr(C, align(64))]
pub(crate) struct Record {
    // ---- the owner's line
    seq: AtomicU64,
    /// The depth (low [`DEPTH_BITS`] bits) and the number of pushes so far (the rest, which
    /// wraps): a watcher sees the owner make progress even when its stack looks the same.
    len: AtomicU64,
    /// The instance of the entry the owner blocks on, 0 when it does not wait.
    wait_instance: AtomicUsize,
    /// When the wait started, in nanoseconds of [`now_ns`].
    wait_since: AtomicU64,
    /// Counts the owner's waits, so that a watcher tells a new wait from an old one.
    wait_count: AtomicU64,
    /// Why the owner's fast paths must give way to the slow path: [`MAIL`] (mail is waiting;
    /// set by others, cleared by the owner) and [`SLOW`] (lock_stat is on, or the chain cache
    /// is off; set and cleared by [`set_slow_all`]). Zero, the usual case, costs the fast paths one load of a line
    /// they read anyway.
    unusual: AtomicU8,
    // ---- read-mostly
    index: u32,
    /// Bumped at every claim; odd while owned.
    generation: AtomicU32,
    /// The slots: the owner's stack itself (its only storage while it holds the record).
    array: AtomicPtr<Array>,
    mail: Mutex<Vec<Mail>>,
    identity: Mutex<Option<Identity>>,
    /// The address of the condvar the owner sleeps on while its wait is a condvar wait's
    /// sleep (`wait_instance` is then the mutex it will re-lock), 0 otherwise (a lock wait,
    /// or none). Written with the wait fields, in their write sections; off the owner's line,
    /// as only the condvar path writes it.
    wait_condvar: AtomicUsize,
    /// The sleeping condvar's name (its map's name, or its kind) and construction site (null
    /// if it has none), for the dump; written with `wait_condvar`.
    wait_condvar_name: AtomicPtr<u8>,
    wait_condvar_name_len: AtomicUsize,
    wait_condvar_site: AtomicPtr<Location<'static>>,
}

/// Who a condvar is, for a sleep in its wait (see [`Record::condvar_sleep`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CondvarId {
    /// Its address.
    pub addr: usize,
    /// Its name, or its kind.
    pub name: &'static str,
    /// Where it was made, if known.
    pub site: Option<&'static Location<'static>>,
}

/// A token for one holding of a held-lock record (one thread's, from its first acquisition to
/// its exit): the record's index and its generation then. `Copy`, one word (also inside an
/// `Option`), `Send`: it may be handed to another thread (a guard's home, see
/// [`release_from`](crate::release_from)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Holder(std::num::NonZeroU64);

impl Holder {
    /// The record and the generation it names.
    fn parts(self) -> (usize, u32) {
        let v = self.0.get();
        ((v & 0xffff_ffff) as usize, (v >> 32) as u32)
    }

    /// The token of record `index` in its holding `generation` (odd, so never zero).
    fn new(index: u32, generation: u32) -> Holder {
        let v = u64::from(generation | 1) << 32 | u64::from(index);
        Holder(std::num::NonZeroU64::new(v).expect("the generation is odd"))
    }
}

static TABLE: [AtomicPtr<Record>; MAX_RECORDS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_RECORDS];
/// Records created so far (the used prefix of `TABLE`).
static CREATED: AtomicUsize = AtomicUsize::new(0);
/// Records given back, ready to be claimed again.
static FREE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// Serializes record creation (rare: once per new concurrent thread) and holds the slow-path
/// bit new records get (see [`set_slow_all`]).
static CREATE: Mutex<bool> = Mutex::new(false);

thread_local! {
    /// The calling thread's record, for the fork handlers (0 if none).
    static MINE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Taken around `fork()`: the table's mutexes and the forking thread's own record's, so
/// that no other thread is inside one at the fork. In the child, the records of the parent's
/// other threads, which do not exist there, are retired (left out of the table's free list
/// and never claimed again: one record per such thread).
static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork_child,
};

fn fork_prepare() -> Box<dyn std::any::Any> {
    let free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    let create = CREATE.lock().unwrap_or_else(|e| e.into_inner());
    let mine = MINE.try_with(|m| m.get()).unwrap_or(0);
    let own = (mine != 0).then(|| {
        // SAFETY: `MINE` holds the address of a leaked record.
        let r: &'static Record = unsafe { &*(mine as *const Record) };
        (
            r.mail.lock().unwrap_or_else(|e| e.into_inner()),
            r.identity.lock().unwrap_or_else(|e| e.into_inner()),
        )
    });
    Box::new((free, create, own))
}

fn fork_child() {
    let mine = MINE.try_with(|m| m.get()).unwrap_or(0);
    for r in all() {
        if std::ptr::from_ref(r).addr() != mine && !r.generation().is_multiple_of(2) {
            // Relaxed: the child has one thread.
            r.len.store(0, Ordering::Relaxed);
            r.wait_instance.store(0, Ordering::Relaxed);
            r.wait_condvar.store(0, Ordering::Relaxed);
            // Release: as in `give_back`; the record is never handed out again.
            r.generation.fetch_add(1, Ordering::Release);
        }
    }
}

/// The clock of waits: nanoseconds of the monotonic clock (`CLOCK_MONOTONIC`, which
/// `std::time::Instant` reads too) since the first call of this or [`now_coarse_ns`].
pub(crate) fn now_ns() -> u64 {
    since_epoch(monotonic_ns(libc::CLOCK_MONOTONIC))
}

/// [`now_ns`] from the kernel's coarse copy of the monotonic clock (Linux's
/// `CLOCK_MONOTONIC_COARSE`: the time of the last timer tick, read with no time-stamp counter;
/// 9 ns against 25 for the fine clock on a 2-vCPU KVM guest, see BENCHMARKS.md), for a stamp
/// that only a report's text reads: at most one tick (1 to 10 ms, the kernel's `HZ`) earlier
/// than `now_ns` would say, never later. Elsewhere the fine clock.
pub(crate) fn now_coarse_ns() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let clock = libc::CLOCK_MONOTONIC_COARSE;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let clock = libc::CLOCK_MONOTONIC;
    since_epoch(monotonic_ns(clock))
}

/// `clock`'s time in nanoseconds.
fn monotonic_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the monotonic clocks exist on every
    // supported target, so the call cannot fail (and `ts` stays 0 if it did).
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// `t` (monotonic nanoseconds) less the clock's first reading in this process, 0 if earlier
/// (a coarse reading just after the first fine one).
fn since_epoch(t: u64) -> u64 {
    static EPOCH: OnceLock<u64> = OnceLock::new();
    t.saturating_sub(*EPOCH.get_or_init(|| monotonic_ns(libc::CLOCK_MONOTONIC)))
}

/// Every record created so far (owned or free).
pub(crate) fn all() -> impl Iterator<Item = &'static Record> {
    // Acquire: pairs with the Release store in `claim`, so a counted record is published.
    let n = CREATED.load(Ordering::Acquire);
    (0..n).filter_map(|i| {
        // Acquire: pairs with the Release store in `claim` (the record's fields).
        let p = TABLE[i].load(Ordering::Acquire);
        // SAFETY: a published record is leaked: it lives for the rest of the process.
        (!p.is_null()).then(|| unsafe { &*p })
    })
}

/// The record `holder` names, if that holding is still the current one.
pub(crate) fn find(holder: Holder) -> Option<&'static Record> {
    let (i, generation) = holder.parts();
    if i >= MAX_RECORDS {
        return None;
    }
    // Acquire: pairs with the Release store in `claim`.
    let p = TABLE[i].load(Ordering::Acquire);
    if p.is_null() {
        return None;
    }
    // SAFETY: a published record is leaked: it lives for the rest of the process.
    let r = unsafe { &*p };
    (r.generation() == generation).then_some(r)
}

/// [`Record::unusual`]'s bit: mail is waiting.
const MAIL: u8 = 1;
/// [`Record::unusual`]'s bit: the slow paths must run (lock_stat is on, and its hooks run on
/// the slow paths only; or the chain cache is off, and every acquisition is validated).
const SLOW: u8 = 2;

/// Runs `flip`, which changes a switch the slow paths read (lock_stat's, the chain cache's)
/// and returns whether any switch now needs the slow paths, and gives every record, and every
/// record created from now on, the bit [`SLOW`] accordingly. Both under `CREATE`, which record
/// creation holds too, so however calls race, the switches and every record's bit end
/// consistent. Thread-safe.
pub(crate) fn set_slow_all(flip: impl FnOnce() -> bool) {
    let mut slow = CREATE.lock().unwrap_or_else(|e| e.into_inner());
    let on = flip();
    *slow = on;
    for r in all() {
        // Relaxed: a hint for the owner's fast path, like the mail bit; an operation racing
        // with the switch takes the fast path or the slow one, and either is correct.
        if on {
            r.unusual.fetch_or(SLOW, Ordering::Relaxed);
        } else {
            r.unusual.fetch_and(!SLOW, Ordering::Relaxed);
        }
    }
}

/// Claims a record for the calling thread (`None` past [`MAX_RECORDS`]).
pub(crate) fn claim(identity: Identity) -> Option<&'static Record> {
    // A thread with a record checks class liveness the sealed way (the fast path).
    crate::class::generation::seal();
    fork::join(Rank::Records, &FORK);
    let reused = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let r: &'static Record = match reused {
        Some(i) => {
            // Acquire: pairs with the Release store below that published it.
            let p = TABLE[i as usize].load(Ordering::Acquire);
            // SAFETY: a published record is leaked.
            unsafe { &*p }
        }
        None => {
            let slow_on = CREATE.lock().unwrap_or_else(|e| e.into_inner());
            // Relaxed: creation is serialized by `CREATE`.
            let i = CREATED.load(Ordering::Relaxed);
            if i == MAX_RECORDS {
                return None;
            }
            // The bit `set_slow_all` last gave every record (under the same mutex).
            let slow = if *slow_on { SLOW } else { 0 };
            let r: &'static Record = Box::leak(Box::new(Record {
                seq: AtomicU64::new(0),
                len: AtomicU64::new(0),
                wait_instance: AtomicUsize::new(0),
                wait_since: AtomicU64::new(0),
                wait_count: AtomicU64::new(0),
                unusual: AtomicU8::new(slow),
                index: i as u32,
                generation: AtomicU32::new(0),
                array: AtomicPtr::new(std::ptr::from_ref(Array::leak(FIRST_SLOTS)).cast_mut()),
                mail: Mutex::new(Vec::new()),
                identity: Mutex::new(None),
                wait_condvar: AtomicUsize::new(0),
                wait_condvar_name: AtomicPtr::new(std::ptr::null_mut()),
                wait_condvar_name_len: AtomicUsize::new(0),
                wait_condvar_site: AtomicPtr::new(std::ptr::null_mut()),
            }));
            // Release: publishes the record's fields to readers of the table.
            TABLE[i].store(std::ptr::from_ref(r).cast_mut(), Ordering::Release);
            // Release: readers that see the count see the table entry.
            CREATED.store(i + 1, Ordering::Release);
            r
        }
    };
    *r.identity.lock().unwrap_or_else(|e| e.into_inner()) = Some(identity);
    r.mail.lock().unwrap_or_else(|e| e.into_inner()).clear();
    // Relaxed: the record is not owned by anyone (its generation is even) and owned by us from
    // here; readers check the generation again after reading the identity under its mutex.
    r.len.store(0, Ordering::Relaxed);
    // The last owner's nested memos, left in the slots, are not ours to trust.
    r.forget_nested_memos();
    r.wait_instance.store(0, Ordering::Relaxed);
    r.wait_condvar.store(0, Ordering::Relaxed);
    // Relaxed: as above; the SLOW bit stays as `set_slow_all` left it.
    r.unusual.fetch_and(!MAIL, Ordering::Relaxed);
    // Release: a reader that sees the odd generation sees the reset fields above.
    r.generation.fetch_add(1, Ordering::Release);
    let _ = MINE.try_with(|m| m.set(std::ptr::from_ref(r).addr()));
    Some(r)
}

impl Record {
    /// The token of the current holding.
    pub(crate) fn holder(&self) -> Holder {
        Holder::new(self.index, self.generation())
    }

    fn generation(&self) -> u32 {
        // Acquire: pairs with the Release increment in `claim`/`give_back`.
        self.generation.load(Ordering::Acquire)
    }

    /// The owner's identity (`None` for a free record).
    pub(crate) fn identity(&self) -> Option<Identity> {
        self.identity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Gives the record back (the owner's thread exit). Its stack must be empty.
    pub(crate) fn give_back(&'static self) {
        // Relaxed load: the owner's own word.
        self.store_len(with_depth(self.len.load(Ordering::Relaxed), 0));
        self.wait_done();
        *self.identity.lock().unwrap_or_else(|e| e.into_inner()) = None;
        // Release: pairs with the Acquire loads of readers; the record is free from here.
        self.generation.fetch_add(1, Ordering::Release);
        let _ = MINE.try_with(|m| m.set(0));
        FREE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.index);
    }

    /// The slots, for the owner. A reused record comes with the array its last owner grew.
    #[inline]
    pub(crate) fn slots(&self) -> &'static [Slot] {
        // Acquire: pairs with the Release store in `grow` (and the one at creation), so the
        // array's slots are initialized; the owner of a reused record is ordered after the
        // last owner's stores by the free list's mutex as well.
        let p = self.array.load(Ordering::Acquire);
        // SAFETY: arrays are leaked with their record and never freed.
        unsafe { &(*p).slots }
    }

    /// The owner's stack outgrew the slots: moves its `len` entries to a new array of `cap`
    /// slots, in a write section, and returns it. The old array stays (a reader may be
    /// copying from it; its counter then tells it to retry).
    #[cold]
    pub(crate) fn grow(&self, len: usize, cap: usize) -> &'static [Slot] {
        let old = self.slots();
        let new = Array::leak(cap);
        let even = self.begin();
        for (to, from) in new.slots.iter().zip(&old[..len]) {
            to.copy_from(from);
        }
        // Release: a reader that finds the new array sees its slots initialized and copied.
        self.array
            .store(std::ptr::from_ref(new).cast_mut(), Ordering::Release);
        self.end(even);
        &new.slots
    }

    /// Opens a write section (the counter becomes odd): every change to shown fields but a
    /// push goes inside one. Returns the value [`end`](Self::end) closes it with.
    #[inline]
    pub(crate) fn begin(&self) -> u64 {
        // Relaxed: only the owner writes the counter.
        let s = self.seq.load(Ordering::Relaxed);
        // Relaxed, then the Release fence: a reader that sees a slot store below sees this
        // odd value (or a later one) on its second load of the counter.
        self.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        s + 2
    }

    /// Closes a write section opened by [`begin`](Self::begin).
    #[inline]
    pub(crate) fn end(&self, even: u64) {
        // Release: a reader that sees the even value sees every store of the section.
        self.seq.store(even, Ordering::Release);
    }

    /// Before the owner stores the shown fields of a pushed entry into slot `i` (the hot
    /// path: then the slot, then [`store_len`](Self::store_len)). Slots below do not change,
    /// so no write section is needed for them; slot `i` may still be read by a reader that
    /// saw a greater depth before a pop, so the counter moves (by two: it stays even) before
    /// the slot is written, and that reader retries. A push that finds the slot already
    /// showing its entry (the same lock re-taken at the same depth, the usual case in a loop)
    /// skips this and the shown stores: a reader of the slot cannot see a change.
    #[inline(always)]
    pub(crate) fn will_push(&self) {
        // Relaxed: only the owner writes the counter.
        let s = self.seq.load(Ordering::Relaxed);
        // Release: a reader whose first load sees the new value sees the pops before it (the
        // depth it reads is at most `i`, or `i + 1` with this slot complete). The Release
        // fence: a reader that sees one of the slot stores after it sees the new value on its
        // second load of the counter.
        self.seq.store(s + 2, Ordering::Release);
        fence(Ordering::Release);
    }

    /// The sequence counter as the owner last stored it (even: no section is open while the
    /// owner pushes), for a nested memo (see `Slot::holds_nested_memo`). For the owner only.
    #[inline(always)]
    pub(crate) fn seq_owner(&self) -> u64 {
        // Relaxed: only the owner stores the counter, and a thread sees its own stores.
        self.seq.load(Ordering::Relaxed)
    }

    /// Moves the sequence counter with no slot changed (by two: it stays even), so that no
    /// nested memo set before holds (see `Slot::holds_nested_memo`). A reader in a section
    /// at that moment retries, needlessly. For the owner only.
    pub(crate) fn forget_nested_memos(&self) {
        // Relaxed (both): only the owner writes the counter, and no slot store is ordered by
        // this move (a reader that sees either value reads the same slots).
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 2, Ordering::Relaxed);
    }

    /// The depth word as the owner last stored it: the owner's stack depth while it holds the
    /// record (its only copy, read by every push and pop). For the owner only.
    #[inline(always)]
    pub(crate) fn len_word(&self) -> u64 {
        // Relaxed: only the owner stores the word, and a thread sees its own stores; at a
        // claim, the claim's mutex orders the load after the previous owner's stores.
        self.len.load(Ordering::Relaxed)
    }

    /// Publishes the depth word `w` (the owner's; made by [`pushed_word`], [`popped_word`] or
    /// [`with_depth`] from the word it stored last). One plain store.
    #[inline(always)]
    pub(crate) fn store_len(&self, w: u64) {
        // Release: a reader that sees the new depth sees the whole slot of a push, and every
        // earlier section of a pop.
        self.len.store(w, Ordering::Release);
    }

    /// [`store_len`](Self::store_len) inside a write section (the entries moved, or the stack
    /// was emptied at once): the section's counter orders it.
    pub(crate) fn store_len_in_section(&self, w: u64) {
        // Relaxed: the owner's word, inside the write section.
        self.len.store(w, Ordering::Relaxed);
    }

    /// The owner starts waiting for its entry of `instance` (a contended acquisition; also
    /// the re-lock of a condvar wait, which ends the sleep [`condvar_sleep`] began).
    ///
    /// [`condvar_sleep`]: Self::condvar_sleep
    pub(crate) fn wait_start(&self, instance: usize) {
        self.wait_begin(instance, None);
    }

    /// The owner is about to sleep in a condvar wait on the condvar at address `condvar`
    /// (not 0), having released the mutex whose entry (of `instance`) stays on its stack for
    /// the re-lock: readers see that entry as not held, and the owner as sleeping on the
    /// condvar, until [`wait_start`](Self::wait_start) (the re-lock must wait) or
    /// [`wait_done`](Self::wait_done) (it owns the mutex again).
    pub(crate) fn condvar_sleep(&self, instance: usize, condvar: CondvarId) {
        debug_assert_ne!(condvar.addr, 0);
        self.wait_begin(instance, Some(condvar));
    }

    /// A new wait (see [`Wait`]): one write section. A lock wait's start is read from the
    /// fine clock ([`now_ns`]: the watchdog times the wait from it); a condvar sleep's, which
    /// only the dump's text shows (the watchdog does not judge sleeps), from the coarse one
    /// ([`now_coarse_ns`]: a zero-timeout wait spent a third of its validated time reading
    /// the fine clock).
    fn wait_begin(&self, instance: usize, condvar: Option<CondvarId>) {
        let since = match condvar {
            None => now_ns(),
            Some(_) => now_coarse_ns(),
        };
        let even = self.begin();
        // Relaxed (every store): inside the write section.
        self.wait_since.store(since, Ordering::Relaxed);
        self.wait_instance.store(instance, Ordering::Relaxed);
        self.wait_condvar
            .store(condvar.map_or(0, |c| c.addr), Ordering::Relaxed);
        if let Some(c) = condvar {
            self.wait_condvar_name
                .store(c.name.as_ptr().cast_mut(), Ordering::Relaxed);
            self.wait_condvar_name_len
                .store(c.name.len(), Ordering::Relaxed);
            self.wait_condvar_site.store(
                c.site
                    .map_or(std::ptr::null_mut(), |l| std::ptr::from_ref(l).cast_mut()),
                Ordering::Relaxed,
            );
        }
        // Relaxed (both), and no read-modify-write: the owner is the counter's only writer
        // (a locked add cost a condvar wait 9 ns on an Intel Xeon), inside the section.
        let count = self.wait_count.load(Ordering::Relaxed);
        self.wait_count
            .store(count.wrapping_add(1), Ordering::Relaxed);
        self.end(even);
    }

    /// The owner stopped waiting (it has the lock, or gave up) or sleeping (it owns the
    /// condvar's mutex again).
    pub(crate) fn wait_done(&self) {
        // Relaxed: the owner's own field; it is the only writer. A condvar sleep has an
        // instance too, so this one test covers both kinds of wait.
        if self.wait_instance.load(Ordering::Relaxed) != 0 {
            let even = self.begin();
            // Relaxed: inside the write section.
            self.wait_instance.store(0, Ordering::Relaxed);
            self.wait_condvar.store(0, Ordering::Relaxed);
            self.end(even);
        }
    }

    /// Whether the owner's fast paths must give way (mail waits, lock_stat is on, or the chain
    /// cache is off). One relaxed load on the owner's line.
    #[inline(always)]
    pub(crate) fn is_unusual(&self) -> bool {
        // Relaxed: a hint; the mail itself is read under the mailbox mutex, and the switches
        // are read again on the slow path.
        self.unusual.load(Ordering::Relaxed) != 0
    }

    /// Whether another thread posted mail. One relaxed load on the owner's line.
    #[inline]
    pub(crate) fn has_mail(&self) -> bool {
        // Relaxed: as in `is_unusual`.
        self.unusual.load(Ordering::Relaxed) & MAIL != 0
    }

    /// Takes off a copy of the stack what the mail waiting for its owner will take off (a
    /// guard released on another thread, a lock freed): those locks are no longer held, even
    /// if the owner has not made the lock operation that applies the mail yet. Called after
    /// the copy: mail posted before it is in the box (a poster posts before the raw unlock),
    /// and mail the owner applied since is in neither. The mailbox is opened only if its
    /// flag is up (usually it is not).
    fn without_posted(&self, held: &mut Vec<RawSlot>) {
        // A post that happens before this copy (a reader that saw the release, say by taking
        // the lock or joining the releasing thread) set the flag before that: the load sees
        // it (coherence, even relaxed). A post concurrent with the copy may be left out,
        // as if the copy had come first.
        if !self.has_mail() {
            return;
        }
        let mail = self.mail.lock().unwrap_or_else(|e| e.into_inner());
        // A pending mode change shows the old mode until the owner applies it.
        for m in mail.iter().filter(|m| m.becomes.is_none()) {
            if m.all {
                held.retain(|e| e.instance() != m.instance);
            } else if let Some(i) = m.find().pick(held, RawSlot::tagged) {
                held.remove(i);
            }
        }
    }

    /// Takes the mail (the owner).
    pub(crate) fn take_mail(&self) -> Vec<Mail> {
        let mut m = self.mail.lock().unwrap_or_else(|e| e.into_inner());
        // Relaxed: cleared under the mutex that guards the mail; a post after this sets it
        // again under the same mutex.
        self.unusual.fetch_and(!MAIL, Ordering::Relaxed);
        std::mem::take(&mut *m)
    }

    /// Sends every owner's fast paths to the slow path once, with no mail (the MAIL bit alone:
    /// the owner's next lock operation takes an empty mailbox and, as every slow path does,
    /// recomputes what its fast path may do): a setting the fast paths depend on changed.
    pub(crate) fn nudge_all() {
        for r in all() {
            let _m = r.mail.lock().unwrap_or_else(|e| e.into_inner());
            // Relaxed: as in `post`; set under the mailbox mutex, cleared under it.
            r.unusual.fetch_or(MAIL, Ordering::Relaxed);
        }
    }

    /// Posts mail to the owner of `holder`, if that holding is still current; false if not.
    pub(crate) fn post(holder: Holder, mail: Mail) -> bool {
        let Some(r) = find(holder) else {
            return false;
        };
        let mut m = r.mail.lock().unwrap_or_else(|e| e.into_inner());
        // Checked again under the mutex: `claim` clears the mailbox under it after the owner
        // changed, so mail of an old holding never reaches a new owner.
        if r.generation() != holder.parts().1 {
            return false;
        }
        m.push(mail);
        // Relaxed: the owner reads the mail under the mutex; see `has_mail`.
        r.unusual.fetch_or(MAIL, Ordering::Relaxed);
        true
    }

    /// Whether the record's stack (the entry its owner waits for included) has an entry whose
    /// class `of_interest` accepts: the check [`snapshot`](Self::snapshot) would let a caller
    /// make, from a consistent read of the slots in place (the same read section) with no
    /// copy and no allocation. False for a free or idle record. May say true for an entry
    /// that posted mail removes (a snapshot leaves those out): a caller that needs the
    /// entries takes the snapshot next.
    pub(crate) fn may_hold_class(&'static self, of_interest: impl Fn(ClassId) -> bool) -> bool {
        if self.generation().is_multiple_of(2) {
            return false;
        }
        // Relaxed: the idle hint of `snapshot`.
        if self.len.load(Ordering::Relaxed) & DEPTH_MASK == 0
            && self.wait_instance.load(Ordering::Relaxed) == 0
        {
            return false;
        }
        for attempt in 0u32.. {
            // Acquire: pairs with `end`'s Release store, as in `snapshot`.
            let s1 = self.seq.load(Ordering::Acquire);
            if !s1.is_multiple_of(2) {
                backoff(attempt);
                continue;
            }
            // Acquire: pairs with the Release stores of `store_len`.
            let len = (self.len.load(Ordering::Acquire) & DEPTH_MASK) as usize;
            // Acquire (in `slots`): pairs with the Release store in `grow`.
            let slots = self.slots();
            let found = slots[..len.min(slots.len())]
                .iter()
                .map(Slot::read)
                .any(|r| r.held() && of_interest(r.class()));
            // Acquire fence, then Relaxed: the seqlock reader's rule, as in `snapshot`.
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return found;
            }
            backoff(attempt);
        }
        unreachable!("the loop returns")
    }

    /// A consistent copy of the record's stack and wait, or `None` for a free record (or one
    /// with nothing held or awaited, if `skip_idle`). Retries while the owner writes (a write
    /// section is a few stores; past a few spins it yields, in case the owner was preempted
    /// inside one). Never returns a torn copy.
    pub(crate) fn snapshot(&'static self, skip_idle: bool) -> Option<Snapshot> {
        let generation = self.generation();
        if generation.is_multiple_of(2) {
            return None;
        }
        // Relaxed: a hint to skip idle records; a stack that grows right now is one whose
        // owner runs on, which a snapshot taken a moment earlier would also have missed.
        if skip_idle
            && self.len.load(Ordering::Relaxed) & DEPTH_MASK == 0
            && self.wait_instance.load(Ordering::Relaxed) == 0
        {
            return None;
        }
        let mut held = Vec::new();
        for attempt in 0u32.. {
            // Acquire: pairs with `end`'s Release store, so the slots of every section that
            // ended before are visible.
            let s1 = self.seq.load(Ordering::Acquire);
            if !s1.is_multiple_of(2) {
                backoff(attempt);
                continue;
            }
            held.clear();
            // Acquire: pairs with the Release stores of `store_len`.
            let word = self.len.load(Ordering::Acquire);
            let len = (word & DEPTH_MASK) as usize;
            // Acquire: pairs with the Release store in `grow`. An array the owner outgrew
            // meanwhile is read consistently, and the counter has moved.
            let slots = self.slots();
            held.extend(slots[..len.min(slots.len())].iter().map(Slot::read));
            // Relaxed (wait fields): inside the read section, checked by the counter.
            let waiting = self.wait_instance.load(Ordering::Relaxed);
            let since = self.wait_since.load(Ordering::Relaxed);
            let count = self.wait_count.load(Ordering::Relaxed);
            let condvar = self.wait_condvar.load(Ordering::Relaxed);
            let cv_name = self.wait_condvar_name.load(Ordering::Relaxed);
            let cv_name_len = self.wait_condvar_name_len.load(Ordering::Relaxed);
            let cv_site = self.wait_condvar_site.load(Ordering::Relaxed);
            // Acquire fence, then Relaxed: the counter's second load is ordered after the
            // slot loads (the seqlock reader's rule).
            fence(Ordering::Acquire);
            let s2 = self.seq.load(Ordering::Relaxed);
            if s1 == s2 {
                if self.generation() != generation {
                    return None;
                }
                let condvar = (condvar != 0).then(|| CondvarId {
                    addr: condvar,
                    // SAFETY: a consistent copy (the counter did not move): the owner wrote
                    // the pointer and length of one `&'static str` together in the section
                    // that set `wait_condvar`.
                    name: unsafe {
                        std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                            cv_name,
                            cv_name_len,
                        ))
                    },
                    // SAFETY: as for the name: null or a `&'static Location`'s address.
                    site: unsafe { cv_site.cast_const().as_ref() },
                });
                let wait = (waiting != 0).then_some(Wait {
                    instance: waiting,
                    since_ns: since,
                    count,
                    condvar,
                });
                let mut held: Vec<RawSlot> = held.into_iter().filter(RawSlot::held).collect();
                // A depth of holes only (locks released first-taken-first, the stack not yet
                // closed, see `ThreadState::close_holes`) is an idle stack too.
                if skip_idle && held.is_empty() && wait.is_none() {
                    return None;
                }
                self.without_posted(&mut held);
                return Some(Snapshot {
                    holder: Holder::new(self.index, generation),
                    progress: s1 ^ (word >> DEPTH_BITS).rotate_left(32),
                    record: self,
                    held,
                    wait,
                });
            }
            backoff(attempt);
        }
        unreachable!("the loop returns")
    }
}

/// The most entries a held-lock stack holds: what the depth bits of [`Record::len`] count
/// (a stack's slots take 64 bytes each, so a thread reaches it only with hundreds of GiB of
/// held-lock entries). The stack's owner keeps its length in the same word (see
/// `ThreadState::len`), so the length never exceeds it.
pub(crate) const MAX_HELD: usize = DEPTH_MASK as usize;

/// The depth in depth word `w`.
#[inline(always)]
pub(crate) fn depth_of(w: u64) -> usize {
    (w & DEPTH_MASK) as usize
}

/// The depth word after a push, from the word `w` before it: one more push counted, and the
/// depth one more (never past [`MAX_HELD`]: the stack does not grow past it).
#[inline(always)]
pub(crate) fn pushed_word(w: u64) -> u64 {
    debug_assert!(depth_of(w) < MAX_HELD);
    w + (1 << DEPTH_BITS) + 1
}

/// The depth word after a pop, from the word `w` before it (whose depth is at least 1).
#[inline(always)]
pub(crate) fn popped_word(w: u64) -> u64 {
    debug_assert!(depth_of(w) > 0);
    w - 1
}

/// The depth word `w` with its depth set to `len` (at most [`MAX_HELD`]; the count of pushes
/// kept).
#[inline]
pub(crate) fn with_depth(w: u64, len: usize) -> u64 {
    debug_assert!(len <= MAX_HELD);
    w & !DEPTH_MASK | len as u64
}

fn backoff(attempt: u32) {
    if attempt < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// The owner's wait, as a reader saw it: a lock wait (it blocks on the lock `instance`,
/// whose holder it waits for) or a condvar wait's sleep (it released the mutex `instance`
/// and waits for a notification on `condvar`; the mutex is not held by it meanwhile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wait {
    pub instance: usize,
    pub since_ns: u64,
    /// The owner's wait number (a new wait has a new one).
    pub count: u64,
    /// The condvar for a condvar wait's sleep, `None` for a lock wait.
    pub condvar: Option<CondvarId>,
}

impl Wait {
    /// The lock the owner is blocked on, waiting for its holder: `None` while it sleeps in a
    /// condvar wait (it waits for a notification, which no lock's holder owes it).
    pub(crate) fn lock(&self) -> Option<usize> {
        self.condvar.is_none().then_some(self.instance)
    }
}

/// A consistent copy of one record.
pub(crate) struct Snapshot {
    pub holder: Holder,
    /// Changes whenever the owner pushes, rewrites its stack, or starts or ends a wait (the
    /// counter and the count of pushes, mixed): the watchdog's sign of progress.
    pub progress: u64,
    pub record: &'static Record,
    held: Vec<RawSlot>,
    pub wait: Option<Wait>,
}

/// One entry of a [`Snapshot`], with the fields reports show.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SharedEntry {
    pub instance: usize,
    pub class: ClassId,
    pub mode: Mode,
    pub trylock: bool,
    pub subclass: u8,
    pub name: &'static str,
    pub named: bool,
    pub site: &'static Location<'static>,
    /// The lock map's pair tag (see `LockMap::pair_key`).
    pub tag: u16,
}

impl Snapshot {
    /// The owner's identity, if the record still belongs to the holding the copy was made of.
    pub(crate) fn identity(&self) -> Option<Identity> {
        let id = self.record.identity()?;
        (self.record.holder() == self.holder).then_some(id)
    }

    /// The entries, bottom first (the one the owner waits for included, on top).
    pub(crate) fn entries(&self) -> impl Iterator<Item = SharedEntry> + '_ {
        self.held.iter().map(|r| {
            // SAFETY: the read section validated the copy: each slot was written by one push
            // or write section, whole (see `RawSlot::decode`).
            let e = unsafe { r.decode() };
            SharedEntry {
                instance: e.instance,
                class: e.class,
                mode: e.mode,
                trylock: e.trylock,
                named: e.named,
                subclass: e.subclass,
                name: e.name,
                site: e.site,
                tag: e.tag,
            }
        })
    }

    /// The entries the owner holds (the one it waits for left out) and the one it waits for
    /// (or, in a condvar wait's sleep, the mutex it released and will re-lock).
    pub(crate) fn split(&self) -> (Vec<SharedEntry>, Option<SharedEntry>) {
        let mut held: Vec<SharedEntry> = self.entries().collect();
        let waiting = self.wait.and_then(|w| {
            let i = held.iter().rposition(|e| e.instance == w.instance)?;
            Some(held.remove(i))
        });
        (held, waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity {
            id: 0,
            name: "record-test".to_owned(),
            std_id: None,
            os_tid: None,
        }
    }

    #[test]
    fn a_condvar_sleep_is_a_wait_of_its_own_kind() {
        let r = claim(identity()).expect("a free record");
        assert_eq!(r.snapshot(false).unwrap().wait, None);
        let cv = CondvarId {
            addr: 0x80,
            name: "queue cv",
            site: Some(Location::caller()),
        };
        r.condvar_sleep(0x40, cv);
        let sleep = r.snapshot(false).unwrap().wait.expect("the sleep is shown");
        assert_eq!((sleep.instance, sleep.condvar), (0x40, Some(cv)));
        assert_eq!(sleep.lock(), None, "a sleeper is blocked on no lock");
        // Woken, the re-lock must wait: a lock wait, a new one.
        r.wait_start(0x40);
        let wait = r.snapshot(false).unwrap().wait.expect("the re-lock's wait");
        assert_eq!((wait.instance, wait.condvar), (0x40, None));
        assert_eq!(wait.lock(), Some(0x40));
        assert_eq!(wait.count, sleep.count + 1);
        r.wait_done();
        assert_eq!(r.snapshot(false).unwrap().wait, None);
        // A sleep that ends with the mutex owned at once: `wait_done` ends it.
        r.condvar_sleep(0x40, cv);
        r.wait_done();
        assert_eq!(r.snapshot(false).unwrap().wait, None);
        // A new holding of the record starts with no wait, whatever the last one left.
        r.condvar_sleep(0x40, cv);
        r.give_back();
        let r = claim(identity()).expect("a free record");
        assert_eq!(r.snapshot(false).unwrap().wait, None);
        r.give_back();
    }
}
