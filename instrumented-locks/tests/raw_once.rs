//! `raw::Once`: one run among concurrent callers, waiting callers, poisoning and
//! `call_once_force`.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::thread;

use common::raw::{key_of, wait_parked, Gate};
use instrumented_locks::raw::{Once, OnceState};

#[test]
fn concurrent_callers_run_the_closure_once_and_see_its_effects() {
    const THREADS: usize = 8;
    for _ in 0..if cfg!(miri) { 2 } else { 50 } {
        let once = Once::new();
        let runs = AtomicUsize::new(0);
        let value = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    once.call_once(|| {
                        runs.fetch_add(1, Ordering::Relaxed);
                        thread::yield_now();
                        value.store(42, Ordering::Relaxed);
                    });
                    // Relaxed is enough: `call_once` orders the closure before its return.
                    assert_eq!(value.load(Ordering::Relaxed), 42);
                });
            }
        });
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        assert_eq!(once.state(), OnceState::Done);
    }
}

#[test]
fn waiters_park_until_the_run_completes() {
    let once = Once::new();
    let gate = Gate::default();
    let waiters_done = AtomicUsize::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            once.call_once(|| {
                assert_eq!(once.state(), OnceState::InProgress);
                gate.wait();
            })
        });
        common::raw::wait_until("the runner started", || {
            once.state() == OnceState::InProgress
        });
        for _ in 0..3 {
            s.spawn(|| {
                once.call_once(|| unreachable!("the first closure completes"));
                waiters_done.fetch_add(1, Ordering::SeqCst);
            });
        }
        wait_parked(key_of(&once), 3);
        assert_eq!(once.state(), OnceState::InProgress);
        assert_eq!(waiters_done.load(Ordering::SeqCst), 0);
        gate.open();
    });
    assert_eq!(waiters_done.load(Ordering::SeqCst), 3);
}

#[test]
fn a_panicking_closure_poisons() {
    let once = Once::new();
    assert_eq!(once.state(), OnceState::New);
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| panic!("boom")))).is_err());
    assert_eq!(once.state(), OnceState::Poisoned);
    assert!(once.state().poisoned() && !once.state().done());
    // Plain `call_once` panics on a poisoned `Once`, without running its closure.
    let ran = AtomicUsize::new(0);
    assert!(catch_unwind(AssertUnwindSafe(|| once.call_once(|| {
        ran.fetch_add(1, Ordering::Relaxed);
    })))
    .is_err());
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    // A forced call runs, sees the poison, and a panic in it keeps the `Once` poisoned.
    assert!(
        catch_unwind(AssertUnwindSafe(|| once.call_once_force(|state| {
            assert!(state.poisoned());
            panic!("again");
        })))
        .is_err()
    );
    assert_eq!(once.state(), OnceState::Poisoned);
    once.call_once_force(|state| {
        assert_eq!(state, OnceState::Poisoned);
        ran.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(once.state(), OnceState::Done);
    assert!(once.state().done());
    once.call_once_force(|_| unreachable!("done"));
    once.call_once(|| unreachable!("done"));
    assert_eq!(ran.load(Ordering::Relaxed), 1);
}

#[test]
fn a_fresh_force_call_sees_new() {
    let once = Once::new();
    once.call_once_force(|state| assert_eq!(state, OnceState::New));
    assert!(once.state().done());
}

/// Runs a closure that waits for the gate and then panics, while `waiters` callers park.
fn run_then_panic<R: Send>(once: &Once, waiters: &[&(dyn Fn() -> R + Sync)]) -> Vec<R> {
    let gate = Gate::default();
    thread::scope(|s| {
        let runner = s.spawn(|| {
            catch_unwind(AssertUnwindSafe(|| {
                once.call_once(|| {
                    gate.wait();
                    panic!("the first run fails");
                })
            }))
            .is_err()
        });
        wait_parked_or_running(once);
        let handles: Vec<_> = waiters.iter().map(|w| s.spawn(w)).collect();
        wait_parked(key_of(once), waiters.len());
        gate.open();
        assert!(runner.join().unwrap());
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Waits until the runner has claimed the `Once`.
fn wait_parked_or_running(once: &Once) {
    common::raw::wait_until("the runner started", || {
        once.state() == OnceState::InProgress
    });
}

#[test]
fn parked_callers_are_woken_by_a_panic_and_panic_too() {
    let once = Once::new();
    let plain = || catch_unwind(AssertUnwindSafe(|| once.call_once(|| {}))).is_err();
    assert_eq!(run_then_panic(&once, &[&plain, &plain]), [true, true]);
    assert_eq!(once.state(), OnceState::Poisoned);
}

#[test]
fn a_parked_forced_caller_runs_after_the_panic() {
    let once = Once::new();
    let forced = || {
        let mut seen = None;
        once.call_once_force(|state| seen = Some(state));
        seen
    };
    assert_eq!(
        run_then_panic(&once, &[&forced]),
        [Some(OnceState::Poisoned)]
    );
    assert_eq!(once.state(), OnceState::Done);
}

static GLOBAL: Once = Once::new();

#[test]
fn const_default_debug_send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Once>();
    GLOBAL.call_once(|| {});
    assert_eq!(format!("{GLOBAL:?}"), "Once { state: Done }");
    assert_eq!(format!("{:?}", Once::default()), "Once { state: New }");
    assert_eq!(
        [
            OnceState::New,
            OnceState::Poisoned,
            OnceState::InProgress,
            OnceState::Done
        ]
        .map(|s| (s.poisoned(), s.done())),
        [(false, false), (true, false), (false, false), (false, true)]
    );
}
