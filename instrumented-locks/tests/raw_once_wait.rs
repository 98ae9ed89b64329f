//! `raw::Once`'s waits without a closure (`wait`, `wait_force`), `new_completed`,
//! `is_completed` and `OnceState`'s `is_*` names (parking_lot 0.13's additions).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use common::raw::{key_of, wait_parked, Gate};
use instrumented_locks::raw::{Once, OnceState};

#[test]
fn new_completed_is_done_and_runs_nothing() {
    static DONE: Once = Once::new_completed();
    assert!(DONE.is_completed());
    assert_eq!(DONE.state(), OnceState::Done);
    DONE.call_once(|| unreachable!("already completed"));
    DONE.call_once_force(|_| unreachable!("already completed"));
    DONE.wait();
    DONE.wait_force();
    assert!(!Once::new().is_completed());
}

#[test]
fn state_queries_under_both_names() {
    let all = [
        OnceState::New,
        OnceState::Poisoned,
        OnceState::InProgress,
        OnceState::Done,
    ];
    assert_eq!(
        all.map(|s| (s.is_poisoned(), s.is_completed())),
        [(false, false), (true, false), (false, false), (false, true)]
    );
    assert_eq!(all.map(|s| s.is_poisoned()), all.map(|s| s.poisoned()));
    assert_eq!(all.map(|s| s.is_completed()), all.map(|s| s.done()));
    // `const fn`s, as in parking_lot 0.13.
    const QUERIES: [bool; 4] = [
        OnceState::Poisoned.is_poisoned(),
        OnceState::Done.is_completed(),
        OnceState::New.poisoned(),
        OnceState::InProgress.done(),
    ];
    assert_eq!(QUERIES, [true, true, false, false]);
}

#[test]
fn waiters_before_any_run_park_until_it_completes() {
    let once = Once::new();
    let value = AtomicUsize::new(0);
    let woken = AtomicUsize::new(0);
    thread::scope(|s| {
        let (once, value, woken) = (&once, &value, &woken);
        for force in [false, true] {
            s.spawn(move || {
                if force {
                    once.wait_force();
                } else {
                    once.wait();
                }
                // Relaxed is enough: the wait orders the closure before its return.
                assert_eq!(value.load(Ordering::Relaxed), 7);
                woken.fetch_add(1, Ordering::SeqCst);
            });
        }
        // Both park on a `Once` that nobody runs yet.
        wait_parked(key_of(once), 2);
        assert_eq!(once.state(), OnceState::New);
        assert_eq!(woken.load(Ordering::SeqCst), 0);
        once.call_once(|| value.store(7, Ordering::Relaxed));
    });
    assert_eq!(woken.load(Ordering::SeqCst), 2);
    assert!(once.is_completed());
}

#[test]
fn wait_panics_on_poison_and_wait_force_waits_through_it() {
    let once = Once::new();
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| panic!("boom")))).is_err());
    assert!(!once.is_completed());
    assert!(catch_unwind(AssertUnwindSafe(|| once.wait())).is_err());

    let gate = Gate::default();
    thread::scope(|s| {
        // A plain waiter parked while a run is in progress panics when that run panics; a
        // forced one keeps waiting for a later run.
        let runner = s.spawn(|| {
            once.call_once_force(|state| {
                assert!(state.is_poisoned());
                gate.wait();
                panic!("fails again");
            })
        });
        common::raw::wait_until("the runner started", || {
            once.state() == OnceState::InProgress
        });
        let plain = s.spawn(|| catch_unwind(AssertUnwindSafe(|| once.wait())).is_err());
        let forced = s.spawn(|| {
            once.wait_force();
            once.is_completed()
        });
        wait_parked(key_of(&once), 2);
        gate.open();
        assert!(runner.join().is_err());
        assert!(plain.join().unwrap(), "a plain wait panics on the poison");
        // The forced waiter parks again on the poisoned `Once`.
        wait_parked(key_of(&once), 1);
        assert_eq!(once.state(), OnceState::Poisoned);
        once.call_once_force(|state| assert!(state.is_poisoned()));
        assert!(forced.join().unwrap());
    });
    assert_eq!(once.state(), OnceState::Done);
}
