//! The held locks an acquisition records a dependency from. The kernel's `check_prevs_add()`
//! stops at the first held lock that is no trylock, since the locks below it reach the new
//! lock through it; these tests cover the held locks that shortcut cannot cross, each with a
//! real inversion through them that must be reported.

mod common;

use common::*;
use lockdep::{LockMap, Mode};

/// On a fresh thread: A, then B in `b_mode`, then C, held at once, released last first.
fn nest_three(a: &'static LockMap, b: &'static LockMap, b_mode: Mode, c: &'static LockMap) {
    on_thread(move || {
        lock(a);
        lock_mode(b, b_mode);
        lock(c);
        unlock(c);
        unlock(b);
        unlock(a);
    });
}

/// A held lock under a recursive read: `A -> B (recursive read) -> C` does not make the
/// strong path `A -> C` (a recursive read's acquisition cannot wait for a reader), so `A -> C`
/// is recorded directly and `C -> A` later is a cycle of A and C.
#[test]
fn a_lock_below_a_recursive_read_gets_its_own_dependency() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    nest_three(a, b, Mode::RecursiveRead, c);
    assert_reports!();
    on_thread(move || pair(c, a));
    assert_one_cycle(&["A", "C"]);
}

/// The control: with B taken exclusively, `A -> B -> C` is a strong path, and the walk stops
/// at B as the kernel's does; `C -> A` is still reported, through B.
#[test]
fn a_lock_below_an_exclusive_lock_is_reached_through_it() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    nest_three(a, b, Mode::Exclusive, c);
    assert_reports!();
    on_thread(move || pair(c, a));
    assert_one_cycle(&["A", "B", "C"]);
}

/// A held lock whose own acquisition was reported: `A -> B` closed a cycle (with an earlier
/// `B -> A`), so it was not recorded, and A does not reach C through B. `A -> C` is recorded
/// directly, and `C -> A` later is a second, independent inversion, reported too.
#[test]
fn a_lock_below_a_reported_acquisition_gets_its_own_dependency() {
    let _h = start();
    let (a, b, c) = (new_lock("A"), new_lock("B"), new_lock("C"));
    on_thread(move || pair(b, a));
    assert_reports!();
    nest_three(a, b, Mode::Exclusive, c);
    assert_one_cycle(&["A", "B"]);
    on_thread(move || pair(c, a));
    assert_one_cycle(&["A", "C"]);
}

/// A cycle closed by the top held lock's dependency: `A -> B`, then X, B, A held at once
/// (`B -> A` reported and not recorded). X does not reach A through B, so `X -> A` is recorded
/// directly, and `A -> X` later is a second, independent inversion, reported too.
#[test]
fn a_lock_below_the_one_that_closed_a_cycle_gets_its_own_dependency() {
    let _h = start();
    let (x, a, b) = (new_lock("X"), new_lock("A"), new_lock("B"));
    on_thread(move || pair(a, b));
    assert_reports!();
    nest_three(x, b, Mode::Exclusive, a);
    assert_one_cycle(&["A", "B"]);
    on_thread(move || pair(a, x));
    assert_one_cycle(&["A", "X"]);
}

/// A held lock moved to another subclass (`set_held_subclass`, the kernel's
/// `lock_set_subclass()`): `W -> X` was recorded for X's first class, not for its new one, so
/// W does not reach a later lock through X. `W -> B` is recorded directly, and `B -> W` later
/// is reported. The same after a mode change of the moved lock (it stays moved).
#[test]
fn a_lock_below_one_moved_to_another_subclass_gets_its_own_dependency() {
    let _h = start();
    for change_mode in [false, true] {
        let (w, x, b) = (new_lock("W"), new_lock("X"), new_lock("B"));
        on_thread(move || {
            lock(w);
            lock(x);
            lockdep::set_held_subclass(x, 1);
            if change_mode {
                lockdep::set_held_mode(x, Mode::Read);
            }
            lock(b);
            unlock(b);
            unlock(x);
            unlock(w);
        });
        assert_reports!();
        on_thread(move || pair(b, w));
        assert_one_cycle(&["B", "W"]);
        lockdep::reset();
    }
}
