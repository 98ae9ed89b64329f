//! An async bank with two bugs lockdep finds without the deadlock happening:
//!
//! 1. `transfer(from, to)` locks the `from` account's `tokio::sync::Mutex`, awaits (an audit
//!    call), then locks `to`. Two transfers in opposite directions, run by two tasks, can
//!    deadlock; this run makes them one after the other, and lockdep reports the cycle.
//! 2. The audit log is a *blocking* mutex whose guard is held across an `.await`: on a
//!    single-threaded executor the next task that logs blocks the thread forever. lockdep
//!    reports the held-across-await at the first such `Pending`.
//!
//! Run: `cargo run -p instrumented-locks --features tokio --example async_bank`

use std::sync::Arc;

use instrumented_locks::task;
use instrumented_locks::tokio::Mutex;

struct Account {
    name: &'static str,
    balance: Mutex<i64>,
}

/// Bug 1: the lock order depends on the direction of the transfer.
async fn transfer(from: &Account, to: &Account, amount: i64) {
    let mut f = from.balance.lock().await;
    tokio::task::yield_now().await; // an audit call: the task may resume on another worker
    let mut t = to.balance.lock().await;
    *f -= amount;
    *t += amount;
}

/// Bug 2: a blocking guard held across an await.
async fn log(journal: &instrumented_locks::Mutex<Vec<String>>, line: String) {
    let mut j = journal.lock();
    j.push(line);
    tokio::task::yield_now().await; // flushing, with the journal still locked
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let checking = Arc::new(Account {
        name: "checking",
        balance: Mutex::named(100, "checking"),
    });
    let savings = Arc::new(Account {
        name: "savings",
        balance: Mutex::named(100, "savings"),
    });
    rt.block_on(async {
        let (c, s) = (checking.clone(), savings.clone());
        task::spawn(async move { transfer(&c, &s, 10).await })
            .await
            .expect("transfer 1");
        let (c, s) = (checking.clone(), savings.clone());
        // Prints "possible circular locking dependency detected", naming the task.
        task::spawn(async move { transfer(&s, &c, 5).await })
            .await
            .expect("transfer 2");
    });
    let journal = instrumented_locks::Mutex::named(Vec::new(), "journal");
    // Prints "blocking lock held across an await".
    rt.block_on(task::instrument(log(
        &journal,
        format!("{} -> {}", checking.name, savings.name),
    )));
    println!(
        "balances: checking {}, savings {}; journal {:?}",
        *checking.balance.try_lock().expect("free"),
        *savings.balance.try_lock().expect("free"),
        journal.lock()
    );
}
