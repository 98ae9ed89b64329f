//! What a report says: every finding is a [`Report`], with the thread, the locks and the
//! dependencies it concerns.

use std::panic::Location;

use crate::class::{ClassId, KeyRef};
use crate::graph::Trace;
use crate::mode::{DepKind, Mode};

/// The thread a report is about.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadDesc {
    /// `std::thread::Thread::name()`, or `<unnamed>`.
    pub name: String,
    /// A validator-assigned thread number (unique in the process, never reused).
    pub id: u64,
    /// The task the thread was polling, if the report was made inside an instrumented poll
    /// ([`TaskContext::enter`](crate::TaskContext::enter)); `name` then reads
    /// `task 17 on <thread name>`, so the report names the task where the thread would be.
    pub task: Option<u64>,
}

/// One thread's held locks, as another thread saw them: an entry of the all-threads dump
/// ([`all_held_locks`](crate::all_held_locks)), of the watchdog's reports, and of the
/// cross-thread checks.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadLocks {
    /// The thread.
    pub thread: ThreadDesc,
    /// The kernel's id of the thread (`gettid()`), where the platform has one.
    pub os_tid: Option<u64>,
    /// The thread's `std` id, if it could be read when the thread first took a lock.
    pub std_id: Option<std::thread::ThreadId>,
    /// The locks it holds, bottom first (the one it waits for is not among them, nor the
    /// mutex of a condvar wait it sleeps in).
    pub held: Vec<LockDesc>,
    /// The lock it is blocked on, if any: a lock whose holder it waits for (a condvar wait's
    /// sleep is not one, see [`condvar`](Self::condvar)).
    pub waiting: Option<WaitingFor>,
    /// The condvar wait it sleeps in, if any: it released the wait's mutex and waits for a
    /// notification (or a timeout), so the mutex is not among `held` and `waiting` is `None`.
    /// Once woken, its re-lock of the mutex is an ordinary [`waiting`](Self::waiting) if the
    /// mutex is taken.
    pub condvar: Option<CondvarWait>,
}

/// A condvar wait a thread sleeps in, as another thread saw it: the thread released `mutex`
/// and waits for a notification on the condvar. Its guard of the mutex still exists (the
/// wait re-locks the mutex before it returns), so the validator keeps the re-lock's entry
/// (validated when the wait started) and shows it here, not as held.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CondvarWait {
    /// The address of the condvar's [`CondvarMap`](crate::CondvarMap) (inside the lock
    /// wrapper's condvar object), telling two condvars of one class apart.
    pub condvar: usize,
    /// The condvar's name, or its kind ("Condvar") if it has none.
    pub name: &'static str,
    /// Where the condvar was made, if known.
    pub site: Option<&'static Location<'static>>,
    /// The mutex the wait will re-lock; its `site` is where the wait was called.
    pub mutex: LockDesc,
    /// How long the thread had been sleeping when it was seen, from a coarse stamp of the
    /// sleep's start: up to one timer tick (1 to 10 ms on Linux) longer than it was.
    pub slept: std::time::Duration,
}

/// The async locks one task holds between two of its polls, while no thread runs it: an
/// entry of the all-threads dump ([`all_held_locks`](crate::all_held_locks)). (During a poll
/// they are on the polling thread's stack and show there.)
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLocks {
    /// The task's number ([`TaskContext::id`](crate::TaskContext::id), as reports print it).
    pub task: u64,
    /// The async locks it holds, bottom first.
    pub held: Vec<LockDesc>,
    /// The async lock it is waiting to get, if any (its acquisition was validated; the lock
    /// is held by another task or thread).
    pub waiting: Option<LockDesc>,
}

/// A lock a thread is blocked on (a contended acquisition; its site is where it was called).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitingFor {
    /// The lock.
    pub lock: LockDesc,
    /// How long the thread had been waiting when it was seen.
    pub waited: std::time::Duration,
}

/// One lock as it appears in a report: held, being acquired or being released.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockDesc {
    /// The lock class ([`ClassId::NONE`] if the lock is not validated).
    pub class: ClassId,
    /// The class name, with `/subclass` appended for subclasses other than 0.
    pub class_name: String,
    /// The lock instance (the address of its [`LockMap`](crate::LockMap)).
    pub instance: usize,
    /// The instance's own name, if its map has one (the class may be named after another
    /// instance, or after the lock's type and site).
    pub name: Option<&'static str>,
    /// The acquire mode.
    pub mode: Mode,
    /// True if the lock was taken by a trylock.
    pub trylock: bool,
    /// Where it was acquired (or released, for a release report; a release by guard drop,
    /// whose site is unknown, has lockdep's placeholder site, see
    /// [`is_guard_drop`](crate::is_guard_drop)).
    pub site: &'static Location<'static>,
    /// The key the class was made from, for matching suppressions by key or construction
    /// site (set by the validator; `None` for a lock without a live class).
    pub(crate) key: Option<KeyRef>,
}

/// One lock instance as a dependency saw it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockInstance {
    /// The address of its [`LockMap`](crate::LockMap), as in [`LockDesc::instance`]. A freed
    /// lock's address may be reused by a later lock.
    pub address: usize,
    /// The map's name, if it has one.
    pub name: Option<&'static str>,
}

/// One dependency of a cycle, with both of its acquisition sites and the instances on which it
/// was first seen.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The class that was held.
    pub from: String,
    /// The class that was acquired while `from` was held.
    pub to: String,
    /// The dependency kind (EN, SN, ER, SR, or one with an upgradable read).
    pub kind: DepKind,
    /// Where `from` was acquired when the dependency was recorded.
    pub from_site: &'static Location<'static>,
    /// Where `to` was acquired when the dependency was recorded.
    pub to_site: &'static Location<'static>,
    /// The instance of `from` that was held when the dependency was first seen: with
    /// [`to_instance`](Self::to_instance), it tells whether a cycle closes within one group
    /// of locks (one pool, one table) or only across groups.
    pub from_instance: LockInstance,
    /// The instance of `to` that was acquired when the dependency was first seen.
    pub to_instance: LockInstance,
    /// The keys the classes `from` and `to` were made from, for matching suppressions by
    /// key or construction site (set by the validator; `None` for a zapped class).
    pub(crate) from_key: Option<KeyRef>,
    pub(crate) to_key: Option<KeyRef>,
    /// The full stack of that acquisition, if backtrace capture was on when the dependency
    /// was recorded (for `cycle[0]`, the current stack if capture is on).
    pub trace: Option<Trace>,
}

/// A possible circular locking dependency (a strong cycle in the class graph).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircularDependency {
    /// The thread that tried to close the cycle.
    pub thread: ThreadDesc,
    /// The lock being acquired.
    pub acquiring: LockDesc,
    /// The held lock whose dependency on `acquiring` would close the cycle.
    pub holding: LockDesc,
    /// The cycle. `cycle[0]` is the new dependency `holding -> acquiring` (sites: where
    /// `holding` was acquired and the current site); `cycle[1..]` are the recorded
    /// dependencies `acquiring -> ... -> holding`, in path order.
    pub cycle: Vec<Dependency>,
    /// True for a cycle among instances of one class
    /// ([`Nesting::InstanceOrder`](crate::Nesting::InstanceOrder)): every dependency is then
    /// between two instances of the same class, told apart by their `*_instance` fields.
    pub instance_order: bool,
    /// True when the new dependency comes from a condvar notification (condvar tracking,
    /// [`condvar_notify`](crate::condvar_notify)): `holding` is then the condvar, notified at
    /// its site, and `acquiring` a lock the notifier already holds, which a waiter of the
    /// condvar would wait for.
    pub notify: bool,
    /// The thread's held locks, bottom first.
    pub held: Vec<LockDesc>,
    /// A hash of the cycle's set of classes: what makes two cycle reports the same report for
    /// deduplication (set by the validator; 0 in a report built without it).
    pub(crate) class_set: u64,
}

/// A lock of a class this thread already holds, taken in a way that can self-deadlock.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SameClass {
    /// The thread.
    pub thread: ThreadDesc,
    /// The lock being acquired.
    pub acquiring: LockDesc,
    /// The held lock of the same class.
    pub holding: LockDesc,
    /// The thread's held locks, bottom first.
    pub held: Vec<LockDesc>,
}

/// What was wrong with a dynamic key.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyMisuse {
    /// A lock used a key that is not registered (never registered, or already unregistered).
    NotRegistered,
    /// `register` on a key that is already registered.
    DoubleRegister,
    /// `unregister` on a key that is not registered.
    UnknownKey,
    /// `unregister` while a thread (this one or another) holds a lock of one of the key's
    /// classes, waits for one, or sleeps in a condvar wait that will re-lock one.
    UnregisterWhileHeld,
    /// A subclass of [`MAX_SUBCLASSES`](crate::MAX_SUBCLASSES) or more.
    InvalidSubclass,
}

/// Whose name a [`Report::KeyMisuse`] carries.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MisuseSubject {
    /// The key's name (register, unregister, or a lock map made with a key that is not
    /// registered).
    Key,
    /// The name of the lock map whose use found its key unregistered, or its subclass invalid.
    Lock,
}

/// Which annotation failed.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssertKind {
    /// `assert_held`: the lock is not held by this thread.
    NotHeld,
    /// `assert_held_mode`: held, but in another mode.
    WrongMode,
    /// `assert_not_held`: the lock is held by this thread.
    Held,
    /// `assert_none_held`: this thread holds locks.
    SomeHeld,
    /// A pinned lock (`pin`) was released.
    ReleasedWhilePinned,
    /// `unpin` of a lock that is not pinned or not held.
    BadUnpin,
}

/// Which fixed limit was reached.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// The per-thread held-lock depth limit ([`set_max_depth`](crate::set_max_depth)); the
    /// extra locks are still tracked and validated.
    HeldLocks,
    /// The number of live lock classes ([`MAX_CLASSES`](crate::MAX_CLASSES)); locks of new
    /// classes are tracked but not validated until classes are freed.
    Classes,
    /// The number of instance-order pairs ([`MAX_INSTANCE_PAIRS`](crate::MAX_INSTANCE_PAIRS));
    /// new pairs are not recorded (their order is not validated) until locks with pairs are
    /// freed.
    InstancePairs,
}

/// Everything the validator can report.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// A new dependency would close a strong cycle (kernel: "possible circular locking
    /// dependency detected").
    CircularDependency(CircularDependency),
    /// The same lock instance is taken again by the thread holding it (kernel: "possible
    /// recursive locking detected").
    RecursiveLocking(SameClass),
    /// Another lock of a held class is taken without a subclass or nest_lock annotation
    /// (kernel: the same report, "May be due to missing lock nesting notation").
    MissingNestingAnnotation(SameClass),
    /// A nest_lock annotation names a lock this thread does not hold (kernel: "Nested lock
    /// was not taken").
    #[non_exhaustive]
    NestLockNotHeld {
        /// The thread.
        thread: ThreadDesc,
        /// The lock being acquired.
        acquiring: LockDesc,
        /// The name of the nest lock's map; for a re-acquisition after a release
        /// ([`relock`](crate::relock())), which keeps only its address, "at 0x…" (the text
        /// then reads "its nest lock at 0x… is not held").
        nest_lock: String,
        /// The thread's held locks.
        held: Vec<LockDesc>,
    },
    /// A release of a lock this thread does not hold (kernel: "bad unlock balance detected").
    #[non_exhaustive]
    BadUnlockBalance {
        /// The thread.
        thread: ThreadDesc,
        /// The lock being released (its site is the release site).
        releasing: LockDesc,
        /// The thread's held locks.
        held: Vec<LockDesc>,
    },
    /// A held lock's memory was freed or re-initialised (kernel: "held lock freed!").
    #[non_exhaustive]
    HeldLockFreed {
        /// The thread.
        thread: ThreadDesc,
        /// The held lock that lives in the freed memory.
        lock: LockDesc,
        /// The freed or re-initialised memory, `[start, end)`.
        range: (usize, usize),
        /// Where the memory was freed or re-initialised; `None` when a
        /// [`LockMap`](crate::LockMap) was dropped (its destructor does not know its caller).
        freed_at: Option<&'static Location<'static>>,
        /// The thread's held locks, after the freed lock was dropped from them.
        held: Vec<LockDesc>,
        /// The thread that freed the memory, when it is not `thread` (the holder): see
        /// [`check_held_lock_freed`](crate::check_held_lock_freed).
        freed_by: Option<ThreadDesc>,
    },
    /// A thread exited while holding locks (kernel: "lock held when returning to user space"):
    /// what it still held once all its thread-local destructors ran (on Unix; elsewhere, when
    /// lockdep's own ran). Not made for a thread that ends the process with `exit()`: the
    /// program is over, and no thread can wait for those locks.
    #[non_exhaustive]
    LockHeldAtExit {
        /// The thread.
        thread: ThreadDesc,
        /// The locks it still held.
        held: Vec<LockDesc>,
    },
    /// A dynamic key was misused (kernel: "key has not been registered!", and friends).
    #[non_exhaustive]
    KeyMisuse {
        /// The thread.
        thread: ThreadDesc,
        /// What went wrong.
        kind: KeyMisuse,
        /// The key's or the lock map's name, as `subject` says.
        key: String,
        /// Whose name `key` is.
        subject: MisuseSubject,
        /// Where. For an unregister by the key's drop, whose site is unknown, lockdep's
        /// placeholder site, for which [`is_key_drop`](crate::is_key_drop) is true.
        site: &'static Location<'static>,
        /// Where the key was registered, for misuse of a key's register or unregister (if it
        /// was registered at all); `None` for a lock map's misuse.
        registered_at: Option<&'static Location<'static>>,
        /// For [`KeyMisuse::UnregisterWhileHeld`]: every thread that held locks of the key,
        /// with those locks (the calling thread included, if it held any), waited for one
        /// ([`ThreadLocks::waiting`]), or slept in a condvar wait that will re-lock one
        /// ([`ThreadLocks::condvar`]; its guard lives on).
        /// A thread's `waiting` and `condvar` are kept only if they concern the key. Empty
        /// otherwise.
        held_by: Vec<ThreadLocks>,
    },
    /// A lock annotation did not hold (kernel: `lockdep_assert_held()` and friends).
    #[non_exhaustive]
    AssertionFailed {
        /// The thread.
        thread: ThreadDesc,
        /// Which assertion.
        kind: AssertKind,
        /// The lock map's name, or for an unnamed map its class's (`Mutex<u64>@src/bank.rs:12`);
        /// empty for `assert_none_held`.
        lock: String,
        /// Where. For a release by guard drop, whose site is unknown
        /// ([`release_guard`](crate::release_guard)), lockdep's placeholder site, for which
        /// [`is_guard_drop`](crate::is_guard_drop) is true.
        site: &'static Location<'static>,
        /// For [`AssertKind::ReleasedWhilePinned`], where the released lock was acquired.
        acquired_at: Option<&'static Location<'static>>,
        /// The thread's held locks.
        held: Vec<LockDesc>,
    },
    /// An instrumented task's poll returned `Pending` while a blocking lock taken during that
    /// poll was still held: the guard is held across an `.await`. No kernel counterpart (a
    /// kernel task cannot yield with a spinlock held unnoticed); clippy's `await_holding_lock`
    /// lint finds the cases visible inside one function. The lock stays held by the OS thread:
    /// another task polled on that thread that takes it deadlocks the thread, and is reported
    /// as [`Report::RecursiveLocking`] before it blocks.
    #[non_exhaustive]
    HeldAcrossAwait {
        /// The thread, naming the task (see [`ThreadDesc::task`]).
        thread: ThreadDesc,
        /// The task that awaited ([`TaskContext::id`](crate::TaskContext::id)).
        task: u64,
        /// The blocking lock still held; its site is where it was acquired.
        lock: LockDesc,
        /// The thread's held locks when the poll returned, the task's async locks included.
        held: Vec<LockDesc>,
    },
    /// A fixed limit was reached (kernel: "BUG: MAX_LOCKDEP_* too low!"). Unlike the kernel,
    /// the validator keeps running.
    #[non_exhaustive]
    CapacityExhausted {
        /// The thread.
        thread: ThreadDesc,
        /// Which limit.
        what: Capacity,
        /// The limit's value.
        limit: usize,
        /// Which exhaustion of this limit since the process started (or the last
        /// [`reset`](crate::reset)), from 1. An episode is one crossing of the limit: for
        /// classes, from the first class that could not be created until a class is created
        /// again; for the held-lock depth, one acquisition that takes a thread's depth past
        /// the limit. Episodes are rate limited: the 1st, 2nd, 4th, 8th, ... (powers of two)
        /// are delivered, the others only counted ([`Stats::repeats_suppressed`](crate::Stats)).
        episode: u64,
    },
}

/// The kind of a [`Report`] (its variant), for counts such as
/// [`Stats::suppressed_by_kind`](crate::Stats::suppressed_by_kind).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReportKind {
    /// [`Report::CircularDependency`].
    CircularDependency,
    /// [`Report::RecursiveLocking`].
    RecursiveLocking,
    /// [`Report::MissingNestingAnnotation`].
    MissingNestingAnnotation,
    /// [`Report::NestLockNotHeld`].
    NestLockNotHeld,
    /// [`Report::BadUnlockBalance`].
    BadUnlockBalance,
    /// [`Report::HeldLockFreed`].
    HeldLockFreed,
    /// [`Report::LockHeldAtExit`].
    LockHeldAtExit,
    /// [`Report::KeyMisuse`].
    KeyMisuse,
    /// [`Report::AssertionFailed`].
    AssertionFailed,
    /// [`Report::CapacityExhausted`].
    CapacityExhausted,
    /// [`Report::HeldAcrossAwait`].
    HeldAcrossAwait,
}

impl ReportKind {
    /// Every kind, in declaration order.
    pub const ALL: [ReportKind; 11] = [
        ReportKind::CircularDependency,
        ReportKind::RecursiveLocking,
        ReportKind::MissingNestingAnnotation,
        ReportKind::NestLockNotHeld,
        ReportKind::BadUnlockBalance,
        ReportKind::HeldLockFreed,
        ReportKind::LockHeldAtExit,
        ReportKind::KeyMisuse,
        ReportKind::AssertionFailed,
        ReportKind::CapacityExhausted,
        ReportKind::HeldAcrossAwait,
    ];

    /// The position of the kind in [`ALL`](Self::ALL).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// What the kind is called in a summary line ("possible recursive locking").
impl std::fmt::Display for ReportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReportKind::CircularDependency => "possible circular locking dependency",
            ReportKind::RecursiveLocking => "possible recursive locking",
            // The banner is the same as for one lock taken twice (the kernel's); the summary
            // tells the two apart in words that begin as the banner does (in parentheses: the
            // summary lists the kinds with commas).
            ReportKind::MissingNestingAnnotation => {
                "possible recursive locking (two locks of one class)"
            }
            ReportKind::NestLockNotHeld => "nest lock not held",
            ReportKind::BadUnlockBalance => "bad unlock balance",
            ReportKind::HeldLockFreed => "held lock freed",
            ReportKind::LockHeldAtExit => "lock held at thread exit",
            ReportKind::KeyMisuse => "lock class key misuse",
            ReportKind::AssertionFailed => "lock annotation failed",
            ReportKind::CapacityExhausted => "capacity exhausted",
            ReportKind::HeldAcrossAwait => "blocking lock held across an await",
        })
    }
}

impl Report {
    /// The report's kind (its variant).
    pub fn kind(&self) -> ReportKind {
        match self {
            Report::CircularDependency(_) => ReportKind::CircularDependency,
            Report::RecursiveLocking(_) => ReportKind::RecursiveLocking,
            Report::MissingNestingAnnotation(_) => ReportKind::MissingNestingAnnotation,
            Report::NestLockNotHeld { .. } => ReportKind::NestLockNotHeld,
            Report::BadUnlockBalance { .. } => ReportKind::BadUnlockBalance,
            Report::HeldLockFreed { .. } => ReportKind::HeldLockFreed,
            Report::LockHeldAtExit { .. } => ReportKind::LockHeldAtExit,
            Report::KeyMisuse { .. } => ReportKind::KeyMisuse,
            Report::AssertionFailed { .. } => ReportKind::AssertionFailed,
            Report::CapacityExhausted { .. } => ReportKind::CapacityExhausted,
            Report::HeldAcrossAwait { .. } => ReportKind::HeldAcrossAwait,
        }
    }

    /// Where the operation the report is about was made: the acquisition (a cycle, recursive
    /// locking, a missing annotation, a nest lock not held), the release (bad unlock
    /// balance), the free (a held lock freed, if known), the key's misuse, the failed
    /// annotation, or the acquisition of the lock held across an `.await`. `None` for a lock
    /// held at thread exit and a capacity report. A guard's drop is lockdep's placeholder site
    /// ([`is_guard_drop`](crate::is_guard_drop)).
    pub fn site(&self) -> Option<&'static Location<'static>> {
        match self {
            Report::CircularDependency(c) => Some(c.acquiring.site),
            Report::RecursiveLocking(s) | Report::MissingNestingAnnotation(s) => {
                Some(s.acquiring.site)
            }
            Report::NestLockNotHeld { acquiring, .. } => Some(acquiring.site),
            Report::BadUnlockBalance { releasing, .. } => Some(releasing.site),
            Report::HeldLockFreed { freed_at, .. } => *freed_at,
            Report::KeyMisuse { site, .. } | Report::AssertionFailed { site, .. } => Some(site),
            Report::HeldAcrossAwait { lock, .. } => Some(lock.site),
            Report::LockHeldAtExit { .. } | Report::CapacityExhausted { .. } => None,
        }
    }

    /// The thread the report is about.
    pub fn thread(&self) -> &ThreadDesc {
        match self {
            Report::CircularDependency(c) => &c.thread,
            Report::RecursiveLocking(s) | Report::MissingNestingAnnotation(s) => &s.thread,
            Report::NestLockNotHeld { thread, .. }
            | Report::BadUnlockBalance { thread, .. }
            | Report::HeldLockFreed { thread, .. }
            | Report::LockHeldAtExit { thread, .. }
            | Report::KeyMisuse { thread, .. }
            | Report::AssertionFailed { thread, .. }
            | Report::CapacityExhausted { thread, .. }
            | Report::HeldAcrossAwait { thread, .. } => thread,
        }
    }

    /// For a circular dependency, the class names around the cycle starting with the held
    /// lock: `[holding, acquiring, ..., holding]`. Empty for other reports.
    pub fn cycle_classes(&self) -> Vec<String> {
        match self {
            Report::CircularDependency(c) => {
                let mut v: Vec<String> = c.cycle.iter().map(|d| d.from.clone()).collect();
                if let Some(first) = v.first().cloned() {
                    v.push(first);
                }
                v
            }
            _ => Vec::new(),
        }
    }
}

/// A report is an error value too, so a callback can hand it to error-reporting code.
impl std::error::Error for Report {}
