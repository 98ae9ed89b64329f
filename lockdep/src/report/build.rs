//! Every report the validator makes is built here, from the thread's held stack
//! ([`held`](crate::held)) and the class table ([`graph`](crate::graph)).
//!
//! The callers hold what a builder reads (the thread state; the graph lock for class names and
//! recorded dependencies), build, release both, and only then deliver
//! ([`policy`](super::policy)), so a handler never runs inside the validator.

use std::panic::Location;

use super::types::{
    AssertKind, Capacity, CircularDependency, CondvarWait, Dependency, KeyMisuse, LockDesc,
    LockInstance, MisuseSubject, Report, SameClass, ThreadDesc, ThreadLocks, WaitingFor,
};
use crate::class::{ClassId, KeyRef};
use crate::current_task;
use crate::graph::edges::{Edge, EdgeSites, Seen};
use crate::graph::search::Step;
use crate::graph::{Graph, Trace};
use crate::held::record::{self, SharedEntry, Snapshot};
use crate::held::{HeldLock, ThreadState};
use crate::limits::{MAX_CLASSES, MAX_INSTANCE_PAIRS};
use crate::mode::{Kind, Mode};

type Site = &'static Location<'static>;

// ------------------------------------------------------------------------------ descriptions

/// The thread that owns `st`.
pub(crate) fn thread(st: &ThreadState) -> ThreadDesc {
    let (id, name) = st.identity();
    let task = current_task::get();
    ThreadDesc {
        name: match task {
            Some(t) => format!("task {t} on {name}"),
            None => name.clone(),
        },
        id: *id,
        task,
    }
}

/// A thread whose validator state is gone (it is exiting) or in use further up its stack.
pub(crate) fn unknown_thread() -> ThreadDesc {
    ThreadDesc {
        name: "<exiting>".to_owned(),
        id: 0,
        task: None,
    }
}

/// One held lock, with its class name (a zapped or unvalidated class shows the map's name).
pub(crate) fn lock(g: &Graph, h: &HeldLock) -> LockDesc {
    let class_name = match g.class(h.class) {
        Some(c) => c.name.to_string(),
        None if h.subclass == 0 => h.name.to_owned(),
        None => format!("{}/{}", h.name, h.subclass),
    };
    LockDesc {
        class: h.class,
        class_name,
        instance: h.instance,
        name: h.name_if_any(),
        mode: h.mode,
        trylock: h.trylock,
        site: h.site,
        key: g.class(h.class).map(|c| c.key),
    }
}

/// The thread's held locks, bottom first.
pub(crate) fn held(g: &Graph, st: &ThreadState) -> Vec<LockDesc> {
    st.entries().iter().map(|h| lock(g, &h)).collect()
}

// ----------------------------------------------------------------------- keys and classes

/// A dynamic key (or a subclass) was misused; `key` is the name of `subject`.
pub(crate) fn key_misuse(
    thread: ThreadDesc,
    kind: KeyMisuse,
    key: &str,
    subject: MisuseSubject,
    site: Site,
    registered_at: Option<Site>,
) -> Report {
    Report::KeyMisuse {
        thread,
        kind,
        key: key.to_owned(),
        subject,
        site,
        registered_at,
        held_by: Vec::new(),
    }
}

/// All [`MAX_CLASSES`] classes are live, for the `episode`-th time.
pub(crate) fn classes_exhausted(thread: ThreadDesc, episode: u64) -> Report {
    Report::CapacityExhausted {
        thread,
        what: Capacity::Classes,
        limit: MAX_CLASSES,
        episode,
    }
}

/// [`MAX_INSTANCE_PAIRS`] instance-order pairs are kept, for the `episode`-th time.
pub(crate) fn instance_pairs_exhausted(st: &ThreadState, episode: u64) -> Report {
    Report::CapacityExhausted {
        thread: thread(st),
        what: Capacity::InstancePairs,
        limit: MAX_INSTANCE_PAIRS,
        episode,
    }
}

// ---------------------------------------------------------------------------- acquisitions

/// `acquiring` names a nest_lock (`nest_lock`, by its map's name; empty where the caller
/// knows only its address, as `relock` does, and then named by that) this thread does not
/// hold.
pub(crate) fn nest_lock_not_held(
    g: &Graph,
    st: &ThreadState,
    acquiring: &HeldLock,
    nest_lock: &str,
) -> Report {
    let nest_lock = if nest_lock.is_empty() {
        format!("at {:#x}", acquiring.nest_lock)
    } else {
        nest_lock.to_owned()
    };
    Report::NestLockNotHeld {
        thread: thread(st),
        acquiring: lock(g, acquiring),
        nest_lock,
        held: held(g, st),
    }
}

/// The thread's held-lock depth reached `limit`, for the `episode`-th time.
pub(crate) fn depth_exhausted(st: &ThreadState, limit: usize, episode: u64) -> Report {
    Report::CapacityExhausted {
        thread: thread(st),
        what: Capacity::HeldLocks,
        limit,
        episode,
    }
}

/// `acquiring` is of the class of the held `holding`: the same instance again
/// ([`Report::RecursiveLocking`]) or another instance without an annotation
/// ([`Report::MissingNestingAnnotation`]); the kernel's `print_deadlock_bug()`.
pub(crate) fn same_class(
    g: &Graph,
    st: &ThreadState,
    holding: &HeldLock,
    acquiring: &HeldLock,
) -> Report {
    let s = SameClass {
        thread: thread(st),
        acquiring: lock(g, acquiring),
        holding: lock(g, holding),
        held: held(g, st),
    };
    if holding.instance == acquiring.instance {
        Report::RecursiveLocking(s)
    } else {
        Report::MissingNestingAnnotation(s)
    }
}

fn instance(s: Seen) -> LockInstance {
    LockInstance {
        address: s.instance,
        name: s.name,
    }
}

fn held_instance(h: &HeldLock) -> LockInstance {
    LockInstance {
        address: h.instance,
        name: h.name_if_any(),
    }
}

/// A class's name and key, as the ends of a dependency show them.
type End = (String, Option<KeyRef>);

/// The dependency `from -> to` (class names and keys) recorded in `edge` with `kind`; without
/// its sites (a dependency zapped meanwhile) it shows `fallback` for both.
fn recorded(
    (from, from_key): End,
    (to, to_key): End,
    edge: Option<&Edge>,
    kind: Kind,
    fallback: &HeldLock,
) -> Dependency {
    let sites = edge.and_then(|e| e.sites(kind).cloned());
    let EdgeSites {
        prev,
        next,
        prev_lock,
        next_lock,
        trace,
    } = sites.unwrap_or(EdgeSites {
        prev: fallback.site,
        next: fallback.site,
        prev_lock: Seen {
            instance: 0,
            name: None,
        },
        next_lock: Seen {
            instance: 0,
            name: None,
        },
        trace: None,
    });
    Dependency {
        from,
        to,
        kind: kind.public(),
        from_site: prev,
        to_site: next,
        from_instance: instance(prev_lock),
        to_instance: instance(next_lock),
        from_key,
        to_key,
        trace,
    }
}

/// The new dependency `prev -> next` (held locks of this thread), as `cycle[0]` of a report.
fn new_dependency(
    (from, from_key): End,
    (to, to_key): End,
    prev: &HeldLock,
    next: &HeldLock,
    kind: Kind,
    trace: Option<Trace>,
) -> Dependency {
    Dependency {
        from,
        to,
        kind: kind.public(),
        from_site: prev.site,
        to_site: next.site,
        from_instance: held_instance(prev),
        to_instance: held_instance(next),
        from_key,
        to_key,
        trace,
    }
}

/// The new dependency `prev -(kind)-> next` would close a strong cycle with the recorded
/// `path` (`next ->* prev`, as the search found it); `trace` is the current stack, if
/// captured. The kernel's `print_circular_bug()`.
pub(crate) fn circular(
    g: &Graph,
    st: &ThreadState,
    prev: &HeldLock,
    next: &HeldLock,
    kind: Kind,
    path: &[Step<u32>],
    trace: Option<Trace>,
) -> Report {
    let name = |slot: u32| match g.slot(slot) {
        Some(c) => (c.name.to_string(), Some(c.key)),
        None => ("<zapped>".to_owned(), None),
    };
    let mut cycle = vec![new_dependency(
        name(prev.class.index()),
        name(next.class.index()),
        prev,
        next,
        kind,
        trace,
    )];
    for s in path {
        let edge = g.slot(s.from).and_then(|c| c.after.get(&s.to));
        cycle.push(recorded(name(s.from), name(s.to), edge, s.kind, next));
    }
    Report::CircularDependency(CircularDependency {
        thread: thread(st),
        acquiring: lock(g, next),
        holding: lock(g, prev),
        cycle,
        instance_order: false,
        notify: false,
        held: held(g, st),
        class_set: 0,
    })
}

/// The new instance pair `prev -(kind)-> next` (two instances of one class) would close a
/// strong cycle with the recorded pairs `path` (`next ->* prev` among the class's instances).
pub(crate) fn instance_circular(
    g: &Graph,
    st: &ThreadState,
    prev: &HeldLock,
    next: &HeldLock,
    kind: Kind,
    path: &[Step<usize>],
    trace: Option<Trace>,
) -> Report {
    let desc = lock(g, next);
    let class: End = (desc.class_name, desc.key);
    let pairs = g.instances.class(next.class.index());
    let mut cycle = vec![new_dependency(
        class.clone(),
        class.clone(),
        prev,
        next,
        kind,
        trace,
    )];
    for s in path {
        let edge = pairs.and_then(|p| p.pair(s.from, s.to));
        cycle.push(recorded(class.clone(), class.clone(), edge, s.kind, next));
    }
    Report::CircularDependency(CircularDependency {
        thread: thread(st),
        acquiring: lock(g, next),
        holding: lock(g, prev),
        cycle,
        instance_order: true,
        notify: false,
        held: held(g, st),
        class_set: 0,
    })
}

// ------------------------------------------------------------------ releases and lifetimes

/// A release of a lock this thread does not hold: the lock map `name` at `instance`, whose
/// cached class (if any) is `class`; `site` is where the release was recorded.
pub(crate) fn bad_unlock(
    g: &Graph,
    st: &ThreadState,
    name: &str,
    class: ClassId,
    instance: usize,
    site: Site,
) -> Report {
    Report::BadUnlockBalance {
        thread: thread(st),
        releasing: LockDesc {
            class,
            class_name: name.to_owned(),
            instance,
            name: None,
            mode: Mode::Exclusive,
            trylock: false,
            site,
            key: None,
        },
        held: held(g, st),
    }
}

/// The held lock `freed` lives in the freed memory `range`; it is already off the stack.
pub(crate) fn held_lock_freed(
    g: &Graph,
    st: &ThreadState,
    freed: &HeldLock,
    range: (usize, usize),
    freed_at: Option<Site>,
) -> Report {
    Report::HeldLockFreed {
        thread: thread(st),
        lock: lock(g, freed),
        range,
        freed_at,
        held: held(g, st),
        freed_by: None,
    }
}

/// The held lock `freed` of another thread (`holder`, whose other locks are `others`) lives
/// in memory that the calling thread `by` frees.
pub(crate) fn held_lock_freed_elsewhere(
    g: &Graph,
    holder: ThreadLocks,
    freed: &SharedEntry,
    range: (usize, usize),
    by: ThreadDesc,
) -> Report {
    Report::HeldLockFreed {
        thread: holder.thread,
        lock: shared_lock(g, freed),
        range,
        freed_at: None,
        held: holder.held,
        freed_by: Some(by),
    }
}

// ------------------------------------------------------------------- other threads' stacks

/// One entry of another thread's stack, with its class name.
pub(crate) fn shared_lock(g: &Graph, e: &SharedEntry) -> LockDesc {
    let class_name = match g.class(e.class) {
        Some(c) => c.name.to_string(),
        None if e.subclass == 0 => e.name.to_owned(),
        None => format!("{}/{}", e.name, e.subclass),
    };
    LockDesc {
        class: e.class,
        class_name,
        instance: e.instance,
        name: e.named.then_some(e.name),
        mode: e.mode,
        trylock: e.trylock,
        site: e.site,
        key: g.class(e.class).map(|c| c.key),
    }
}

/// A thread's locks as the copy `snap` shows them, or `None` if the thread gave its record
/// back meanwhile. `now_ns` is the clock of waits ([`record::now_ns`]).
pub(crate) fn thread_locks(g: &Graph, snap: &Snapshot, now_ns: u64) -> Option<ThreadLocks> {
    let id = snap.identity()?;
    let (held, waiting) = snap.split();
    let since = std::time::Duration::from_nanos(
        now_ns.saturating_sub(snap.wait.map_or(now_ns, |w| w.since_ns)),
    );
    let condvar = snap.wait.and_then(|w| w.condvar);
    let (waiting, condvar) = match (waiting, condvar) {
        (None, _) => (None, None),
        (Some(e), None) => (
            Some(WaitingFor {
                lock: shared_lock(g, &e),
                waited: since,
            }),
            None,
        ),
        (Some(e), Some(c)) => (
            None,
            Some(CondvarWait {
                condvar: c.addr,
                name: c.name,
                site: c.site,
                mutex: shared_lock(g, &e),
                slept: since,
            }),
        ),
    };
    Some(ThreadLocks {
        thread: ThreadDesc {
            name: id.name,
            id: id.id,
            task: None,
        },
        os_tid: id.os_tid,
        std_id: id.std_id,
        held: held.iter().map(|e| shared_lock(g, e)).collect(),
        waiting,
        condvar,
    })
}

/// Every thread that holds or waits for a lock, from copies of their records, in record order.
pub(crate) fn all_threads(g: &Graph, snaps: &[Snapshot]) -> Vec<ThreadLocks> {
    let now = record::now_ns();
    snaps
        .iter()
        .filter_map(|s| thread_locks(g, s, now))
        .collect()
}

/// The thread is exiting with `held` (already taken off its stack).
pub(crate) fn held_at_exit(g: &Graph, st: &ThreadState, held: &[HeldLock]) -> Report {
    Report::LockHeldAtExit {
        thread: thread(st),
        held: held.iter().map(|h| lock(g, h)).collect(),
    }
}

// ----------------------------------------------------------------------------- annotations

/// An annotation on the lock map `lock` (empty for `assert_none_held`) did not hold.
pub(crate) fn assertion_failed(
    g: &Graph,
    st: &ThreadState,
    kind: AssertKind,
    lock: &str,
    site: Site,
) -> Report {
    Report::AssertionFailed {
        thread: thread(st),
        kind,
        lock: lock.to_owned(),
        site,
        acquired_at: None,
        held: held(g, st),
    }
}

/// A blocking lock `h` still held when task `task`'s poll returned `Pending`.
pub(crate) fn held_across_await(g: &Graph, st: &ThreadState, h: &HeldLock, task: u64) -> Report {
    Report::HeldAcrossAwait {
        thread: thread(st),
        task,
        lock: lock(g, h),
        held: held(g, st),
    }
}
