//! Locks released below others (the first taken released first: a vector or a tuple of guards
//! dropped as it is). The release leaves a hole in the held stack rather than moving every
//! entry above it; the holes are closed before the next acquisition or any other look at the
//! stack. None of that may show: a released lock is not held (for this thread's later
//! dependencies, for its queries, for other threads and for its exit), and the chains taken
//! after it are those of the locks really held.

mod common;

use std::sync::mpsc;

use common::*;
use lockdep::{LockMap, Mode, Report};

fn addr(m: &LockMap) -> usize {
    m as *const LockMap as usize
}

/// Holds `a`, then `b` and `c` taken with a trylock (which adds no dependency), releases `a`
/// (a hole below two held locks) and takes `d`: the locks held are `b` and `c`, so `b -> d`
/// and `c -> d` are recorded and `a -> d` is not (nothing above `a` leads to `d` either: the
/// trylocks made no `a -> b` or `a -> c`). A later `d -> a` is silent, `d -> b` a cycle. Twice,
/// so that the second time runs from the thread's caches and memos.
#[test]
fn a_lock_released_below_others_adds_no_dependency_to_later_locks() {
    let _h = start();
    let (a, b, c, d) = (new_lock("a"), new_lock("b"), new_lock("c"), new_lock("d"));
    for _ in 0..2 {
        lock(a);
        try_lock(b);
        try_lock(c);
        unlock(a);
        lock(d);
        unlock(d);
        unlock(c);
        unlock(b);
    }
    assert_reports!();
    pair(d, a);
    assert_reports!();
    pair(d, b);
    assert_one_cycle(&["b", "d"]);
}

/// A chain taken over a hole is the chain of the locks held: `b` and `x` (trylocks) then
/// `c`, with `a` released from under them. It must not vouch for `a, b, x, c` taken later,
/// whose `a -> c` is new: a later `c -> a` is a cycle. (A chain key made with the released
/// lock still in it is the key of `a, b, x, c`: cached as valid, it would hide `a -> c`.)
#[test]
fn a_chain_taken_over_a_hole_does_not_vouch_for_the_chain_with_the_lock_held() {
    let _h = start();
    let (a, b, x, c) = (new_lock("a"), new_lock("b"), new_lock("x"), new_lock("c"));
    let over_a_hole = || {
        for _ in 0..2 {
            lock(a);
            try_lock(b);
            try_lock(x);
            unlock(a);
            lock(c);
            unlock(c);
            unlock(x);
            unlock(b);
        }
    };
    over_a_hole();
    // `b -> c` and `x -> c` only.
    pair(c, a);
    assert_reports!();
    lockdep::reset();
    over_a_hole();
    lock(a);
    try_lock(b);
    try_lock(x);
    lock(c);
    unlock(c);
    unlock(x);
    unlock(b);
    unlock(a);
    pair(c, a);
    assert_one_cycle(&["a", "c"]);
}

/// A vector of guards dropped as it is, in rounds: the locks are released first taken first
/// (each release but the last leaves a hole), the run is taken again in the same order and
/// stays silent, and a run in the other order is a cycle.
#[test]
fn a_run_released_first_taken_first_is_taken_again_silently_and_its_inversion_reported() {
    let _h = start();
    let locks: Vec<&'static LockMap> = (0..6)
        .map(|_| &*Box::leak(Box::new(LockMap::of_type::<u64>("Mutex"))))
        .collect();
    let classes: Vec<&'static LockMap> = [
        new_lock("c0"),
        new_lock("c1"),
        new_lock("c2"),
        new_lock("c3"),
    ]
    .into();
    for _ in 0..5 {
        for run in [&locks, &classes] {
            let guards: Vec<Guard> = run.iter().map(|m| guard(m)).collect();
            assert_eq!(lockdep::held_count(), run.len());
            drop(guards);
            assert_eq!(lockdep::held_count(), 0);
        }
    }
    assert_reports!();
    pair(classes[3], classes[1]);
    let r = take();
    assert_eq!((r.len(), count_cycles(&r)), (1, 1), "{r:#?}");
    pair(locks[4], locks[2]);
    let r = take();
    assert_eq!((r.len(), count_cycles(&r)), (1, 1), "{r:#?}");
}

/// Between the release that left a hole and the next lock operation, the released lock is
/// not held: for this thread's queries, for another thread's view of its locks, and for a
/// second release (an unbalanced unlock, reported). Both ways a hole is made: with nothing
/// unusual held (the release's plain path), and with the top lock pinned (its general path).
#[test]
fn a_lock_released_below_others_is_not_held_for_anyone() {
    for pinned in [false, true] {
        not_held_for_anyone(pinned);
    }
}

fn not_held_for_anyone(pinned: bool) {
    let _h = start();
    let (a, b, c) = (new_lock("qa"), new_lock("qb"), new_lock("qc"));
    let (to_main, from_thread) = mpsc::channel();
    let (to_thread, from_main) = mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        lock(a);
        lock(b);
        lock(c);
        if pinned {
            lockdep::pin(c);
        }
        unlock(a);
        // No lock operation until the main thread has looked.
        to_main.send(()).unwrap();
        from_main.recv().unwrap();
        let queries = (
            lockdep::is_held(a),
            lockdep::is_held(b),
            lockdep::held_count(),
            lockdep::held_locks()
                .iter()
                .map(|l| l.instance)
                .collect::<Vec<_>>(),
        );
        unlock(a);
        if pinned {
            lockdep::unpin(c);
        }
        unlock(c);
        unlock(b);
        queries
    });
    from_thread.recv().unwrap();
    let all = lockdep::all_held_locks();
    assert!(all.holders_of(addr(a)).is_empty(), "{all:#?}");
    let holders = all.holders_of(addr(b));
    assert_eq!(holders.len(), 1, "{all:#?}");
    let shown: Vec<usize> = holders[0].held.iter().map(|l| l.instance).collect();
    assert_eq!(shown, [addr(b), addr(c)], "only b and c are held: {all:#?}");
    to_thread.send(()).unwrap();
    let (a_held, b_held, count, held) = t.join().unwrap();
    assert!(!a_held && b_held);
    assert_eq!((count, held), (2, vec![addr(b), addr(c)]));
    let r = take();
    assert_eq!(r.len(), 1, "{r:#?}");
    assert!(matches!(r[0], Report::BadUnlockBalance { .. }), "{r:#?}");
}

/// A thread that ends holding locks with holes below them is reported with the locks it
/// holds, and a lock released below others can be freed with no report.
#[test]
fn holes_are_neither_held_at_exit_nor_freed_while_held() {
    let _h = start();
    let held_at_exit = on_thread(|| {
        let a: &'static LockMap = Box::leak(Box::new(LockMap::new("freed")));
        let (b, c) = (new_lock("kept b"), new_lock("kept c"));
        lock(a);
        lock(b);
        lock(c);
        unlock(a);
        // SAFETY: `a` was leaked above and is not used again; freeing the map runs its drop,
        // which checks for held locks in its memory.
        drop(unsafe { Box::from_raw(std::ptr::from_ref(a).cast_mut()) });
        unlock(b);
        addr(c)
    });
    let r = take();
    assert_eq!(r.len(), 1, "{r:#?}");
    match &r[0] {
        Report::LockHeldAtExit { held, .. } => {
            let held: Vec<usize> = held.iter().map(|l| l.instance).collect();
            assert_eq!(held, vec![held_at_exit], "{r:#?}");
        }
        other => panic!("expected a lock held at exit, got {other:#?}"),
    }
}

/// Modes: a recursive read lock taken twice with a lock between, released from the bottom:
/// each release takes the topmost entry still held, and the holes left in between never
/// match a later release.
#[test]
fn a_lock_held_twice_is_released_once_per_release_across_holes() {
    let _h = start();
    let (r, x) = (new_lock("r"), new_lock("x"));
    for _ in 0..3 {
        lock_mode(r, Mode::RecursiveRead);
        lock(x);
        lock_mode(r, Mode::RecursiveRead);
        unlock(x);
        assert!(lockdep::is_held(r));
        unlock(r);
        assert!(lockdep::is_held(r), "one of two entries released");
        unlock(r);
        assert!(!lockdep::is_held(r));
        assert_eq!(lockdep::held_count(), 0);
    }
    assert_reports!();
}

/// Locks released first-taken-first down to nothing but holes (the last two by the fast
/// pop, which leaves the holes below for the next operation to close): the thread holds
/// nothing, and another thread's view of every thread's locks leaves it out, as it does a
/// thread that released in any other order.
#[test]
fn a_stack_of_holes_only_holds_nothing() {
    let _h = start();
    let (a, b, c) = (new_lock("ha"), new_lock("hb"), new_lock("hc"));
    lock(a);
    lock(b);
    lock(c);
    unlock(a);
    unlock(c);
    unlock(b);
    let me = std::thread::current().id();
    let listed = on_thread(move || {
        lockdep::all_held_locks()
            .threads
            .iter()
            .filter(|t| t.std_id == Some(me))
            .map(|t| t.held.len())
            .collect::<Vec<_>>()
    });
    assert_eq!(lockdep::held_count(), 0);
    assert_eq!(
        listed,
        Vec::<usize>::new(),
        "a thread holding nothing is left out"
    );
    assert_reports!();
}
