//! `Condvar` and `WaitTimeoutResult`.
//!
//! A notifier must know that its waiter is already waiting. The waiter announces itself under
//! the mutex and then waits (which releases the mutex atomically); the notifier learns of the
//! announcement only by taking the mutex, so by then the waiter is queued on the condvar
//! (parking_lot's condvar has no spurious wake-ups, so it stays queued until notified).

mod common;

use common::{later, soon, LONG, SHORT};
use parking_lot::{Condvar, Mutex, MutexGuard, WaitTimeoutResult};
use std::thread;

#[derive(Default)]
struct State {
    waiting: usize,
    go: bool,
    woken: usize,
}

/// The waiters' side: announce, then wait until `go` with `wait_one`.
fn wait_for_go(
    m: &Mutex<State>,
    announced: &Condvar,
    wait_one: impl Fn(&mut MutexGuard<'_, State>),
) {
    let mut g = m.lock();
    g.waiting += 1;
    announced.notify_all();
    wait_one(&mut g);
    assert!(g.go, "woken only after `go`");
    g.woken += 1;
}

/// The notifier's side: returns a guard taken once `n` waiters are queued on the condvar.
fn until_waiting<'a>(m: &'a Mutex<State>, announced: &Condvar, n: usize) -> MutexGuard<'a, State> {
    let mut g = m.lock();
    while g.waiting < n {
        announced.wait(&mut g);
    }
    g
}

#[test]
fn construction_and_debug() {
    // covers: Condvar::new, Condvar: Default, Condvar: Debug
    static STATIC_CV: Condvar = Condvar::new();
    let cv = Condvar::default();
    assert_eq!(format!("{:?}", cv), "Condvar { .. }");
    assert_eq!(format!("{:?}", STATIC_CV), "Condvar { .. }");
}

#[test]
fn notify_without_waiters() {
    // covers: Condvar::notify_one, Condvar::notify_all
    let cv = Condvar::new();
    assert!(!cv.notify_one(), "nobody was woken");
    assert_eq!(cv.notify_all(), 0);
}

#[test]
fn wait_and_notify_one() {
    // covers: Condvar::wait, Condvar::notify_one
    let (m, cv, announced) = (Mutex::new(State::default()), Condvar::new(), Condvar::new());
    thread::scope(|s| {
        s.spawn(|| {
            wait_for_go(&m, &announced, |g| {
                while !g.go {
                    cv.wait(g);
                }
            })
        });
        let mut g = until_waiting(&m, &announced, 1);
        g.go = true;
        assert!(cv.notify_one(), "one waiter was queued");
    });
    assert_eq!(m.lock().woken, 1);
}

#[test]
fn notify_all_counts_the_waiters() {
    // covers: Condvar::notify_all, Condvar::wait_while
    let (m, cv, announced) = (Mutex::new(State::default()), Condvar::new(), Condvar::new());
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| wait_for_go(&m, &announced, |g| cv.wait_while(g, |st| !st.go)));
        }
        let mut g = until_waiting(&m, &announced, 2);
        g.go = true;
        assert_eq!(
            cv.notify_all(),
            2,
            "both waiters woken or requeued onto the mutex"
        );
    });
    assert_eq!(m.lock().woken, 2);
}

#[test]
fn timed_waits_that_are_notified() {
    // covers: Condvar::wait_for, Condvar::wait_until, Condvar::wait_while_for
    // covers: Condvar::wait_while_until, WaitTimeoutResult::timed_out
    type TimedWait = fn(&Condvar, &mut MutexGuard<'_, State>) -> WaitTimeoutResult;
    let waits: [TimedWait; 4] = [
        |cv, g| cv.wait_for(g, LONG),
        |cv, g| cv.wait_until(g, later()),
        |cv, g| cv.wait_while_for(g, |st| !st.go, LONG),
        |cv, g| cv.wait_while_until(g, |st| !st.go, later()),
    ];
    for wait in waits {
        let (m, cv, announced) = (Mutex::new(State::default()), Condvar::new(), Condvar::new());
        thread::scope(|s| {
            s.spawn(|| {
                wait_for_go(&m, &announced, |g| {
                    let r = wait(&cv, g);
                    assert!(!r.timed_out(), "notified long before the timeout");
                })
            });
            let mut g = until_waiting(&m, &announced, 1);
            g.go = true;
            assert!(cv.notify_one());
        });
        assert_eq!(m.lock().woken, 1);
    }
}

#[test]
fn timed_waits_time_out() {
    // covers: Condvar::wait_for, Condvar::wait_until, Condvar::wait_while_for
    // covers: Condvar::wait_while_until, WaitTimeoutResult::timed_out
    // covers: WaitTimeoutResult, WaitTimeoutResult: Debug, WaitTimeoutResult: PartialEq
    // covers: WaitTimeoutResult: Eq, WaitTimeoutResult: Clone, WaitTimeoutResult: Copy
    let m = Mutex::new(0);
    let cv = Condvar::new();
    let mut g = m.lock();
    let a: WaitTimeoutResult = cv.wait_for(&mut g, SHORT);
    assert!(a.timed_out());
    assert!(cv.wait_until(&mut g, soon()).timed_out());
    assert!(cv.wait_while_for(&mut g, |_| true, SHORT).timed_out());
    assert!(cv.wait_while_until(&mut g, |_| true, soon()).timed_out());
    // A condition already false returns at once, without timing out.
    let b = cv.wait_while_for(&mut g, |_| false, SHORT);
    assert!(!b.timed_out());
    assert!(!cv.wait_while_until(&mut g, |_| false, soon()).timed_out());
    fn copy_of<T: Copy + Clone + Eq>(t: &T) -> T {
        *t
    }
    #[allow(clippy::clone_on_copy)]
    let cloned = a.clone();
    assert_eq!(copy_of(&a), cloned);
    assert_ne!(a, b);
    assert!(format!("{:?}", a).contains("true"), "{:?}", a);
    *g += 1;
    drop(g);
    assert!(
        !m.is_locked(),
        "the guard still owns the mutex after the waits"
    );
}

#[test]
fn wait_while_mutates_through_the_condition() {
    // covers: Condvar::wait_while
    let m = Mutex::new(3u32);
    let cv = Condvar::new();
    let mut g = m.lock();
    // The condition may change the state it guards: count down to zero, never waiting.
    cv.wait_while(&mut g, |n| {
        *n = n.saturating_sub(1);
        false
    });
    assert_eq!(*g, 2);
}
