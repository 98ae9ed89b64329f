//! Inverted-order probe, copied by `scripts/real-crates.sh` into a real crate's `tests/`.
//!
//! Takes two `parking_lot::Mutex`es in one order and then in the other, one after the other on
//! one thread, so it never deadlocks. With the real parking_lot nothing is reported; with the
//! compat crate patched in, lockdep must report a circular locking dependency that names this
//! file and the lines marked `PROBE-ORDER-1` / `PROBE-ORDER-2` below.
//!
//! The locks are built on different lines from different types of data, so they are two lock
//! classes under any class rule (construction site, site and type).

use parking_lot::Mutex;

#[test]
fn inverted_order_is_reported() {
    let accounts = Mutex::new(vec![100u64, 50]);
    let audit_log = Mutex::new(String::new());

    {
        let mut balances = accounts.lock(); // PROBE-ORDER-1 outer
        let mut log = audit_log.lock(); // PROBE-ORDER-1 inner
        balances[0] -= 10;
        log.push_str("debit 10;");
    }
    {
        let mut log = audit_log.lock(); // PROBE-ORDER-2 outer
        let mut balances = accounts.lock(); // PROBE-ORDER-2 inner
        balances[1] += 10;
        log.push_str("credit 10;");
    }

    assert_eq!(*accounts.lock(), [90, 60]);
    assert_eq!(*audit_log.lock(), "debit 10;credit 10;");
}
