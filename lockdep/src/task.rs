//! Held async locks per task, not per OS thread.
//!
//! # The problem
//!
//! An async lock (`tokio::sync::Mutex`) is held by a *task*: the task may be polled on a
//! different worker thread after every `.await`, and many tasks take turns on one thread. A
//! held-lock stack per OS thread is wrong for it both ways: a task resumed on another worker
//! would release a lock that thread never took, and two tasks of a current-thread runtime
//! contending on one async mutex would look like one thread taking it recursively (they only
//! wait for each other asynchronously; the thread never blocks).
//!
//! A *blocking* lock (ours, `parking_lot`, `std`) is different: its guard blocks the OS
//! thread, so it stays per thread, even when a task takes it. A blocking guard held across an
//! `.await` keeps the thread's lock held while other tasks run on that thread; one of them
//! taking the same lock blocks the thread for good, and lockdep reports it as recursive
//! locking before it blocks, because the thread's stack still holds the lock.
//!
//! # The design: a task's locks are spliced onto the thread's stack for each poll
//!
//! A [`TaskContext`] is a task's record of the async locks it holds while it is not being
//! polled. An instrumented future (instrumented-locks' `task::instrument`) calls
//! [`TaskContext::enter`] at the start of every poll and [`PollScope::exit`] at its end:
//!
//! - **enter** pushes the task's saved entries on top of the polling thread's held-lock
//!   stack (their chain keys recomputed over what the thread holds), and makes the task the
//!   thread's current task;
//! - async acquisitions during the poll ([`task_acquire`]) are validated and pushed like any
//!   other, and remembered as the task's; blocking ones are plain [`acquire`](crate::acquire)s;
//! - **exit** lifts the task's async entries off the thread's stack into the record, and, if
//!   the poll returned `Pending`, reports every *blocking* lock taken during the poll that is
//!   still held ([`Report::HeldAcrossAwait`](crate::Report::HeldAcrossAwait)); those stay on
//!   the thread's stack.
//!
//! So during a poll the validator sees exactly what the thread holds (blocking locks, those
//! of other tasks held across their awaits included) plus what the task holds, and every
//! check (cycles, recursion, nesting) runs unchanged on one stack, in one dependency graph:
//! A (async) → B (blocking) → A is a cycle like any other. Nothing of lockdep's validation
//! path changed; the only contact with the thread's state is [`thread::with_state`] in
//! `enter` and `exit`, so a later design where each task owns a held-stack record that a
//! poll swaps in is a change of those two functions.
//!
//! Why a splice and not a swap of the whole stack: a swap would hide the thread's blocking
//! locks from the task, and the recursive acquisition of a blocking lock held across another
//! task's await on the same thread (which deadlocks the thread) would go unreported.
//!
//! # Outside an instrumented poll
//!
//! An async lock taken where no task context is current (a task that was not instrumented)
//! is validated against what the thread holds (its dependencies are recorded, a cycle they
//! close is reported) but not held afterwards ([`might_lock`](crate::might_lock)'s rule),
//! because nothing would move the entry with the task. Dependencies *from* it are then not
//! seen: instrument the task for those.
//!
//! # Guards that leave their task
//!
//! An async guard is `Send` and may be dropped by another task or thread. Its release finds
//! its owner's record ([`TaskHeld`]): if that task is being polled on this thread the entry
//! leaves this thread's stack; if it is not being polled, the entry leaves the record;
//! otherwise the release is posted to the record and applied when that poll ends.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::annotate;
use crate::current_task as polled;
use crate::graph_lock::graph_lock;
use crate::held::{Find, HeldLock};
use crate::map::LockMap;
use crate::mode::Mode;
use crate::report::{self, build};
use crate::thread::{self, with_state, Release};
use crate::validate::{self, replays};

static NEXT_TASK: AtomicU64 = AtomicU64::new(1);

/// A task's record, shared by its context and by the tokens of the async locks it holds.
struct Record {
    id: u64,
    saved: Mutex<Saved>,
    /// The instance of the held async lock the task is still waiting to get, 0 if none
    /// ([`TaskHeld::set_waiting`]): its entry was pushed when the acquisition was validated,
    /// before the wait, but the dump shows it as waited for, not held. An atomic of its own,
    /// so that marking a contended wait takes no lock.
    waiting: AtomicUsize,
}

/// What a task holds while it is not being polled.
#[derive(Default)]
struct Saved {
    /// The task's async held locks, bottom first (chain keys are recomputed when spliced).
    held: Vec<HeldLock>,
    /// Instances released by guards dropped elsewhere while the task was being polled.
    posted: Vec<usize>,
    /// True from `enter` to `exit`: the entries are on the polling thread's stack.
    polling: bool,
    /// The buffer of a frame's `owned` between polls, kept so a poll allocates nothing.
    spare_owned: Vec<usize>,
    /// The record is in [`LISTED`] (for the dump), or about to be.
    listed: bool,
}

impl Saved {
    fn apply_posted(&mut self) {
        for instance in std::mem::take(&mut self.posted) {
            if let Some(i) = self.held.iter().rposition(|h| h.instance == instance) {
                self.held.remove(i);
            }
        }
    }
}

impl Record {
    fn saved(&self) -> MutexGuard<'_, Saved> {
        // A panic under this lock could only be a validator bug; the record stays usable.
        self.saved.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One instrumented poll in progress on this thread.
struct Frame {
    record: Arc<Record>,
    /// Instances of the async entries on the thread's stack that are the task's (a multiset).
    owned: Vec<usize>,
    /// Instances the thread's stack held when the poll began (before the splice).
    base: Vec<usize>,
    /// The task that was current before this poll (nested instrumented futures).
    prev_task: u64,
    /// The record's `held` buffer, empty during the poll; the lifted entries go in it.
    spare_held: Vec<HeldLock>,
}

/// The records of tasks that held async locks at the end of a poll: what the all-threads
/// dump reads for the tasks no thread is polling. A record joins when a poll ends with
/// locks held (once per holding spell, see `Saved::listed`); records that no longer hold
/// anything, and records of dropped tasks, leave when the list is pruned (by a dump, and
/// when it has doubled since the last pruning), so its length stays within twice the
/// number of tasks holding async locks. Order of locks: this one, then a record's `saved`.
static LISTED: Mutex<Listed> = Mutex::new(Listed {
    records: Vec::new(),
    prune_at: 64,
});

struct Listed {
    records: Vec<std::sync::Weak<Record>>,
    /// Prune when `records` reaches this length.
    prune_at: usize,
}

impl Listed {
    /// Keeps the live records that still hold locks or are being polled; the others leave
    /// (their `listed` mark cleared, so that they join again when they next hold).
    fn prune(&mut self) {
        self.records.retain(|w| {
            let Some(r) = w.upgrade() else {
                return false;
            };
            let mut saved = r.saved();
            let keep = saved.polling || !saved.held.is_empty();
            saved.listed = keep;
            keep
        });
        self.prune_at = (self.records.len() * 2).max(64);
    }
}

fn listed() -> MutexGuard<'static, Listed> {
    // A panic under this lock could only be a validator bug; the list stays usable.
    LISTED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One task's async locks between polls, for the dump.
pub(crate) struct BetweenPolls {
    pub task: u64,
    /// Held, bottom first.
    pub held: Vec<HeldLock>,
    /// The one it is waiting to get (pushed before the wait, so not among `held`).
    pub waiting: Option<HeldLock>,
}

/// The async locks of every task that holds or waits for some between polls (no thread runs
/// it now). For the all-threads dump; takes the task list's lock and each listed task's
/// record lock in turn.
pub(crate) fn held_between_polls() -> Vec<BetweenPolls> {
    let mut list = listed();
    list.prune();
    list.records
        .iter()
        .filter_map(|w| {
            let r = w.upgrade()?;
            let saved = r.saved();
            if saved.polling || saved.held.is_empty() {
                return None;
            }
            let mut held = saved.held.clone();
            // Relaxed: see `TaskHeld::set_waiting`.
            let waiting = match r.waiting.load(Ordering::Relaxed) {
                0 => None,
                w => held.iter().rposition(|h| h.instance == w),
            }
            .map(|i| held.remove(i));
            Some(BetweenPolls {
                task: r.id,
                held,
                waiting,
            })
        })
        .collect()
}

thread_local! {
    /// The instrumented polls in progress on this thread, innermost last.
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's frames; `None` while the thread's locals are being destroyed
/// (or, impossibly, re-entered: nothing is called out while the borrow is held).
fn with_frames<R>(f: impl FnOnce(&mut Vec<Frame>) -> R) -> Option<R> {
    FRAMES
        .try_with(|fr| fr.try_borrow_mut().ok().map(|mut fr| f(&mut fr)))
        .ok()
        .flatten()
}

/// The held async locks of one task, carried from poll to poll (see the module docs of
/// lockdep's `task`: a task's entries are spliced onto the polling thread's held-lock stack
/// by [`enter`](Self::enter) and lifted off by [`PollScope::exit`]).
///
/// One per task: an instrumented future owns one and enters it around every poll of the
/// future it wraps, and around that future's drop (so a cancelled task's guards release
/// their entries). `Send` and `Sync`; [`enter`](Self::enter) is meant to be called by one
/// poll at a time, as an executor polls a task.
pub struct TaskContext {
    record: Arc<Record>,
}

impl TaskContext {
    /// A new context, with a new task number (unique in the process, never reused).
    pub fn new() -> TaskContext {
        TaskContext {
            record: Arc::new(Record {
                // Relaxed: a unique number is all that is needed.
                id: NEXT_TASK.fetch_add(1, Ordering::Relaxed),
                saved: Mutex::new(Saved::default()),
                waiting: AtomicUsize::new(0),
            }),
        }
    }

    /// The task's number, as reports print it ("task 17 on tokio-runtime-worker/3").
    pub fn id(&self) -> u64 {
        self.record.id
    }

    /// The number of async locks the task holds between polls (0 while a poll is in
    /// progress: its entries are then on the polling thread's stack).
    pub fn held_count(&self) -> usize {
        self.record.saved().held.len()
    }

    /// True if the task holds no async lock and is not being polled: its record can go.
    pub fn is_idle(&self) -> bool {
        let saved = self.record.saved();
        !saved.polling && saved.held.is_empty() && saved.posted.is_empty()
    }

    /// Starts a poll of the task on this thread: its saved async locks go on top of this
    /// thread's held-lock stack, and reports name the task. End it with [`PollScope::exit`]
    /// (or drop the scope: the same, with no held-across-await check). Takes the record's
    /// lock (uncontended unless a guard of the task is released elsewhere at that moment).
    pub fn enter(&self) -> PollScope<'_> {
        let (mut held, mut owned) = {
            let mut saved = self.record.saved();
            saved.polling = true;
            saved.apply_posted();
            (
                std::mem::take(&mut saved.held),
                std::mem::take(&mut saved.spare_owned),
            )
        };
        owned.clear();
        let base = with_state(|st| {
            let base: Vec<usize> = st.entries().iter().map(|h| h.instance).collect();
            for entry in held.drain(..) {
                owned.push(entry.instance);
                let next = st.next(entry);
                st.push(next);
            }
            base
        })
        .unwrap_or_default();
        // Entries not spliced (the thread's state is gone: it is exiting) are not tracked.
        held.clear();
        let prev_task = polled::replace(self.record.id);
        with_frames(|fr| {
            fr.push(Frame {
                record: Arc::clone(&self.record),
                owned,
                base,
                prev_task,
                spare_held: held,
            })
        });
        PollScope {
            ctx: self,
            done: false,
            _not_send: PhantomData,
        }
    }
}

impl Default for TaskContext {
    fn default() -> TaskContext {
        TaskContext::new()
    }
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("id", &self.record.id)
            .finish_non_exhaustive()
    }
}

/// A poll of a task in progress on this thread ([`TaskContext::enter`]). `!Send`: it ends
/// on the thread where it began.
#[must_use = "a poll scope ends the poll when it is exited or dropped"]
pub struct PollScope<'a> {
    ctx: &'a TaskContext,
    done: bool,
    _not_send: PhantomData<*const ()>,
}

impl PollScope<'_> {
    /// Ends the poll. `pending`: the poll returned `Pending`; then every blocking lock taken
    /// during this poll and still held is reported as
    /// [`Report::HeldAcrossAwait`](crate::Report::HeldAcrossAwait) (deduplicated by its class
    /// and site) and stays on the thread's stack. The task's async locks leave the thread's
    /// stack for its record. Panics only if the policy panics at that report.
    pub fn exit(mut self, pending: bool) {
        self.finish(pending);
    }

    fn finish(&mut self, pending: bool) {
        self.done = true;
        let record = &self.ctx.record;
        let frame = with_frames(|fr| {
            let i = fr.iter().rposition(|f| Arc::ptr_eq(&f.record, record))?;
            Some(fr.remove(i))
        })
        .flatten();
        let Some(frame) = frame else {
            record.saved().polling = false;
            return;
        };
        let mut lifted = frame.spare_held;
        let mut owned = frame.owned;
        // The same locks held across an await as a poll found before: counted, not built
        // again (see `validate::replays`); or what to keep if they come to a replay.
        let mut replayed = None;
        let mut keep = None;
        let reports = with_state(|st| {
            let mut reports = Vec::new();
            if pending {
                let blocking: Vec<usize> = (0..st.entries().len())
                    .filter(|&i| {
                        let inst = st.entry(i).instance;
                        !frame.base.contains(&inst) && !owned.contains(&inst)
                    })
                    .collect();
                if !blocking.is_empty() {
                    let sites = replays::await_sites(blocking.iter().map(|&i| st.entry(i)));
                    replayed = replays::find(replays::HELD_ACROSS_AWAIT, sites);
                    if replayed.is_none() {
                        keep = Some((sites, replays::Shape::now()));
                        let g = graph_lock();
                        for i in blocking {
                            let h = &st.entry(i);
                            reports.push(build::held_across_await(&g.graph, st, h, record.id));
                        }
                    }
                }
            }
            let mut i = st.entries().len();
            while i > 0 && !owned.is_empty() {
                i -= 1;
                let inst = st.entry(i).instance;
                if let Some(k) = owned.iter().position(|&o| o == inst) {
                    owned.swap_remove(k);
                    lifted.push(st.remove(i));
                }
            }
            reports
        })
        .unwrap_or_default();
        lifted.reverse();
        let join = {
            let mut saved = record.saved();
            saved.held = lifted;
            owned.clear();
            saved.spare_owned = owned;
            saved.apply_posted();
            saved.polling = false;
            let join = !saved.held.is_empty() && !saved.listed;
            saved.listed |= join;
            join
        };
        // Not under the record's lock (the list's lock comes first).
        if join {
            let mut list = listed();
            if list.records.len() >= list.prune_at {
                list.prune();
            }
            list.records.push(Arc::downgrade(record));
        }
        polled::replace(frame.prev_task);
        if let Some(replay) = replayed {
            replay.count();
        } else if let (false, Some((sites, shape))) = (reports.is_empty(), keep) {
            if let Some(r) = report::deliver_replayable(reports) {
                replays::keep(replays::HELD_ACROSS_AWAIT, sites, shape, r);
            }
        }
    }
}

impl Drop for PollScope<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.finish(false);
        }
    }
}

/// Who holds an async lock's entry: the token an async guard keeps and hands to
/// [`task_release`]. Holds a reference to the owner task's record (not the task itself).
#[derive(Default)]
pub struct TaskHeld {
    owner: Option<Arc<Record>>,
}

impl TaskHeld {
    /// Not held: the acquisition was made outside any instrumented poll (validated, not
    /// held), or the entry was already released.
    pub const NONE: TaskHeld = TaskHeld { owner: None };

    /// Whether an entry is held for this token.
    pub fn is_held(&self) -> bool {
        self.owner.is_some()
    }

    /// The owner task's number, if held.
    pub fn task(&self) -> Option<u64> {
        self.owner.as_ref().map(|r| r.id)
    }

    /// Says that the owner task is waiting (`Some(map)`) to get the async lock `map` whose
    /// entry this token holds, or no longer is (`None`: it has the lock, or gave up). While
    /// it waits, the all-threads dump shows the lock as the task's wait, not as held by it
    /// (the entry itself stays: the acquisition was validated before the wait). Call it
    /// around the wait of a contended acquisition only. One relaxed store; does nothing for a
    /// token that holds nothing.
    pub fn set_waiting(&self, map: Option<&LockMap>) {
        if let Some(r) = &self.owner {
            // Relaxed: a hint for the dump, which copies it with the record's entries and
            // makes no promise about a wait that starts or ends meanwhile.
            r.waiting
                .store(map.map_or(0, LockMap::instance), Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for TaskHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHeld")
            .field("task", &self.task())
            .finish()
    }
}

/// The record of the innermost instrumented poll on this thread, if any.
fn current_record() -> Option<Arc<Record>> {
    FRAMES
        .try_with(|fr| {
            fr.try_borrow()
                .ok()
                .and_then(|fr| fr.last().map(|f| Arc::clone(&f.record)))
        })
        .ok()
        .flatten()
}

/// Records that the current task is acquiring the async lock `map` (an async lock's
/// [`acquire`](crate::acquire)): arguments as there (no nest_lock). Call it **before** the
/// first poll of the lock's future that may wait (for a try-lock, after it succeeded, with
/// `trylock = true`); reports are delivered before it returns.
///
/// Inside an instrumented poll ([`TaskContext::enter`]) the lock is validated against what the
/// thread and the task hold, and held by the task: the returned token says so, and moves
/// with the task to other threads. Outside one, a blocking-style acquisition is validated
/// and not held (see lockdep's `task` module docs), a try-lock is not tracked, and the token
/// is [`TaskHeld::NONE`].
///
/// Thread-safe. Panics only if the policy panics at a report.
pub fn task_acquire(
    map: &LockMap,
    subclass: u8,
    mode: Mode,
    trylock: bool,
    site: &'static Location<'static>,
) -> TaskHeld {
    let Some(record) = current_record() else {
        if !trylock {
            validate::acquire(map, subclass, mode, false, None, site);
            release_here(map, site);
        }
        return TaskHeld::NONE;
    };
    validate::acquire(map, subclass, mode, trylock, None, site);
    with_frames(|fr| {
        if let Some(f) = fr.last_mut() {
            f.owned.push(map.instance());
        }
    });
    TaskHeld {
        owner: Some(record),
    }
}

/// Records the release of the async lock `map` whose entry `held` names (an async guard's
/// drop, or a lock future cancelled while waiting); afterwards `held` is not held. Wherever
/// the guard was dropped: on a thread polling the owner task the entry leaves that thread's
/// stack, otherwise the owner's record (see lockdep's `task` module docs). Nothing for a
/// token that is not held. Thread-safe; takes the owner record's lock unless the owner is
/// being polled on this thread.
pub fn task_release(held: &mut TaskHeld, map: &LockMap) {
    let Some(owner) = held.owner.take() else {
        return;
    };
    let instance = map.instance();
    let here = with_frames(|fr| {
        let f = fr
            .iter_mut()
            .rev()
            .find(|f| Arc::ptr_eq(&f.record, &owner))?;
        let k = f.owned.iter().rposition(|&o| o == instance)?;
        f.owned.swap_remove(k);
        Some(())
    })
    .flatten()
    .is_some();
    if here {
        release_here(map, crate::site::guard_drop());
        return;
    }
    let mut saved = owner.saved();
    let paired = if saved.polling {
        saved.posted.push(instance);
        // The entry may carry a checked instance pair; the map learns it now (costs only a
        // check when the lock is freed).
        true
    } else if let Some(i) = saved.held.iter().rposition(|h| h.instance == instance) {
        saved.held.remove(i).paired
    } else {
        false
    };
    // After the task's lock: marking may take the graph lock (a lock that moved since its
    // pairs were recorded).
    drop(saved);
    if paired {
        map.mark_paired();
    }
}

/// Changes the mode of a held async lock in place without validation (a write guard
/// downgraded to a read guard), as [`set_held_mode`](crate::set_held_mode) does for a lock of
/// this thread. Thread-safe.
pub fn task_set_held_mode(held: &TaskHeld, map: &LockMap, mode: Mode) {
    let Some(owner) = &held.owner else {
        return;
    };
    let instance = map.instance();
    let here = with_frames(|fr| fr.iter().any(|f| Arc::ptr_eq(&f.record, owner))).unwrap_or(false);
    if here {
        annotate::set_held_mode(map, mode);
        return;
    }
    let mut saved = owner.saved();
    if let Some(h) = saved.held.iter_mut().rev().find(|h| h.instance == instance) {
        h.mode = mode;
    }
}

/// The number of the task this thread is polling, `None` outside an instrumented poll.
pub fn current_task() -> Option<u64> {
    polled::get()
}

/// [`crate::release`] without the facade.
fn release_here(map: &LockMap, site: &'static Location<'static>) {
    let found = thread::release(Find::any(map.instance()));
    if !matches!(found, Release::Released) {
        validate::release_slow(map, found, site);
    }
}
