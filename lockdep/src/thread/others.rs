//! The checks that concern other threads' held locks, through the shared records
//! ([`held::record`](crate::held::record)): a key unregistered while any thread holds a lock
//! of it, a lock freed while another thread holds it, and a release made by another thread
//! than the one that acquired (a guard sent between threads).

use super::local::{current_thread, with_state};
use crate::graph::table::KeyClassIds;
use crate::graph::Graph;
use crate::graph_lock::graph_lock;
use crate::held::record::{self, Holder, Mail, SharedEntry, Snapshot};
use crate::mode::Mode;
use crate::report::{self, build, ThreadLocks};

/// Copies of every record that holds or waits for a lock (the caller's included).
pub(crate) fn snapshots() -> Vec<Snapshot> {
    record::all().filter_map(|r| r.snapshot(true)).collect()
}

/// The calling thread's holding, if it has a record.
pub(crate) fn current_holder() -> Option<Holder> {
    with_state(|st| st.record().map(|r| r.holder())).flatten()
}

/// Every thread (the caller's included) that holds locks of the key whose live classes are
/// `classes` (or waits for one, or sleeps in a condvar wait that will re-lock one), with
/// those locks, decided with the graph `g` (held by the caller, who zaps the key's classes
/// next under the same lock). Each thread that holds one is asked to forget the chains it
/// cached ([`Mail::FORGET_CHAINS`]): its held entry keeps the class, dead after the zap, so
/// its chain keys stay the same while their validation changes (a dead class is skipped). Each record is checked in place for an entry of those classes, and only a matching
/// one is copied and turned into a description: an unregister with the usual traffic (other
/// threads holding locks of other keys) copies and allocates nothing.
pub(crate) fn key_holders(g: &Graph, classes: &KeyClassIds) -> Vec<ThreadLocks> {
    let of_key = |class| classes.contains(class);
    let snaps: Vec<Snapshot> = record::all()
        .filter(|r| r.may_hold_class(of_key))
        .filter_map(|r| r.snapshot(true))
        .collect();
    if snaps.is_empty() {
        return Vec::new();
    }
    let now = record::now_ns();
    for s in &snaps {
        if s.entries().any(|e| of_key(e.class)) {
            let _ = record::Record::post(s.holder, Mail::FORGET_CHAINS);
        }
    }
    snaps
        .iter()
        .filter(|s| s.entries().any(|e| of_key(e.class)))
        .filter_map(|s| {
            let mut t = build::thread_locks(g, s, now)?;
            t.held.retain(|l| of_key(l.class));
            t.waiting = t.waiting.filter(|w| of_key(w.lock.class));
            // A thread asleep in a condvar wait on a lock of the key counts: its guard lives
            // on and re-locks the lock when the wait ends; so does one blocked on a lock of
            // the key, which it holds as soon as the holder lets go.
            t.condvar = t.condvar.filter(|c| of_key(c.mutex.class));
            (!t.held.is_empty() || t.condvar.is_some() || t.waiting.is_some()).then_some(t)
        })
        .collect()
}

/// Forgets the chains the calling thread cached (see [`key_holders`]), for a thread that
/// holds a lock of an unregistered key without a shared record (mail cannot reach it).
pub(crate) fn forget_own_chains() {
    let _ = with_state(|st| st.forget_chains());
}

/// The entries of copy `s` that count as held for the cross-thread checks: those it holds,
/// and the mutex of a condvar wait it sleeps in (released, but its guard lives on and
/// re-locks it when the wait ends). Not a lock it is blocked on.
fn guarded(s: &Snapshot) -> Vec<SharedEntry> {
    let (mut held, waiting) = s.split();
    if s.wait.is_some_and(|w| w.lock().is_none()) {
        held.extend(waiting);
    }
    held
}

/// Reports every lock in `[lo, hi)` that a thread other than the caller holds (or will
/// re-lock when the condvar wait it sleeps in ends), and asks those threads to forget it
/// (their later operations see no stale entry).
pub(crate) fn check_freed_elsewhere(lo: usize, hi: usize) {
    let me = current_holder();
    let snaps: Vec<Snapshot> = snapshots()
        .into_iter()
        .filter(|s| Some(s.holder) != me)
        .filter(|s| {
            guarded(s)
                .iter()
                .any(|e| e.instance >= lo && e.instance < hi)
        })
        .collect();
    if snaps.is_empty() {
        return;
    }
    let by = current_thread();
    let mut reports = Vec::new();
    {
        let mut g = graph_lock();
        let now = record::now_ns();
        for s in &snaps {
            let Some(mut t) = build::thread_locks(&g.graph, s, now) else {
                continue;
            };
            let freed: Vec<_> = guarded(s)
                .into_iter()
                .filter(|e| e.instance >= lo && e.instance < hi)
                .collect();
            t.held.retain(|l| l.instance < lo || l.instance >= hi);
            for e in &freed {
                // The holder's entry may carry instance pairs its map was never told of.
                g.graph
                    .forget_instance(crate::held::pair_key(e.instance, e.tag));
                record::Record::post(
                    s.holder,
                    Mail {
                        instance: e.instance,
                        mode: None,
                        all: true,
                        becomes: None,
                        forget_chains: false,
                    },
                );
                reports.push(build::held_lock_freed_elsewhere(
                    &g.graph,
                    t.clone(),
                    e,
                    (lo, hi),
                    by.clone(),
                ));
            }
        }
    }
    if !reports.is_empty() {
        report::deliver(reports);
    }
}

/// Asks the thread of `holder` to drop its topmost entry of `instance` in `mode` (else in
/// any mode; `None`: in any) (a guard it acquired was released on another thread). If that holding is over (the thread exited with the
/// guard elsewhere), the entry it left behind is forgotten instead.
pub(crate) fn post_release(holder: Holder, instance: usize, mode: Option<Mode>) {
    let posted = record::Record::post(
        holder,
        Mail {
            instance,
            mode,
            all: false,
            becomes: None,
            forget_chains: false,
        },
    );
    if !posted {
        super::orphans::forget(holder, instance);
    }
}

/// Asks the thread of `holder` to hold its entry of `instance` in mode `from` (else its
/// topmost of `instance`) in mode `to` from now on (a guard it acquired changed mode on
/// another thread). If that holding is over, nothing happens.
pub(crate) fn post_mode_change(holder: Holder, instance: usize, from: Mode, to: Mode) {
    let _ = record::Record::post(
        holder,
        Mail {
            instance,
            mode: Some(from),
            all: false,
            becomes: Some(to),
            forget_chains: false,
        },
    );
}
