//! Task contexts without an executor: polls are `enter` / `exit` calls made by hand, on
//! threads the test chooses, so each interleaving is exact.

mod common;

use std::panic::Location;
use std::sync::mpsc;

use common::*;
use lockdep::{Mode, Report, TaskContext, TaskHeld};

/// An async acquisition as a lock wrapper makes it.
#[track_caller]
fn lock_async(m: &lockdep::LockMap) -> TaskHeld {
    lockdep::task_acquire(m, 0, Mode::Exclusive, false, Location::caller())
}

#[test]
fn a_tasks_async_locks_follow_it_to_another_thread() {
    let _h = start();
    let (a, b) = (new_lock("follow_a"), new_lock("follow_b"));
    let ctx = TaskContext::new();
    let held_a = {
        let poll = ctx.enter();
        let held = lock_async(a);
        assert_eq!(held.task(), Some(ctx.id()));
        poll.exit(true);
        held
    };
    assert_eq!(
        lockdep::held_count(),
        0,
        "off this thread's stack after the poll"
    );
    assert_eq!(ctx.held_count(), 1);
    std::thread::scope(|s| {
        s.spawn(|| {
            let poll = ctx.enter();
            assert_eq!(
                lockdep::held_count(),
                1,
                "spliced onto the other thread's stack"
            );
            let mut held_b = lock_async(b); // a -> b, on another thread
            lockdep::task_release(&mut held_b, b);
            poll.exit(false);
        });
    });
    assert!(lockdep::dependencies()
        .iter()
        .any(|d| d.from == "follow_a" && d.to == "follow_b"));
    let mut held_a = held_a;
    lockdep::task_release(&mut held_a, a); // between polls: leaves the record
    assert!(!held_a.is_held());
    assert_eq!(ctx.held_count(), 0);
    assert!(ctx.is_idle());
    assert_reports!();
}

#[test]
fn two_tasks_on_one_thread_do_not_see_each_others_async_locks() {
    let _h = start();
    let m = new_lock("shared_async");
    let (t1, t2) = (TaskContext::new(), TaskContext::new());
    let mut h1 = {
        let poll = t1.enter();
        let h = lock_async(m);
        poll.exit(true);
        h
    };
    let mut h2 = {
        let poll = t2.enter();
        let h = lock_async(m); // waits for t1 asynchronously: no recursion
        poll.exit(true);
        h
    };
    assert_reports!();
    let poll = t1.enter();
    lockdep::task_release(&mut h1, m);
    poll.exit(false);
    let poll = t2.enter();
    lockdep::task_release(&mut h2, m);
    poll.exit(false);
    assert_eq!((t1.held_count(), t2.held_count()), (0, 0));
}

#[test]
fn a_blocking_lock_held_when_the_poll_is_pending_is_reported_and_stays_the_threads() {
    let _h = start();
    let m = new_lock("blocking_m");
    let (t1, t2) = (TaskContext::new(), TaskContext::new());
    let poll = t1.enter();
    lock(m);
    poll.exit(true);
    let r = assert_reports!(Report::HeldAcrossAwait { .. });
    let Report::HeldAcrossAwait {
        task, lock: held, ..
    } = &r[0]
    else {
        unreachable!()
    };
    assert_eq!(*task, t1.id());
    assert_eq!(held.class_name, "blocking_m");
    assert_eq!(lockdep::held_count(), 1, "the thread still holds it");
    // Another task polled on this thread takes it: the thread would block for good.
    let poll = t2.enter();
    lock(m);
    let r = assert_reports!(Report::RecursiveLocking(_));
    assert_eq!(r[0].thread().task, Some(t2.id()));
    unlock(m); // the second acquisition's entry
    poll.exit(false);
    unlock(m);
    assert_eq!(lockdep::held_count(), 0);
}

#[test]
fn a_blocking_lock_released_before_the_poll_ends_is_silent() {
    let _h = start();
    let m = new_lock("released_m");
    let t = TaskContext::new();
    let poll = t.enter();
    lock(m);
    unlock(m);
    poll.exit(true);
    assert_reports!();
}

#[test]
fn async_then_blocking_then_async_is_a_cycle() {
    let _h = start();
    let (a, b) = (new_lock("cycle_async"), new_lock("cycle_blocking"));
    let t1 = TaskContext::new();
    let poll = t1.enter();
    let mut ha = lock_async(a);
    lock(b); // a -> b
    unlock(b);
    lockdep::task_release(&mut ha, a);
    poll.exit(false);
    let t2 = TaskContext::new();
    let poll = t2.enter();
    lock(b);
    let mut ha = lock_async(a); // b -> a: closes the cycle
    assert_one_cycle(&["cycle_blocking", "cycle_async"]);
    lockdep::task_release(&mut ha, a);
    unlock(b);
    poll.exit(false);
}

#[test]
fn a_release_from_elsewhere_during_a_poll_is_applied_when_the_poll_ends() {
    let _h = start();
    let (a, b) = (new_lock("posted_a"), new_lock("posted_b"));
    let ctx = TaskContext::new();
    let poll = ctx.enter();
    let held = lock_async(a);
    let (tx, rx) = mpsc::channel::<TaskHeld>();
    let dropper = std::thread::spawn(move || {
        let mut held = rx.recv().expect("token");
        lockdep::task_release(&mut held, a); // the owner is being polled elsewhere: posted
    });
    tx.send(held).expect("dropper alive");
    dropper.join().expect("dropper");
    poll.exit(true);
    assert_eq!(ctx.held_count(), 0, "the posted release was applied");
    let poll = ctx.enter();
    let mut hb = lock_async(b);
    lockdep::task_release(&mut hb, b);
    poll.exit(false);
    assert!(!lockdep::dependencies()
        .iter()
        .any(|d| d.from == "posted_a" && d.to == "posted_b"));
    assert_reports!();
}

#[test]
fn outside_a_poll_an_async_lock_is_validated_and_not_held() {
    let _h = start();
    let (a, b) = (new_lock("outside_a"), new_lock("outside_b"));
    lock(b);
    let held = lock_async(a); // b -> a recorded
    assert!(!held.is_held());
    assert_eq!(lockdep::held_count(), 1);
    unlock(b);
    assert!(lockdep::dependencies()
        .iter()
        .any(|d| d.from == "outside_b" && d.to == "outside_a"));
    assert_reports!();
}

#[test]
fn reports_in_a_poll_name_the_task() {
    let _h = start();
    let m = new_lock("named_task_m");
    let t = TaskContext::new();
    let poll = t.enter();
    assert_eq!(lockdep::current_task(), Some(t.id()));
    let mut h1 = lock_async(m);
    let mut h2 = lock_async(m); // the same task again: recursive
    let r = assert_reports!(Report::RecursiveLocking(_));
    let thread = r[0].thread();
    assert_eq!(thread.task, Some(t.id()));
    assert!(thread.name.starts_with(&format!("task {} on ", t.id())));
    assert!(r[0].to_string().contains(&format!("task {} on ", t.id())));
    lockdep::task_release(&mut h2, m);
    lockdep::task_release(&mut h1, m);
    poll.exit(false);
    assert_eq!(lockdep::current_task(), None);
}

#[test]
fn a_mode_change_between_polls_reaches_the_record() {
    let _h = start();
    let (l, m) = (new_lock("downgraded"), new_lock("after_downgrade"));
    let t = TaskContext::new();
    let poll = t.enter();
    let mut hl = lock_async(l);
    poll.exit(true);
    lockdep::task_set_held_mode(&hl, l, Mode::Read);
    let poll = t.enter();
    assert_eq!(lockdep::held_locks()[0].mode, Mode::Read);
    let mut hm = lock_async(m);
    lockdep::task_release(&mut hm, m);
    lockdep::task_release(&mut hl, l);
    poll.exit(false);
    assert_reports!();
}

/// A task's async lock spliced onto a thread that holds a blocking lock, and a blocking lock
/// taken in that poll: the thread's blocking lock is held while the new one is taken, so
/// the dependency between the two is recorded, and its inversion later is a cycle. The
/// dependency walk used to stop at the spliced async lock (as at any lock the kernel's walk
/// reaches first), which was acquired in an earlier poll over none of the thread's locks.
#[test]
fn a_poll_records_the_threads_locks_below_the_tasks_spliced_ones() {
    let _h = start();
    let (za, zx, zy) = (
        new_lock("splice_za"),
        new_lock("splice_zx"),
        new_lock("splice_zy"),
    );
    let ctx = TaskContext::new();
    let mut held_a = {
        let poll = ctx.enter();
        let held = lock_async(za);
        poll.exit(false);
        held
    };
    lock(zx);
    {
        let poll = ctx.enter();
        // Held: zx (the thread's), za (the task's, spliced on), and now zy.
        lock(zy);
        unlock(zy);
        lockdep::task_release(&mut held_a, za);
        poll.exit(false);
    }
    unlock(zx);
    assert_reports!();
    pair(zy, zx);
    assert_one_cycle(&["splice_zx", "splice_zy"]);
}
