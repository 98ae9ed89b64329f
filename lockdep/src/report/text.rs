//! The kernel-style text of a report (its `Display`).
//!
//! The layout follows the kernel's lockdep splats (`print_circular_bug()`,
//! `print_deadlock_bug()`, `print_unlock_imbalance_bug()`, ...): a banner, "is trying to
//! acquire", "already holding", the existing dependency chain, the CPU0/CPU1 unsafe scenario,
//! "*** DEADLOCK ***" and the held locks. The wording is ours, and so are the additions: a
//! cycle report ends with what to do and the suppression line that declares it harmless, and a
//! captured stack starts at the caller of the lock method (the validator's and the lock's own
//! frames counted in one line).

use std::fmt;
use std::panic::Location;

use super::types::{
    Capacity, CircularDependency, Dependency, KeyMisuse, LockDesc, LockInstance, MisuseSubject,
    Report, SameClass, ThreadDesc,
};
use super::types::{TaskLocks, ThreadLocks};
use crate::mode::{DepKind, Mode};
use crate::site::{is_guard_drop, is_key_drop};

/// The kernel's report banner: a rule of `=`, the title, a rule of `-`, each as wide as the
/// title, after an empty line.
pub(crate) fn banner(f: &mut fmt::Formatter<'_>, title: &str) -> fmt::Result {
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
        Mode::Upgradable => " (upgradable read)",
    };
    let t = if l.trylock { " (trylock)" } else { "" };
    // The instance's own name, when the class is named otherwise.
    let n = match l.name {
        Some(name) if name != l.class_name => format!(" \"{name}\""),
        _ => String::new(),
    };
    writeln!(
        f,
        "{:#x} ({}){}{}{}, at: {}",
        l.instance, l.class_name, n, r, t, l.site
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
    let Some(t) = &d.trace else {
        return Ok(());
    };
    let text = t.0.to_string();
    let (left_out, rest) = past_own_frames(&text);
    if left_out > 0 {
        let s = if left_out == 1 { "" } else { "s" };
        writeln!(
            f,
            "   ({left_out} frame{s} of the validator and the lock left out)"
        )?;
    }
    writeln!(f, "{rest}")
}

/// The symbol prefixes of the frames a captured stack begins with before the caller's own:
/// the validator, the lock wrappers (the compat crate's frames are `parking_lot::`) and
/// lock_api's.
const OWN_FRAMES: [&str; 8] = [
    "lockdep::",
    "<lockdep::",
    "instrumented_locks::",
    "<instrumented_locks::",
    "lock_api::",
    "<lock_api::",
    "parking_lot::",
    "<parking_lot::",
];

/// The prefixes of the standard library's frames, which the own frames call through (the
/// capture itself, closures, `OnceCell`, inlined helpers of a debug build).
const LIBRARY_FRAMES: [&str; 6] = [
    "core::", "<core::", "std::", "<std::", "alloc::", "<alloc::",
];

/// `text` (a `std::backtrace::Backtrace` as it prints: a line `N: symbol` per frame, then
/// its `at file:line` lines) from the frame after the last of the validator's and the lock's
/// own frames that precede the caller's first one ([`OWN_FRAMES`], with the standard
/// library's frames among them), and the number of frames left out; all of it if it has none.
fn past_own_frames(text: &str) -> (usize, &str) {
    let (mut frames, mut cut) = (0, None);
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let symbol = line
            .trim_start()
            .split_once(": ")
            .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|(_, s)| s);
        offset += line.len();
        let Some(symbol) = symbol else { continue };
        frames += 1;
        if OWN_FRAMES.iter().any(|p| symbol.starts_with(p)) {
            cut = Some((frames, offset));
        } else if !LIBRARY_FRAMES.iter().any(|p| symbol.starts_with(p)) {
            break;
        }
    }
    let Some((left_out, at)) = cut else {
        return (0, text.trim_end());
    };
    // From the line after the last own frame's header: skip its `at` lines.
    let rest = &text[at..];
    let next = rest
        .split_inclusive('\n')
        .take_while(|l| l.trim_start().starts_with("at "))
        .map(str::len)
        .sum::<usize>();
    (left_out, rest[next..].trim_end())
}

/// The head of a report about an acquisition: the banner, the lock being acquired and, for a
/// conflict between two locks, the held one.
fn acquisition(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    thread: &ThreadDesc,
    acquiring: &LockDesc,
    holding: Option<&LockDesc>,
) -> fmt::Result {
    banner(f, title)?;
    writeln!(
        f,
        "{}/{} is trying to acquire lock:",
        thread.name, thread.id
    )?;
    lock_line(f, acquiring)?;
    match holding {
        Some(h) => {
            writeln!(f, "\nbut task is already holding lock:")?;
            lock_line(f, h)
        }
        None => Ok(()),
    }
}

/// An instance as a chain link shows it: its address, and its name if it has one.
struct Instance<'a>(&'a LockInstance);

impl fmt::Display for Instance<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.name {
            Some(name) => write!(f, "{:#x} \"{name}\"", self.0.address),
            None => write!(f, "{:#x}", self.0.address),
        }
    }
}

/// How a chain link names the two ends of dependency `d`: by class, or, in a cycle among
/// instances of one class, by instance (its name, or the class, and its address).
fn ends(d: &Dependency, by_instance: bool) -> (String, String) {
    if by_instance {
        (
            label(&d.from, &d.from_instance),
            label(&d.to, &d.to_instance),
        )
    } else {
        (d.from.clone(), d.to.clone())
    }
}

/// An instance of class `class`: `name 0x...`, or `class 0x...` if it has no name.
fn label(class: &str, i: &LockInstance) -> String {
    format!("{} {:#x}", i.name.unwrap_or(class), i.address)
}

/// What [`chain_link`] is told for the new dependency of a condvar notification.
const NOTIFIED: &str = "(notified)";

/// Dependency `#k` of a cycle's chain; `acquired` says how its target was taken
/// ([`NOTIFIED`]: the new dependency of a condvar notification).
fn chain_link(
    f: &mut fmt::Formatter<'_>,
    k: usize,
    d: &Dependency,
    acquired: &str,
    by_instance: bool,
) -> fmt::Result {
    let (from, to) = ends(d, by_instance);
    writeln!(f, "\n-> #{k} ({to}):")?;
    if acquired == NOTIFIED {
        // The new dependency of a notification: `from` is the condvar, notified at
        // `from_site`, after `to` was taken at `to_site`.
        writeln!(f, "       {from} notified at {} [{}]", d.from_site, d.kind)?;
        writeln!(f, "       while holding {to} acquired at {}", d.to_site)?;
    } else {
        writeln!(f, "       {to} {acquired} at {} [{}]", d.to_site, d.kind)?;
        writeln!(f, "       while holding {from} acquired at {}", d.from_site)?;
    }
    if !by_instance {
        writeln!(
            f,
            "       first seen on {} -> {}",
            Instance(&d.from_instance),
            Instance(&d.to_instance)
        )?;
    }
    trace(f, d)
}

/// The one-line legend of the dependency tags of a cycle's chain (see [`DepKind`]).
const TAGS: &str = "([XY]: X = how the earlier lock was held: E exclusive, S reader, U upgradable \
                    read; Y = how the later one was taken: N writer or plain reader, R recursive \
                    reader, U upgradable read)";

/// A release site as a report shows it: "(guard drop)" for the placeholder of a release
/// whose site is unknown.
fn release_site(site: &Location<'_>) -> String {
    if is_guard_drop(site) {
        "(guard drop)".to_owned()
    } else {
        site.to_string()
    }
}

/// A cycle of more than twice this many links prints this many at each end and a count of
/// the rest (all of them are in [`CircularDependency::cycle`]).
const SHOWN_LINKS: usize = 8;

fn circular(f: &mut fmt::Formatter<'_>, c: &CircularDependency) -> fmt::Result {
    let title = "WARNING: possible circular locking dependency detected";
    if c.notify {
        // The new dependency is condvar -> held lock: the notifier took the lock before it
        // notified, so a waiter of the condvar waits for that lock too.
        banner(f, title)?;
        writeln!(
            f,
            "{}/{} is notifying condition variable:",
            c.thread.name, c.thread.id
        )?;
        lock_line(f, &c.holding)?;
        writeln!(f, "\nwhile holding lock:")?;
        lock_line(f, &c.acquiring)?;
        writeln!(
            f,
            "\nso the condvar's waiters depend on that lock, which already depends on the \
             condvar.\n\n"
        )?;
    } else {
        acquisition(f, title, &c.thread, &c.acquiring, Some(&c.holding))?;
        writeln!(f, "\nwhich lock already depends on the new lock.\n\n")?;
    }
    writeln!(f, "the existing dependency chain (in reverse order) is:")?;
    writeln!(f, "{TAGS}")?;
    let n = c.cycle.len();
    for (k, d) in c.cycle.iter().enumerate().rev() {
        if n > 2 * SHOWN_LINKS && (SHOWN_LINKS..n - SHOWN_LINKS).contains(&k) {
            if k == n - SHOWN_LINKS - 1 {
                writeln!(f, "\n... {} more links ...", n - 2 * SHOWN_LINKS)?;
            }
            continue;
        }
        let what = match k {
            0 if c.notify => NOTIFIED,
            0 => "being acquired",
            _ => "acquired",
        };
        chain_link(f, k, d, what, c.instance_order)?;
    }
    writeln!(f, "\nother info that might help us debug this:\n")?;
    if c.instance_order {
        writeln!(
            f,
            "the cycle is among instances of one class ({}), taken in different orders\n",
            c.holding.class_name
        )?;
    }
    // The class that depends on `holding` last on the path (the kernel's "parent"); for a
    // cycle among instances of one class, the instances themselves.
    let last = c.cycle.last();
    let (parent, held_name, new_name) = if c.instance_order {
        let of = |l: &LockDesc| {
            let i = LockInstance {
                address: l.instance,
                name: l.name,
            };
            label(&l.class_name, &i)
        };
        (
            last.map(|d| ends(d, true).0).unwrap_or_default(),
            of(&c.holding),
            of(&c.acquiring),
        )
    } else {
        (
            last.map(|d| d.from.clone()).unwrap_or_default(),
            c.holding.class_name.clone(),
            c.acquiring.class_name.clone(),
        )
    };
    if n > 2 {
        writeln!(f, "Chain exists of:")?;
        writeln!(f, "  {new_name} --> {parent} --> {held_name}\n")?;
    }
    let (hv, nv) = (c.holding.mode.verb(), c.acquiring.mode.verb());
    writeln!(f, " Possible unsafe locking scenario:\n")?;
    writeln!(f, "       CPU0                    CPU1")?;
    writeln!(f, "       ----                    ----")?;
    if c.notify {
        // CPU0 waits holding what CPU1 must take before it notifies.
        writeln!(f, "  lock({parent});")?;
        writeln!(f, "  wait({held_name});")?;
        writeln!(f, "                               {nv}({new_name});")?;
        writeln!(f, "                               notify({held_name});")?;
        writeln!(f, "\n *** DEADLOCK ***\n")?;
        return held_block(f, &c.thread, &c.held);
    }
    // How CPU1 holds `parent`: as the last recorded dependency found it held.
    let pv = last.map_or("lock", |d| held_verb(d.kind));
    writeln!(f, "  {hv}({held_name});")?;
    writeln!(f, "                               {pv}({parent});")?;
    writeln!(f, "                               {hv}({held_name});")?;
    writeln!(f, "  {nv}({new_name});")?;
    writeln!(f, "\n *** DEADLOCK ***\n")?;
    if all_held_shared(c) {
        writeln!(f, "{ALL_READERS}")?;
    }
    let classes = c
        .cycle
        .iter()
        .flat_map(|d| [d.from.as_str(), d.to.as_str()]);
    std_site_note(f, classes)?;
    held_block(f, &c.thread, &c.held)?;
    what_to_do(f, c)
}

/// The last paragraph of a cycle report: how such a cycle is fixed, and the suppression line
/// that declares it harmless (for a cycle of classes; one among instances of a class is about
/// their order, which no line of classes can name).
fn what_to_do(f: &mut fmt::Formatter<'_>, c: &CircularDependency) -> fmt::Result {
    writeln!(f)?;
    if c.instance_order {
        writeln!(
            f,
            "to fix: take the instances of {} in one order everywhere (by a key of theirs,",
            c.holding.class_name
        )?;
        return writeln!(f, "or by their address), or hold only one at a time.");
    }
    // The cycle's classes in the order of its dependencies, each once.
    let mut names: Vec<&str> = Vec::new();
    for d in c.cycle.iter().rev() {
        for n in [d.from.as_str(), d.to.as_str()] {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    writeln!(
        f,
        "to fix: take these locks in one order everywhere, or release one before taking the next."
    )?;
    writeln!(
        f,
        "If the orders can never run at the same time, declare it with the line"
    )?;
    writeln!(f, "  circular: {}", names.join(" -> "))?;
    writeln!(
        f,
        "in the file named by {} (or with `lockdep::suppress` in code).",
        super::SUPPRESSIONS_ENV
    )
}

/// Whether the construction site in a class name (`Mutex<u64>@library/core/src/ops/function.rs:250`)
/// lies in the standard library: the lock was made by a constructor called from std, most
/// often one passed as a function value (`.map(Mutex::new)`, `unwrap_or_else(Mutex::default)`),
/// since `#[track_caller]` then stops at std's call. Such a class is every lock of its type
/// made that way, in the whole program.
fn is_std_site(class_name: &str) -> bool {
    class_name.rsplit_once('@').is_some_and(|(_, site)| {
        [
            "library/core/src/",
            "library/alloc/src/",
            "library/std/src/",
        ]
        .iter()
        .any(|lib| site.starts_with(lib))
    })
}

/// A paragraph for the first of `classes` whose construction site is in the standard library
/// (see [`is_std_site`]), else nothing.
fn std_site_note<'a>(
    f: &mut fmt::Formatter<'_>,
    classes: impl IntoIterator<Item = &'a str>,
) -> fmt::Result {
    let Some(class) = classes.into_iter().find(|c| is_std_site(c)) else {
        return Ok(());
    };
    let kind = class.split(['<', '@']).next().unwrap_or("Mutex");
    writeln!(
        f,
        " The class {class} has its construction site in the\n \
         standard library: a constructor passed as a function value (`.map({kind}::new)`)\n \
         names std's call as its site, so every lock of its type made that way, anywhere in\n \
         the program, is this one class. Construct it in a closure\n \
         (`.map(|v| {kind}::new(v))`) to give each site a class of its own.\n"
    )
}

/// The scenario's verb for the lock a dependency of kind `k` was recorded under.
fn held_verb(k: DepKind) -> &'static str {
    if k.starts_shared() {
        "rlock"
    } else if k.starts_upgradable() {
        "ulock"
    } else {
        "lock"
    }
}

/// Whether every lock of the cycle is held as a plain or recursive reader where the cycle
/// needs it held: the held lock of the new dependency, and the `from` of each recorded one.
fn all_held_shared(c: &CircularDependency) -> bool {
    matches!(c.holding.mode, Mode::Read | Mode::RecursiveRead)
        && c.cycle.iter().skip(1).all(|d| d.kind.starts_shared())
}

/// What a cycle whose locks are all held as readers needs to deadlock.
const ALL_READERS: &str = " Every lock of this cycle is held as a reader: it deadlocks only if \
each of them is also\n write-locked (or upgraded) by some thread, which then waits for its \
readers or, queued,\n makes the next reader wait (parking_lot's and std's RwLock let no reader \
pass a queued\n writer). A lock that no thread ever write-locks cannot close it.\n";

fn same_class(f: &mut fmt::Formatter<'_>, s: &SameClass, same_instance: bool) -> fmt::Result {
    let title = "WARNING: possible recursive locking detected";
    acquisition(f, title, &s.thread, &s.acquiring, Some(&s.holding))?;
    writeln!(f, "\nother info that might help us debug this:")?;
    writeln!(f, " Possible unsafe locking scenario:\n")?;
    writeln!(f, "       CPU0")?;
    writeln!(f, "       ----")?;
    // One instance under two subclasses: the scenario names the instance, twice.
    let across = same_instance && s.holding.class != s.acquiring.class;
    let shown = |l: &LockDesc| match l.name {
        Some(name) if across => name.to_owned(),
        _ => l.class_name.clone(),
    };
    writeln!(f, "  {}({});", s.holding.mode.verb(), shown(&s.holding))?;
    writeln!(f, "  {}({});", s.acquiring.mode.verb(), shown(&s.acquiring))?;
    writeln!(f, "\n *** DEADLOCK ***\n")?;
    if !same_instance {
        writeln!(f, " May be due to missing lock nesting notation\n")?;
        std_site_note(f, [s.holding.class_name.as_str()])?;
    } else if across {
        writeln!(
            f,
            " The lock being acquired is that held lock itself, under another subclass: a\n \
             self-deadlock, which no lock nesting annotation makes valid.\n"
        )?;
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
                let title = "WARNING: Nested lock was not taken";
                acquisition(f, title, thread, acquiring, None)?;
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
                writeln!(f, "{}", release_site(releasing.site))?;
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
                freed_by,
            } => {
                banner(f, "WARNING: held lock freed!")?;
                match freed_by {
                    None => writeln!(
                        f,
                        "{}/{} is freeing memory {:#x}-{:#x}, with a lock still held there!",
                        thread.name,
                        thread.id,
                        range.0,
                        range.1.saturating_sub(1)
                    )?,
                    Some(by) => writeln!(
                        f,
                        "{}/{} is freeing memory {:#x}-{:#x}, with a lock of {}/{} still held \
                         there!",
                        by.name,
                        by.id,
                        range.0,
                        range.1.saturating_sub(1),
                        thread.name,
                        thread.id
                    )?,
                }
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
                subject,
                site,
                registered_at,
                held_by,
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
                let label = match subject {
                    MisuseSubject::Key => "key",
                    MisuseSubject::Lock => "lock",
                };
                let shown = if is_key_drop(site) {
                    "(key drop)".to_owned()
                } else {
                    site.to_string()
                };
                writeln!(
                    f,
                    "{}/{}: {label} ({key}) at {shown}",
                    thread.name, thread.id
                )?;
                if let Some(r) = registered_at {
                    writeln!(f, "the key was registered at {r}")?;
                }
                if *kind == KeyMisuse::NotRegistered {
                    writeln!(
                        f,
                        "maybe the key was dropped or unregistered before this use?"
                    )?;
                }
                for t in held_by {
                    writeln!(f)?;
                    thread_locks(f, t)?;
                }
                Ok(())
            }
            Report::AssertionFailed {
                thread,
                kind,
                lock,
                site,
                acquired_at,
                held,
            } => {
                banner(f, "WARNING: lock annotation failed!")?;
                let acquired = match acquired_at {
                    Some(a) if is_guard_drop(site) => format!(" of the lock acquired at {a}"),
                    _ => String::new(),
                };
                writeln!(
                    f,
                    "{}/{}: {kind:?} for lock ({lock}) at {}{acquired}\n",
                    thread.name,
                    thread.id,
                    release_site(site)
                )?;
                held_block(f, thread, held)
            }
            Report::HeldAcrossAwait {
                thread, lock, held, ..
            } => {
                banner(f, "WARNING: blocking lock held across an await!")?;
                writeln!(
                    f,
                    "{}/{} awaits (its poll returned Pending) while holding a blocking lock:",
                    thread.name, thread.id
                )?;
                lock_line(f, lock)?;
                writeln!(
                    f,
                    "\nthe lock stays held by this OS thread until the task resumes: another \
                     task polled on it that takes the lock blocks the thread forever."
                )?;
                writeln!(f)?;
                held_block(f, thread, held)
            }
            Report::CapacityExhausted {
                thread,
                what,
                limit,
                episode,
            } => {
                let what_s = match what {
                    Capacity::HeldLocks => "MAX_LOCK_DEPTH",
                    Capacity::Classes => "MAX_LOCKDEP_CLASSES",
                    Capacity::InstancePairs => "MAX_INSTANCE_PAIRS",
                };
                banner(f, &format!("BUG: {what_s} too low!"))?;
                writeln!(
                    f,
                    "{}/{}: the limit is {limit}; the validator keeps running.",
                    thread.name, thread.id
                )?;
                if *what == Capacity::InstancePairs {
                    writeln!(
                        f,
                        "No new pair of two locks of one class is recorded until locks with                          pairs are freed: until then an inversion between two instances of                          a class can go unreported (class dependencies are still checked).                          Pairs are kept for as long as their locks live: many live locks of                          one class nested in many orders fill it."
                    )?;
                }
                if *episode > 1 {
                    writeln!(
                        f,
                        "This is episode {episode} of this limit; episodes 1, 2, 4, 8, ... \
                         are reported, every one is counted (lockdep::stats())."
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// One thread of an all-threads dump, in the layout of the kernel's `debug_show_all_locks()`:
/// `2 locks held by name/id:` with a `#i:` line per lock, then the lock it is blocked on, or
/// the condvar wait it sleeps in and the mutex that wait will re-lock.
pub(crate) fn thread_locks(f: &mut fmt::Formatter<'_>, t: &ThreadLocks) -> fmt::Result {
    held_block(f, &t.thread, &t.held)?;
    if let Some(w) = &t.waiting {
        write!(f, " blocked for {:.3}s on: ", w.waited.as_secs_f64())?;
        lock_line(f, &w.lock)?;
    }
    if let Some(c) = &t.condvar {
        write!(
            f,
            " sleeping for {:.3}s on condvar {:#x} ({}",
            c.slept.as_secs_f64(),
            c.condvar,
            c.name
        )?;
        if let Some(site) = c.site {
            write!(f, ", made at {site}")?;
        }
        write!(f, "), to re-lock: ")?;
        lock_line(f, &c.mutex)?;
    }
    Ok(())
}

impl fmt::Display for TaskLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.held.len() == 1 { "" } else { "s" };
        match self.held.len() {
            0 => writeln!(
                f,
                "no locks held by task {} (between polls, on no thread).",
                self.task
            )?,
            n => writeln!(
                f,
                "{n} lock{s} held by task {} (between polls, on no thread):",
                self.task
            )?,
        }
        for (i, l) in self.held.iter().enumerate() {
            write!(f, " #{i}: ")?;
            lock_line(f, l)?;
        }
        if let Some(l) = &self.waiting {
            write!(f, " waiting for: ")?;
            lock_line(f, l)?;
        }
        Ok(())
    }
}

impl fmt::Display for ThreadLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        thread_locks(f, self)
    }
}
