//! A deadlock that really happens, and the watchdog that names it: two threads take two
//! locks in opposite orders and block on each other forever. Lockdep reports the order as a
//! possible deadlock the moment the second thread tries it (before it blocks); the watchdog,
//! a moment later, reports the deadlock happening now, with every thread's held locks and
//! sites, the lock each one waits for, and the earlier report it matches. Its handler then
//! ends the process, as a service's would (after writing the report to its log).
//!
//! Run: `cargo run -p instrumented-locks --example watchdog` (or without the API call below:
//! `LOCKDEP_WATCHDOG=500 cargo run ...`, the threshold in milliseconds).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use instrumented_locks::Mutex;
use lockdep::WatchdogReport;

fn main() {
    lockdep::set_watchdog_handler(Some(Arc::new(|r: &WatchdogReport| {
        eprintln!("{r}");
        if let WatchdogReport::Deadlock(_) = r {
            eprintln!("watchdog: a deadlock is happening; exiting with status 3");
            std::process::exit(3);
        }
    })));
    lockdep::start_watchdog(Duration::from_millis(500)).expect("the watchdog's thread");

    let accounts = Arc::new(Mutex::named(100i64, "accounts"));
    let ledger = Arc::new(Mutex::named(Vec::<i64>::new(), "ledger"));
    let both_hold_one = Arc::new(Barrier::new(2));

    let teller = {
        let (accounts, ledger, b) = (
            Arc::clone(&accounts),
            Arc::clone(&ledger),
            Arc::clone(&both_hold_one),
        );
        std::thread::Builder::new()
            .name("teller".into())
            .spawn(move || {
                let mut a = accounts.lock();
                b.wait();
                let mut l = ledger.lock(); // accounts -> ledger
                *a -= 10;
                l.push(-10);
            })
            .unwrap()
    };
    let auditor = std::thread::Builder::new()
        .name("auditor".into())
        .spawn(move || {
            let l = ledger.lock();
            both_hold_one.wait();
            let a = accounts.lock(); // ledger -> accounts: the inverse order
            assert_eq!(*a + l.iter().sum::<i64>(), 100);
        })
        .unwrap();
    teller.join().unwrap();
    auditor.join().unwrap();
    unreachable!("the two threads deadlock; the watchdog ends the process");
}
