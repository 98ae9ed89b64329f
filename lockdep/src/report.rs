//! Structured reports and their kernel-style text.
//!
//! Every finding is a [`Report`]. Its `Display` follows the layout of the kernel's lockdep
//! splats (`print_circular_bug()`, `print_deadlock_bug()`, `print_unlock_imbalance_bug()`,
//! ...): a banner, "is trying to acquire", "already holding", the existing dependency chain,
//! the CPU0/CPU1 unsafe scenario, "*** DEADLOCK ***" and the held locks. The wording is ours.

use std::fmt;
use std::panic::Location;

use crate::types::{ClassId, DepKind, Mode};

/// The thread a report is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadDesc {
    /// `std::thread::Thread::name()`, or `<unnamed>`.
    pub name: String,
    /// A validator-assigned thread number (unique in the process, never reused).
    pub id: u64,
}

/// One lock as it appears in a report: held, being acquired or being released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockDesc {
    /// The lock class ([`ClassId::NONE`] if the lock is not validated).
    pub class: ClassId,
    /// The class name, with `/subclass` appended for subclasses other than 0.
    pub class_name: String,
    /// The lock instance (the address of its [`LockMap`](crate::LockMap)).
    pub instance: usize,
    /// The acquire mode.
    pub mode: Mode,
    /// True if the lock was taken by a trylock.
    pub trylock: bool,
    /// Where it was acquired (or released, for a release report).
    pub site: &'static Location<'static>,
}

/// A stack trace captured when a dependency was first recorded (only with
/// [`set_capture_backtraces`](crate::set_capture_backtraces)). Compares by identity.
#[derive(Clone, Debug)]
pub struct Trace(pub std::sync::Arc<std::backtrace::Backtrace>);

impl PartialEq for Trace {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Trace {}

/// One dependency of a cycle, with both of its acquisition sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The class that was held.
    pub from: String,
    /// The class that was acquired while `from` was held.
    pub to: String,
    /// The dependency kind (EN/SN/ER/SR).
    pub kind: DepKind,
    /// Where `from` was acquired when the dependency was recorded.
    pub from_site: &'static Location<'static>,
    /// Where `to` was acquired when the dependency was recorded.
    pub to_site: &'static Location<'static>,
    /// The full stack of that acquisition, if backtrace capture was on when the dependency
    /// was recorded (for `cycle[0]`, the current stack if capture is on).
    pub trace: Option<Trace>,
}

/// A possible circular locking dependency (a strong cycle in the class graph).
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
    /// The thread's held locks, bottom first.
    pub held: Vec<LockDesc>,
}

/// A lock of a class this thread already holds, taken in a way that can self-deadlock.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyMisuse {
    /// A lock used a key that is not registered (never registered, or already unregistered).
    NotRegistered,
    /// `register` on a key that is already registered.
    DoubleRegister,
    /// `unregister` on a key that is not registered.
    UnknownKey,
    /// `unregister` while this thread holds a lock of one of the key's classes.
    UnregisterWhileHeld,
    /// A subclass of [`MAX_SUBCLASSES`](crate::MAX_SUBCLASSES) or more.
    InvalidSubclass,
}

/// Which annotation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// The per-thread held-lock depth limit ([`set_max_depth`](crate::set_max_depth)); the
    /// extra locks are still tracked and validated.
    HeldLocks,
    /// The number of live lock classes ([`MAX_CLASSES`](crate::MAX_CLASSES)); locks of new
    /// classes are tracked but not validated until classes are freed.
    Classes,
}

/// Everything the validator can report.
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
    NestLockNotHeld {
        /// The thread.
        thread: ThreadDesc,
        /// The lock being acquired.
        acquiring: LockDesc,
        /// The name of the nest lock's map.
        nest_lock: String,
        /// The thread's held locks.
        held: Vec<LockDesc>,
    },
    /// A release of a lock this thread does not hold (kernel: "bad unlock balance detected").
    BadUnlockBalance {
        /// The thread.
        thread: ThreadDesc,
        /// The lock being released (its site is the release site).
        releasing: LockDesc,
        /// The thread's held locks.
        held: Vec<LockDesc>,
    },
    /// A held lock's memory was freed or re-initialised (kernel: "held lock freed!").
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
    },
    /// A thread exited while holding locks (kernel: "lock held when returning to user space").
    LockHeldAtExit {
        /// The thread.
        thread: ThreadDesc,
        /// The locks it still held.
        held: Vec<LockDesc>,
    },
    /// A dynamic key was misused (kernel: "key has not been registered!", and friends).
    KeyMisuse {
        /// The thread.
        thread: ThreadDesc,
        /// What went wrong.
        kind: KeyMisuse,
        /// The key's (or lock map's) name.
        key: String,
        /// Where.
        site: &'static Location<'static>,
    },
    /// A lock annotation did not hold (kernel: `lockdep_assert_held()` and friends).
    AssertionFailed {
        /// The thread.
        thread: ThreadDesc,
        /// Which assertion.
        kind: AssertKind,
        /// The lock map's name (empty for `assert_none_held`).
        lock: String,
        /// Where.
        site: &'static Location<'static>,
        /// The thread's held locks.
        held: Vec<LockDesc>,
    },
    /// A fixed limit was reached (kernel: "BUG: MAX_LOCKDEP_* too low!"). Unlike the kernel,
    /// the validator keeps running.
    CapacityExhausted {
        /// The thread.
        thread: ThreadDesc,
        /// Which limit.
        what: Capacity,
        /// The limit's value.
        limit: usize,
    },
}

impl Report {
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
            | Report::CapacityExhausted { thread, .. } => thread,
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

fn banner(f: &mut fmt::Formatter<'_>, title: &str) -> fmt::Result {
    let n = title.len();
    writeln!(f)?;
    writeln!(f, "{}", "=".repeat(n))?;
    writeln!(f, "{title}")?;
    writeln!(f, "{}", "-".repeat(n))
}

fn lock_line(f: &mut fmt::Formatter<'_>, l: &LockDesc) -> fmt::Result {
    let r = match l.mode {
        Mode::Exclusive => "",
        Mode::Read => " (read)",
        Mode::RecursiveRead => " (recursive read)",
    };
    let t = if l.trylock { " (trylock)" } else { "" };
    writeln!(
        f,
        "{:#x} ({}){}{}, at: {}",
        l.instance, l.class_name, r, t, l.site
    )
}

fn held_block(f: &mut fmt::Formatter<'_>, t: &ThreadDesc, held: &[LockDesc]) -> fmt::Result {
    if held.is_empty() {
        return writeln!(f, "no locks held by {}/{}.", t.name, t.id);
    }
    let s = if held.len() == 1 { "" } else { "s" };
    writeln!(f, "{} lock{s} held by {}/{}:", held.len(), t.name, t.id)?;
    for (i, l) in held.iter().enumerate() {
        write!(f, " #{i}: ")?;
        lock_line(f, l)?;
    }
    Ok(())
}

fn trace(f: &mut fmt::Formatter<'_>, d: &Dependency) -> fmt::Result {
    match &d.trace {
        Some(t) => writeln!(f, "{}", t.0),
        None => Ok(()),
    }
}

fn circular(f: &mut fmt::Formatter<'_>, c: &CircularDependency) -> fmt::Result {
    banner(f, "WARNING: possible circular locking dependency detected")?;
    writeln!(
        f,
        "{}/{} is trying to acquire lock:",
        c.thread.name, c.thread.id
    )?;
    lock_line(f, &c.acquiring)?;
    writeln!(f, "\nbut task is already holding lock:")?;
    lock_line(f, &c.holding)?;
    writeln!(f, "\nwhich lock already depends on the new lock.\n\n")?;
    writeln!(f, "the existing dependency chain (in reverse order) is:")?;
    let n = c.cycle.len();
    for (k, d) in c.cycle.iter().enumerate().skip(1).rev() {
        writeln!(f, "\n-> #{k} ({}):", d.to)?;
        writeln!(f, "       {} acquired at {} [{}]", d.to, d.to_site, d.kind)?;
        writeln!(
            f,
            "       while holding {} acquired at {}",
            d.from, d.from_site
        )?;
        trace(f, d)?;
    }
    if let Some(d) = c.cycle.first() {
        writeln!(f, "\n-> #0 ({}):", d.to)?;
        writeln!(
            f,
            "       {} being acquired at {} [{}]",
            d.to, d.to_site, d.kind
        )?;
        writeln!(
            f,
            "       while holding {} acquired at {}",
            d.from, d.from_site
        )?;
        trace(f, d)?;
    }
    writeln!(f, "\nother info that might help us debug this:\n")?;
    // The class that depends on `holding` last on the path (the kernel's "parent").
    let parent = c.cycle.last().map(|d| d.from.clone()).unwrap_or_default();
    let (held_name, new_name) = (&c.holding.class_name, &c.acquiring.class_name);
    if n > 2 {
        writeln!(f, "Chain exists of:")?;
        writeln!(f, "  {new_name} --> {parent} --> {held_name}\n")?;
    }
    let (hv, nv) = (c.holding.mode.verb(), c.acquiring.mode.verb());
    writeln!(f, " Possible unsafe locking scenario:\n")?;
    writeln!(f, "       CPU0                    CPU1")?;
    writeln!(f, "       ----                    ----")?;
    writeln!(f, "  {hv}({held_name});")?;
    writeln!(f, "                               lock({parent});")?;
    writeln!(f, "                               {hv}({held_name});")?;
    writeln!(f, "  {nv}({new_name});")?;
    writeln!(f, "\n *** DEADLOCK ***\n")?;
    held_block(f, &c.thread, &c.held)
}

fn same_class(f: &mut fmt::Formatter<'_>, s: &SameClass, same_instance: bool) -> fmt::Result {
    banner(f, "WARNING: possible recursive locking detected")?;
    writeln!(
        f,
        "{}/{} is trying to acquire lock:",
        s.thread.name, s.thread.id
    )?;
    lock_line(f, &s.acquiring)?;
    writeln!(f, "\nbut task is already holding lock:")?;
    lock_line(f, &s.holding)?;
    writeln!(f, "\nother info that might help us debug this:")?;
    writeln!(f, " Possible unsafe locking scenario:\n")?;
    writeln!(f, "       CPU0")?;
    writeln!(f, "       ----")?;
    writeln!(f, "  {}({});", s.holding.mode.verb(), s.holding.class_name)?;
    writeln!(
        f,
        "  {}({});",
        s.acquiring.mode.verb(),
        s.acquiring.class_name
    )?;
    writeln!(f, "\n *** DEADLOCK ***\n")?;
    if !same_instance {
        writeln!(f, " May be due to missing lock nesting notation\n")?;
    }
    held_block(f, &s.thread, &s.held)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Report::CircularDependency(c) => circular(f, c),
            Report::RecursiveLocking(s) => same_class(f, s, true),
            Report::MissingNestingAnnotation(s) => same_class(f, s, false),
            Report::NestLockNotHeld {
                thread,
                acquiring,
                nest_lock,
                held,
            } => {
                banner(f, "WARNING: Nested lock was not taken")?;
                writeln!(
                    f,
                    "{}/{} is trying to acquire lock:",
                    thread.name, thread.id
                )?;
                lock_line(f, acquiring)?;
                writeln!(f, "\nbut its nest lock {nest_lock} is not held.\n")?;
                held_block(f, thread, held)
            }
            Report::BadUnlockBalance {
                thread,
                releasing,
                held,
            } => {
                banner(f, "WARNING: bad unlock balance detected!")?;
                writeln!(
                    f,
                    "{}/{} is trying to release lock ({}) at:",
                    thread.name, thread.id, releasing.class_name
                )?;
                writeln!(f, "{}", releasing.site)?;
                writeln!(f, "but there are no more locks to release!\n")?;
                writeln!(f, "other info that might help us debug this:")?;
                held_block(f, thread, held)
            }
            Report::HeldLockFreed {
                thread,
                lock,
                range,
                freed_at,
                held,
            } => {
                banner(f, "WARNING: held lock freed!")?;
                writeln!(
                    f,
                    "{}/{} is freeing memory {:#x}-{:#x}, with a lock still held there!",
                    thread.name,
                    thread.id,
                    range.0,
                    range.1.saturating_sub(1)
                )?;
                match freed_at {
                    Some(site) => writeln!(f, "freed or re-initialised at: {site}")?,
                    None => writeln!(f, "the lock map itself was dropped")?,
                }
                lock_line(f, lock)?;
                writeln!(f)?;
                held_block(f, thread, held)
            }
            Report::LockHeldAtExit { thread, held } => {
                banner(f, "WARNING: lock held when thread exits!")?;
                writeln!(
                    f,
                    "{}/{} is exiting with locks still held!",
                    thread.name, thread.id
                )?;
                held_block(f, thread, held)
            }
            Report::KeyMisuse {
                thread,
                kind,
                key,
                site,
            } => {
                let title = match kind {
                    KeyMisuse::NotRegistered => "BUG: lock class key has not been registered!",
                    KeyMisuse::DoubleRegister => "WARNING: lock class key registered twice!",
                    KeyMisuse::UnknownKey => "WARNING: unregistering an unknown lock class key!",
                    KeyMisuse::UnregisterWhileHeld => {
                        "WARNING: unregistering a lock class key while a lock of it is held!"
                    }
                    KeyMisuse::InvalidSubclass => "BUG: looking up invalid subclass!",
                };
                banner(f, title)?;
                writeln!(f, "{}/{}: key ({key}) at {site}", thread.name, thread.id)?;
                if *kind == KeyMisuse::NotRegistered {
                    writeln!(
                        f,
                        "maybe the key was dropped or unregistered before this use?"
                    )?;
                }
                Ok(())
            }
            Report::AssertionFailed {
                thread,
                kind,
                lock,
                site,
                held,
            } => {
                banner(f, "WARNING: lock annotation failed!")?;
                writeln!(
                    f,
                    "{}/{}: {kind:?} for lock ({lock}) at {site}\n",
                    thread.name, thread.id
                )?;
                held_block(f, thread, held)
            }
            Report::CapacityExhausted {
                thread,
                what,
                limit,
            } => {
                let what_s = match what {
                    Capacity::HeldLocks => "MAX_LOCK_DEPTH",
                    Capacity::Classes => "MAX_LOCKDEP_CLASSES",
                };
                banner(f, &format!("BUG: {what_s} too low!"))?;
                writeln!(
                    f,
                    "{}/{}: the limit is {limit}; the validator keeps running.",
                    thread.name, thread.id
                )
            }
        }
    }
}
