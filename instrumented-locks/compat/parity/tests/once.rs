//! `Once` and `OnceState`: every state a `Once` passes through, including poisoning.

use parking_lot::{Once, OnceState};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

#[test]
fn runs_once_across_threads() {
    // covers: Once::new, Once::call_once, Once::state, OnceState::New, OnceState::Done
    // covers: OnceState::done, OnceState: PartialEq, OnceState: Debug
    static INIT: Once = Once::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    assert_eq!(INIT.state(), OnceState::New);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                // Relaxed: the count is read after the scope joins these threads, which orders it.
                INIT.call_once(|| {
                    RUNS.fetch_add(1, Ordering::Relaxed);
                });
                assert!(
                    INIT.state().done(),
                    "call_once returns after the closure ran"
                );
            });
        }
    });
    // Relaxed: see above.
    assert_eq!(RUNS.load(Ordering::Relaxed), 1);
    assert_eq!(INIT.state(), OnceState::Done);
    assert_eq!(format!("{:?}", INIT.state()), "Done");
}

#[test]
fn in_progress_inside_the_closure() {
    // covers: OnceState::InProgress, Once::state, OnceState
    let once = Once::new();
    let mut seen = None;
    once.call_once(|| seen = Some(once.state()));
    assert_eq!(seen, Some(OnceState::InProgress));
}

#[test]
fn poisoning_and_call_once_force() {
    // covers: OnceState::Poisoned, OnceState::poisoned, Once::call_once_force
    // covers: OnceState: Clone, OnceState: Copy, OnceState: Eq
    let once = Once::new();
    let panicked = panic::catch_unwind(AssertUnwindSafe(|| once.call_once(|| panic!("first try"))));
    assert!(panicked.is_err());
    let state = once.state();
    assert_eq!(state, OnceState::Poisoned);
    assert!(state.poisoned() && !state.done());
    // A poisoned Once refuses `call_once`...
    let refused = panic::catch_unwind(AssertUnwindSafe(|| once.call_once(|| ())));
    assert!(refused.is_err(), "call_once on a poisoned Once panics");
    // ...but `call_once_force` runs, and tells the closure about the poison.
    let mut told = None;
    once.call_once_force(|st| told = Some(st));
    let told: OnceState = told.expect("the closure ran");
    #[allow(clippy::clone_on_copy)]
    let copy = told.clone();
    fn assert_eq_trait<T: Eq + Copy>(a: T, b: T) -> bool {
        a == b
    }
    assert!(assert_eq_trait(told, copy) && told.poisoned());
    assert_eq!(once.state(), OnceState::Done);
    // Done: neither runs again.
    once.call_once_force(|_| unreachable!("already done"));
    once.call_once(|| unreachable!("already done"));
}

#[test]
fn force_on_a_fresh_once_is_not_poisoned() {
    // covers: Once::call_once_force, OnceState::poisoned, OnceState::done
    let once = Once::new();
    let mut told = None;
    once.call_once_force(|st| told = Some((st.poisoned(), st.done())));
    assert_eq!(told, Some((false, false)));
    assert!(once.state().done());
}

#[test]
fn default_and_debug() {
    // covers: Once: Default, Once: Debug, Once
    let once = Once::default();
    assert_eq!(format!("{:?}", once), "Once { state: New }");
    once.call_once(|| ());
    assert_eq!(format!("{:?}", once), "Once { state: Done }");
}
