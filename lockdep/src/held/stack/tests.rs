use super::*;
use crate::limits::MAX_CLASSES;

/// Lock instance number `n`: a map's address has its low bits free for a slot's mode
/// bits, so test instances are multiples of 8 too.
const fn inst(n: usize) -> usize {
    n << 3
}

/// The number of lock instance `instance` (see [`inst`]).
const fn num(instance: usize) -> usize {
    instance >> 3
}

fn entry(n: usize) -> HeldLock {
    HeldLock::for_test(inst(n))
}

fn push(st: &mut ThreadState, e: HeldLock) {
    let n = st.next(e);
    st.push(n);
}

/// The keys a fresh stack of these entries would have.
/// The chain keys made afresh from the slots (their marks included).
fn fresh_keys(st: &ThreadState) -> Vec<u64> {
    let mut key = 0;
    st.held_slots()
        .iter()
        .map(|s| {
            key = s.chain_key_on(key);
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
    assert_eq!(removed.instance, inst(1));
    assert_eq!(keys(&st), fresh_keys(&st));
}

/// The release of the entry below the top without the general path: only when the top
/// is not the entry named and the one below is, and nothing is marked; it leaves the
/// stack (and the record readers see) as `release_at` does.
#[test]
fn a_release_below_the_top_is_the_general_release() {
    let mut st = ThreadState::new();
    for i in 1..=3 {
        push(&mut st, entry(i));
    }
    assert!(
        !st.pop_below_top(Find::any(inst(3))),
        "the top: pop_plain's"
    );
    assert!(
        !st.pop_below_top(Find::any(inst(1))),
        "deeper: the general path's"
    );
    assert!(
        !st.pop_below_top(Find::in_mode(inst(2), Mode::Read)),
        "another mode"
    );
    assert!(st.pop_below_top(Find::any(inst(2))));
    assert_eq!(instances(&st), [1, 3]);
    assert_eq!(keys(&st), fresh_keys(&st));
    let r = st.record().expect("a record");
    assert_eq!(shown(r), [1, 3]);
    st.pin(0);
    assert!(
        !st.pop_below_top(Find::any(inst(1))),
        "a mark: the general path's"
    );
    assert!(st.unpin(0));
    assert!(st.pop_below_top(Find::any(inst(1))));
    assert_eq!(instances(&st), [3]);
    assert!(
        !st.pop_below_top(Find::any(inst(3))),
        "one entry: nothing below"
    );
    st.take_all();
    st.give_back_record();
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
    assert!(!st.held_slots()[0].is_unrecorded());
    st.set_class(1, ClassId::new(9, 1), 1);
    assert_eq!(st.entry(1).subclass, 1);
    assert!(
        st.held_slots()[1].is_unrecorded(),
        "no dependency into the new class was recorded"
    );
    assert_eq!(keys(&st), fresh_keys(&st));
    st.set_mode(1, Mode::Read);
    assert!(
        st.held_slots()[1].is_unrecorded(),
        "a mode change keeps the mark"
    );
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

/// The instances the record shows, bottom first.
fn shown(r: &'static Record) -> Vec<usize> {
    let snap = r.snapshot(false).expect("the record is owned");
    snap.entries().map(|e| num(e.instance)).collect()
}

fn instances(st: &ThreadState) -> Vec<usize> {
    st.entries().iter().map(|e| num(e.instance)).collect()
}

#[test]
fn the_record_is_the_stack_through_growth_and_edits() {
    let mut st = ThreadState::new();
    // Deeper than a new record's array: the stack moves to a larger one.
    for i in 1..=70 {
        push(&mut st, entry(i));
    }
    let r = st.record().expect("a record was claimed at the first push");
    assert_eq!(shown(r), (1..=70).collect::<Vec<_>>());
    assert_eq!(keys(&st), fresh_keys(&st));
    st.release_at(10);
    st.set_mode(3, Mode::Read);
    assert_eq!(st.remove(0).instance, inst(1));
    assert_eq!(shown(r), instances(&st));
    assert_eq!(keys(&st), fresh_keys(&st));
    let snap = r.snapshot(false).unwrap();
    assert_eq!(snap.entries().nth(2).unwrap().mode, Mode::Read);
    while st.entries().len() > 30 {
        st.release_at(st.entries().len() - 1);
    }
    assert_eq!(shown(r), instances(&st));
    st.take_all();
    assert!(shown(r).is_empty());
    assert_eq!(st.top_key(), 0);
    st.give_back_record();
}

#[test]
fn giving_the_record_back_keeps_the_entries_privately() {
    let mut st = ThreadState::new();
    for i in 1..=3 {
        push(&mut st, entry(i));
    }
    st.pin(1);
    let r = st.record().unwrap();
    let before = (keys(&st), st.top_key());
    st.give_back_record();
    assert!(r.snapshot(false).is_none(), "the record is free");
    st.reset_after_exit();
    assert_eq!(instances(&st), [1, 2, 3]);
    assert_eq!((keys(&st), st.top_key()), before);
    // Late mode: no spare room (the fast path never pushes), and no record is claimed.
    assert!(!st.has_room());
    push(&mut st, entry(4));
    st.trim_after_exit();
    assert!(st.record().is_none());
    assert!(!st.has_room());
    assert_eq!(st.release_at(1).pins, 1, "the pin moved with its entry");
    st.trim_after_exit();
    assert_eq!(instances(&st), [1, 3, 4]);
    assert_eq!(keys(&st), fresh_keys(&st));
    st.take_all();
    st.trim_after_exit();
    assert_eq!(st.cap, 0, "an empty late stack keeps no memory");
}

#[test]
fn a_thread_past_the_record_limit_keeps_a_private_stack() {
    let mut st = ThreadState::new();
    // What a failed claim leaves (the table was full).
    st.unclaimable = true;
    for i in 1..=40 {
        push(&mut st, entry(i));
    }
    assert!(st.record().is_none());
    assert_eq!(instances(&st), (1..=40).collect::<Vec<_>>());
    assert_eq!(keys(&st), fresh_keys(&st));
    assert!(
        st.has_room(),
        "private growth doubles: the fast path can push"
    );
    st.release_at(5);
    st.pin(0);
    assert_eq!(keys(&st), fresh_keys(&st));
    assert_eq!(st.remove(0).pin_count, 1);
    assert_eq!(st.entries().len(), 38);
}

#[test]
fn readers_never_see_a_torn_stack() {
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};
    // Every consistent state: instances strictly rising, each entry's name and class
    // chosen by its instance. A torn copy (a slot from two entries, or a depth from
    // another state) breaks it.
    const NAMES: [&str; 3] = ["a", "bb", "cccc"];
    fn make(i: usize) -> HeldLock {
        HeldLock {
            class: ClassId::new((i % MAX_CLASSES) as u32, 1),
            name: NAMES[i % 3],
            ..entry(i)
        }
    }
    let (tx, rx) = mpsc::channel();
    let done = Arc::new(AtomicBool::new(false));
    let copies = Arc::new(AtomicU64::new(0));
    let (stop, copied) = (done.clone(), copies.clone());
    let reader = std::thread::spawn(move || {
        let r: &'static Record = rx.recv().unwrap();
        let mut seen = 0u64;
        // Relaxed: a stop flag; the join below orders the rest.
        while !stop.load(Ordering::Relaxed) {
            if let Some(snap) = r.snapshot(false) {
                let mut last = 0;
                for e in snap.entries() {
                    let i = num(e.instance);
                    assert!(i > last, "instances rise");
                    assert_eq!(e.class, ClassId::new((i % MAX_CLASSES) as u32, 1));
                    assert_eq!(e.name, NAMES[i % 3]);
                    last = i;
                }
                seen += 1;
                // Relaxed: a progress count for the owner's loop bound.
                copied.store(seen, Ordering::Relaxed);
            }
        }
        seen
    });
    let mut st = ThreadState::new();
    push(&mut st, make(1));
    tx.send(st.record().unwrap()).unwrap();
    let mut next = 2;
    // At least 20,000 changes, and on until the reader made 1,000 copies while they ran.
    let mut round = 0usize;
    // Relaxed: a progress count (see the reader).
    // (A reader that failed ends the loop too.)
    while (round < 20_000 || copies.load(Ordering::Relaxed) < 1_000) && !reader.is_finished() {
        round += 1;
        match round % 5 {
            // Pushes (the stack grows past the first array now and then).
            0..=2 => {
                push(&mut st, make(next));
                next += 1;
            }
            // A LIFO pop.
            3 => {
                if let Some(top) = st.entries().len().checked_sub(1) {
                    st.release_at(top);
                }
            }
            // An out-of-order release (entries move down a slot).
            _ => {
                let n = st.entries().len();
                if n > 2 {
                    st.release_at(n / 2);
                }
            }
        }
        if st.entries().len() > 100 {
            st.take_all();
        }
    }
    // Relaxed: see the reader.
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() >= 1_000);
    st.take_all();
    st.give_back_record();
}
