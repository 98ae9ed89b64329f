//! A thread asleep in a condvar wait does not hold the wait's mutex: other threads' views of
//! it (the all-threads dump, the watchdog's wait-for chains, `deadlocks_now`, the
//! cross-thread checks) show it sleeping on the condvar, with the mutex it will re-lock, and
//! the mutex's real holder as its only holder. Interleavings are made with channels and
//! barriers; a thread is known to sleep when the dump shows its condvar wait (polled, with a
//! generous hang guard), and is known to be queued on the condvar once another thread locked
//! the mutex (a waiter releases it only after it is queued).
#![cfg(feature = "validate")]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use common::{assert_reports, dump_when, next_about, start, HANG};
use instrumented_locks::{Condvar, Mutex};
use lockdep::{AllLocks, KeyMisuse, Report, ThreadLocks, WatchdogReport};

fn named<'a>(d: &'a AllLocks, prefix: &str) -> Vec<&'a ThreadLocks> {
    d.threads
        .iter()
        .filter(|t| t.thread.name.starts_with(prefix))
        .collect()
}

/// The threads of `d` whose names start with `prefix` and that sleep in a condvar wait on the
/// condvar made at line `cv` of this file to re-lock `mutex` (an instance).
fn sleepers(d: &AllLocks, prefix: &str, cv: u32, mutex: usize) -> usize {
    named(d, prefix)
        .iter()
        .filter(|t| {
            t.condvar.as_ref().is_some_and(|c| {
                c.name == "Condvar"
                    && c.site
                        .is_some_and(|s| s.file() == file!() && s.line() == cv)
                    && c.mutex.instance == mutex
            })
        })
        .count()
}

/// Wakes the one waiter of `cv`, retrying until there is one: the waiter may be announced as
/// sleeping an instant before it is queued (its condition is already true, so a wake-up that
/// finds it makes it return).
fn notify_the_waiter(cv: &Condvar) {
    let start = Instant::now();
    while !cv.notify_one() {
        assert!(start.elapsed() < HANG, "hang guard: no waiter to notify");
        std::thread::yield_now();
    }
}

const THRESHOLD: Duration = Duration::from_millis(600);

/// Three workers sleep on one condvar, a fourth thread holds the mutex, a fifth blocks on
/// it: the dump shows one holder, the watchdog's chain for the blocked thread names it, no
/// sleeper is reported; after `notify_all` each worker re-locks in turn, seen as the only
/// holder each time, and finally nothing is left. One test: the watchdog is process-wide.
#[test]
fn condvar_sleepers_do_not_hold_the_mutex() {
    let _h = start();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    lockdep::set_watchdog_handler(Some(Arc::new(move |r: &WatchdogReport| {
        let _ = tx.lock().unwrap().send(r.clone());
    })));
    lockdep::start_watchdog(THRESHOLD).unwrap();

    let m = Arc::new(Mutex::named(false, "cvs queue"));
    let cv = Arc::new(Condvar::new());
    let cv_line = line!() - 1;
    let m_inst = std::ptr::from_ref(m.lock_map().unwrap()).addr();
    // The turn of whoever owns the mutex after the notification: it reports, then the main
    // thread checks the dump while it holds the mutex.
    let (owner_tx, owner_rx) = mpsc::channel::<String>();
    let turn = Arc::new(Barrier::new(2));
    let relocker = |name: String| {
        let (m, cv, owner_tx, turn) = (
            Arc::clone(&m),
            Arc::clone(&cv),
            owner_tx.clone(),
            Arc::clone(&turn),
        );
        std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let mut g = m.lock();
                cv.wait_while(&mut g, |go| !*go);
                // Its own record agrees: the mutex is held again, by this thread.
                let held: Vec<_> = lockdep::held_locks().iter().map(|l| l.name).collect();
                assert_eq!(held, [Some("cvs queue")], "{name}");
                owner_tx.send(name).unwrap();
                turn.wait();
                drop(g);
                assert_eq!(lockdep::held_count(), 0);
            })
            .unwrap()
    };
    let workers: Vec<_> = (0..3).map(|i| relocker(format!("cvs-worker{i}"))).collect();
    dump_when(|d| sleepers(d, "cvs-worker", cv_line, m_inst) == 3);

    // The holder: its lock succeeds only once every worker is queued on the condvar.
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let holder = {
        let (m, cv, owner_tx, turn) = (
            Arc::clone(&m),
            Arc::clone(&cv),
            owner_tx.clone(),
            Arc::clone(&turn),
        );
        std::thread::Builder::new()
            .name("cvs-holder".into())
            .spawn(move || {
                let mut g = m.lock();
                held_tx.send(()).unwrap();
                go_rx.recv().unwrap(); // holds the mutex, with no lock operation
                *g = true;
                assert_eq!(cv.notify_all(), 3, "every worker is queued");
                owner_tx.send("cvs-holder".into()).unwrap();
                turn.wait();
                drop(g);
            })
            .unwrap()
    };
    held_rx.recv().unwrap();
    let blocked = {
        let (m, owner_tx, turn) = (Arc::clone(&m), owner_tx.clone(), Arc::clone(&turn));
        std::thread::Builder::new()
            .name("cvs-blocked".into())
            .spawn(move || {
                let g = m.lock();
                owner_tx.send("cvs-blocked".into()).unwrap();
                turn.wait();
                drop(g);
            })
            .unwrap()
    };
    drop(owner_tx);

    // The dump: one holder, three sleepers on the condvar, one thread blocked on the mutex.
    let d = dump_when(|d| {
        named(d, "cvs-blocked")
            .first()
            .is_some_and(|t| t.waiting.is_some())
    });
    let holders: Vec<_> = d
        .holders_of(m_inst)
        .iter()
        .map(|t| t.thread.name.as_str())
        .collect();
    assert_eq!(holders, ["cvs-holder"], "exactly one holder:{d}");
    assert_eq!(sleepers(&d, "cvs-worker", cv_line, m_inst), 3, "{d}");
    for w in named(&d, "cvs-worker") {
        assert!(w.held.is_empty(), "a sleeper holds nothing:{d}");
        assert!(
            w.waiting.is_none(),
            "a sleeper is not blocked on a lock:{d}"
        );
        let c = w.condvar.as_ref().unwrap();
        assert_eq!(c.mutex.name, Some("cvs queue"));
    }
    let b = named(&d, "cvs-blocked")[0];
    assert_eq!(b.waiting.as_ref().unwrap().lock.instance, m_inst);
    let text = d.to_string();
    assert!(
        text.contains(&format!("(Condvar, made at {}:{cv_line}:", file!())),
        "{text}"
    );
    assert!(
        text.contains(&format!("), to re-lock: {m_inst:#x} (cvs queue)")),
        "{text}"
    );
    assert!(text.contains("1 lock held by cvs-holder/"), "{text}");
    assert!(text.contains("no locks held by cvs-worker"), "{text}");
    assert!(lockdep::deadlocks_now().is_empty());

    // The watchdog: the blocked thread's chain names the real holder.
    match next_about(&rx, "cvs-") {
        WatchdogReport::Hung(h) => {
            let names: Vec<_> = h.chain.iter().map(|t| t.thread.name.as_str()).collect();
            assert_eq!(names, ["cvs-blocked", "cvs-holder"], "{h}");
            assert_eq!(h.chain[0].waiting.as_ref().unwrap().lock.instance, m_inst);
            let held: Vec<_> = h.chain[1].held.iter().map(|l| l.instance).collect();
            assert_eq!(held, [m_inst], "{h}");
        }
        other => panic!("expected a hung wait, got {other:#?}"),
    }

    // Notified, everyone re-locks in turn; each owner is the only holder while it owns it,
    // and every other thread of the test sleeps, or waits for the mutex.
    go_tx.send(()).unwrap();
    let mut owners = Vec::new();
    for owner in &owner_rx {
        let d = lockdep::all_held_locks();
        let holders: Vec<_> = d
            .holders_of(m_inst)
            .iter()
            .map(|t| t.thread.name.as_str())
            .collect();
        assert_eq!(holders, [owner.as_str()], "{d}");
        let ours = ["cvs-blocked", "cvs-holder", "cvs-worker"];
        let others = d.threads.iter().filter(|t| {
            t.thread.name != owner && ours.iter().any(|p| t.thread.name.starts_with(p))
        });
        for t in others {
            let waits = t
                .waiting
                .as_ref()
                .is_some_and(|w| w.lock.instance == m_inst);
            let sleeps = t
                .condvar
                .as_ref()
                .is_some_and(|c| c.mutex.instance == m_inst);
            assert!(waits ^ sleeps, "{} waits or sleeps:{d}", t.thread.name);
            assert!(t.held.is_empty(), "{d}");
        }
        owners.push(owner);
        turn.wait();
    }
    owners.sort();
    assert_eq!(
        owners,
        [
            "cvs-blocked",
            "cvs-holder",
            "cvs-worker0",
            "cvs-worker1",
            "cvs-worker2"
        ]
    );
    for t in workers.into_iter().chain([holder, blocked]) {
        t.join().unwrap();
    }
    let d = lockdep::all_held_locks();
    assert!(named(&d, "cvs-").is_empty(), "nothing left:{d}");
    lockdep::stop_watchdog();
    lockdep::set_watchdog_handler(None);
    // The sleepers slept longer than the blocked thread waited: had the watchdog judged
    // them, their reports would have come before the blocked thread's, or in its round.
    let others: Vec<_> = rx
        .try_iter()
        .filter(|r| match r {
            WatchdogReport::Hung(h) => h.chain[0].thread.name != "cvs-blocked",
            _ => true,
        })
        .collect();
    assert!(
        others.is_empty(),
        "only the blocked thread is reported: {others:#?}"
    );
    assert_reports!();
}

/// A key unregistered while a thread sleeps in a condvar wait on a lock of it is reported:
/// the wait's guard lives on and re-locks the lock. The report shows the sleeper sleeping,
/// not holding; its later re-lock and unlock are clean.
#[test]
fn a_key_unregistered_under_a_condvar_sleeper_is_reported() {
    let _h = start();
    let key = lockdep::DynamicKey::new("cvs conn");
    let m = Arc::new(Mutex::with_dynamic_key(0u8, &key, "cvs conn lock"));
    let cv = Arc::new(Condvar::new());
    let cv_line = line!() - 1;
    let go = Arc::new(AtomicBool::new(false));
    let m_inst = std::ptr::from_ref(m.lock_map().unwrap()).addr();
    let sleeper = {
        let (m, cv, go) = (Arc::clone(&m), Arc::clone(&cv), Arc::clone(&go));
        std::thread::Builder::new()
            .name("cvs-key-sleeper".into())
            // Relaxed: the flag only decides whether to wait again; the mutex orders the rest.
            .spawn(move || {
                let mut g = m.lock();
                cv.wait_while(&mut g, |_| !go.load(Ordering::Relaxed));
                drop(g);
                assert_eq!(lockdep::held_count(), 0);
            })
            .unwrap()
    };
    dump_when(|d| sleepers(d, "cvs-key-sleeper", cv_line, m_inst) == 1);
    drop(key);
    let r = assert_reports!(Report::KeyMisuse {
        kind: KeyMisuse::UnregisterWhileHeld,
        ..
    });
    let Report::KeyMisuse { held_by, .. } = &r[0] else {
        unreachable!()
    };
    assert_eq!(held_by.len(), 1, "{r:#?}");
    assert_eq!(held_by[0].thread.name, "cvs-key-sleeper");
    assert!(held_by[0].held.is_empty(), "it holds nothing: {r:#?}");
    let c = held_by[0]
        .condvar
        .as_ref()
        .expect("it sleeps on the condvar");
    assert_eq!(c.mutex.name, Some("cvs conn lock"));
    assert!(r[0].to_string().contains("to re-lock:"), "{}", r[0]);
    // Relaxed: see the sleeper.
    go.store(true, Ordering::Relaxed);
    notify_the_waiter(&cv);
    sleeper.join().unwrap();
    assert_reports!();
}

/// A lock reported freed while a thread sleeps in a condvar wait on it (destroyed or
/// re-initialised: `check_held_lock_freed`) is reported with the sleeper, leaves the
/// sleeper's stack, and the wait's guard then releases nothing: no "bad unlock" later.
#[test]
fn a_lock_freed_under_a_condvar_sleeper_is_reported_and_the_sleeper_stays_clean() {
    let _h = start();
    let m = Arc::new(Mutex::named(0u8, "cvs doomed"));
    let other = Arc::new(Mutex::named(0u8, "cvs other"));
    let cv = Arc::new(Condvar::new());
    let cv_line = line!() - 1;
    let go = Arc::new(AtomicBool::new(false));
    let m_inst = std::ptr::from_ref(m.lock_map().unwrap()).addr();
    let sleeper = {
        let (m, other, cv, go) = (
            Arc::clone(&m),
            Arc::clone(&other),
            Arc::clone(&cv),
            Arc::clone(&go),
        );
        std::thread::Builder::new()
            .name("cvs-freed-sleeper".into())
            .spawn(move || {
                let keep = other.lock();
                let mut g = m.lock();
                // Relaxed: the flag only decides whether to wait again.
                cv.wait_while(&mut g, |_| !go.load(Ordering::Relaxed));
                // The freed lock left this thread's stack: only `other` is held.
                let held: Vec<_> = lockdep::held_locks().iter().map(|l| l.name).collect();
                assert_eq!(held, [Some("cvs other")]);
                drop(g);
                drop(keep);
                assert_eq!(lockdep::held_count(), 0);
            })
            .unwrap()
    };
    let d = dump_when(|d| sleepers(d, "cvs-freed-sleeper", cv_line, m_inst) == 1);
    assert!(d.holders_of(m_inst).is_empty(), "{d}");
    lockdep::check_held_lock_freed(m.lock_map().unwrap());
    let r = assert_reports!(Report::HeldLockFreed { .. });
    let Report::HeldLockFreed {
        thread,
        lock,
        held,
        freed_by,
        ..
    } = &r[0]
    else {
        unreachable!()
    };
    assert_eq!(thread.name, "cvs-freed-sleeper");
    assert_eq!(lock.name, Some("cvs doomed"));
    assert!(freed_by.is_some());
    let held: Vec<_> = held.iter().map(|l| l.name).collect();
    assert_eq!(held, [Some("cvs other")]);
    // Relaxed: see the sleeper.
    go.store(true, Ordering::Relaxed);
    notify_the_waiter(&cv);
    sleeper.join().unwrap();
    assert_reports!();
}

/// The std-flavoured condvar shares the path: its sleeper is shown sleeping, not holding.
#[test]
fn a_std_sync_condvar_sleeper_does_not_hold_the_mutex() {
    let _h = start();
    let m = Arc::new(instrumented_locks::std_sync::Mutex::new(false));
    let cv = Arc::new(instrumented_locks::std_sync::Condvar::new());
    let sleeper = {
        let (m, cv) = (Arc::clone(&m), Arc::clone(&cv));
        std::thread::Builder::new()
            .name("cvs-std-sleeper".into())
            .spawn(move || {
                let g = m.lock().unwrap();
                let g = cv.wait_while(g, |go| !*go).unwrap();
                assert_eq!(lockdep::held_count(), 1);
                drop(g);
            })
            .unwrap()
    };
    let d = dump_when(|d| {
        named(d, "cvs-std-sleeper")
            .first()
            .is_some_and(|t| t.condvar.is_some())
    });
    let t = named(&d, "cvs-std-sleeper")[0];
    assert!(t.held.is_empty() && t.waiting.is_none(), "{d}");
    let inst = t.condvar.as_ref().unwrap().mutex.instance;
    assert!(d.holders_of(inst).is_empty(), "{d}");
    // Locking succeeds only once the sleeper is queued.
    *m.lock().unwrap() = true;
    cv.notify_one();
    sleeper.join().unwrap();
    assert_reports!();
}

/// A thread blocked on a lock that a condvar sleeper kept while it waits: its chain ends at
/// the sleeper, shown sleeping on the condvar (not blocked on its mutex), and the sleep
/// itself is never reported.
#[test]
fn a_chain_ends_at_a_condvar_sleeper_holding_another_lock() {
    let _h = start();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    lockdep::set_watchdog_handler(Some(Arc::new(move |r: &WatchdogReport| {
        let _ = tx.lock().unwrap().send(r.clone());
    })));
    lockdep::start_watchdog(THRESHOLD).unwrap();
    let outer = Arc::new(Mutex::named(0u8, "cvs outer"));
    let m = Arc::new(Mutex::named(false, "cvs inner"));
    let cv = Arc::new(Condvar::new());
    let cv_line = line!() - 1;
    let m_inst = std::ptr::from_ref(m.lock_map().unwrap()).addr();
    let sleeper = {
        let (outer, m, cv) = (Arc::clone(&outer), Arc::clone(&m), Arc::clone(&cv));
        std::thread::Builder::new()
            .name("cvs-outer-sleeper".into())
            .spawn(move || {
                let _o = outer.lock();
                let mut g = m.lock();
                cv.wait_while(&mut g, |go| !*go);
            })
            .unwrap()
    };
    dump_when(|d| sleepers(d, "cvs-outer-sleeper", cv_line, m_inst) == 1);
    let behind = {
        let outer = Arc::clone(&outer);
        std::thread::Builder::new()
            .name("cvs-behind".into())
            .spawn(move || drop(outer.lock()))
            .unwrap()
    };
    match next_about(&rx, "cvs-") {
        WatchdogReport::Hung(h) => {
            let names: Vec<_> = h.chain.iter().map(|t| t.thread.name.as_str()).collect();
            assert_eq!(names, ["cvs-behind", "cvs-outer-sleeper"], "{h}");
            let s = &h.chain[1];
            let held: Vec<_> = s.held.iter().map(|l| l.name).collect();
            assert_eq!(held, [Some("cvs outer")], "{h}");
            assert!(s.waiting.is_none(), "{h}");
            assert_eq!(s.condvar.as_ref().unwrap().mutex.instance, m_inst);
            let text = h.to_string();
            assert!(
                text.contains(&format!(
                    "cvs-outer-sleeper/{} sleeps in a condvar wait on {:#x} (Condvar, made at {}:{cv_line}:",
                    s.thread.id,
                    s.condvar.as_ref().unwrap().condvar,
                    file!()
                )),
                "{text}"
            );
        }
        other => panic!("expected a hung wait, got {other:#?}"),
    }
    assert!(lockdep::deadlocks_now().is_empty());
    // Locking succeeds only once the sleeper is queued.
    *m.lock() = true;
    assert!(cv.notify_one());
    sleeper.join().unwrap();
    behind.join().unwrap();
    lockdep::stop_watchdog();
    lockdep::set_watchdog_handler(None);
    let others: Vec<_> = rx
        .try_iter()
        .filter(|r| match r {
            WatchdogReport::Hung(h) => h.chain[0].thread.name != "cvs-behind",
            _ => true,
        })
        .collect();
    assert!(
        others.is_empty(),
        "only the thread behind is reported: {others:#?}"
    );
    assert_reports!();
}
