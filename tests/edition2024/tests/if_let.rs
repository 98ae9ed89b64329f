//! Edition 2024's `if let` rescoping, as the validator sees it: a guard temporary of the
//! scrutinee is dropped before the `else` block (so re-locking there is fine) but lives through
//! the `then` block (so re-locking there is recursive locking). Scenario C25 (b1, b2) in the
//! project's list of validator scenarios; public source: rust-lang/rust issue #131154
//! (stabilizing `if_let_rescope`). The edition-2021 side is in `lockdep/tests/scrutinee.rs`.

#[path = "../../../lockdep/tests/support/guarded.rs"]
mod guarded;

use std::collections::HashMap;

use guarded::{Lock, recursive_lines, reported, silent, start};

#[test]
fn the_guard_is_gone_before_else() {
    let _s = start();
    let m = Lock::new(HashMap::from([(1, "one")]));
    silent(|| {
        if let Some(v) = m.write().get(&2) {
            assert!(!v.is_empty());
        } else {
            m.write().insert(2, "two");
        }
    });
    assert_eq!(m.read().get(&2), Some(&"two"));
}

#[test]
fn the_guard_lives_through_the_then_block() {
    let _s = start();
    let m = Lock::new(HashMap::from([(1, "one")]));
    let scrutinee = line!() + 2;
    let r = reported(|| {
        if let Some(v) = m.write().get(&1) {
            m.write().insert(3, v);
        }
    });
    assert_eq!(recursive_lines(&r), (scrutinee, scrutinee + 1));
}
