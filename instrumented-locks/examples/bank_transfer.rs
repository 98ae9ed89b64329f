//! An ABBA bug in a bank: `transfer(from, to)` locks `from`, then `to`. One customer moves
//! money from checking to savings, another from savings to checking. Run concurrently,
//! the two transfers can deadlock; lockdep reports it although this run never deadlocks
//! (the transfers run one after the other).
//!
//! Run: `cargo run -p instrumented-locks --example bank_transfer`

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use instrumented_locks::Mutex;

/// An account: a fixed id and a locked balance.
struct Account {
    id: u32,
    balance: Mutex<i64>,
}

/// The bug: the lock order depends on the direction of the transfer.
fn transfer(from: &Account, to: &Account, amount: i64) {
    let mut f = from.balance.lock();
    let mut t = to.balance.lock();
    *f -= amount;
    *t += amount;
}

/// The fix: always lock the account with the lower id first.
fn transfer_ordered(from: &Account, to: &Account, amount: i64) {
    let (mut f, mut t) = if from.id < to.id {
        let f = from.balance.lock();
        (f, to.balance.lock())
    } else {
        let t = to.balance.lock();
        (from.balance.lock(), t)
    };
    *f -= amount;
    *t += amount;
}

static REPORTS: AtomicUsize = AtomicUsize::new(0);

fn main() {
    // Print each report as lockdep does by default, and count them.
    lockdep::set_policy(lockdep::Policy::Callback(Arc::new(
        |r: &lockdep::Report| {
            // Relaxed: a counter read after the threads are joined.
            REPORTS.fetch_add(1, Ordering::Relaxed);
            eprintln!("{r}");
        },
    )));

    let checking = Arc::new(Account {
        id: 1,
        balance: Mutex::named(100, "checking"),
    });
    let savings = Arc::new(Account {
        id: 2,
        balance: Mutex::named(100, "savings"),
    });

    println!("alice: checking -> savings");
    let (c, s) = (checking.clone(), savings.clone());
    std::thread::Builder::new()
        .name("alice".into())
        .spawn(move || transfer(&c, &s, 10))
        .unwrap()
        .join()
        .unwrap();

    println!("bob: savings -> checking");
    let (c, s) = (checking.clone(), savings.clone());
    std::thread::Builder::new()
        .name("bob".into())
        .spawn(move || transfer(&s, &c, 20))
        .unwrap()
        .join()
        .unwrap();
    // Relaxed: see above.
    let buggy = REPORTS.load(Ordering::Relaxed);
    println!("buggy transfers: {buggy} report(s)");

    // The fixed version, in a clean validator: both directions take the locks in id order.
    lockdep::reset();
    // Relaxed: see above.
    REPORTS.store(0, Ordering::Relaxed);
    transfer_ordered(&checking, &savings, 10);
    transfer_ordered(&savings, &checking, 20);
    // Relaxed: see above.
    let fixed = REPORTS.load(Ordering::Relaxed);
    println!("ordered transfers: {fixed} report(s)");
    println!(
        "balances: checking {}, savings {}",
        checking.balance.lock(),
        savings.balance.lock()
    );
    assert_eq!(
        (buggy, fixed),
        (1, 0),
        "the buggy transfers must be reported once and the ordered ones not at all (a \
         suppression file that covers the buggy order hides it: see LOCKDEP_SUPPRESSIONS)"
    );
}
