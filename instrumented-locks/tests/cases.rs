//! Real-world locking patterns that concern lock wrappers, run through this crate's types,
//! each asserting the verdict a correct validator gives: re-locking one instance (C06),
//! condition-variable waits (C14), locks across thread spawn and join (C15), guards and
//! thread-local destructors at thread exit (C16), panics while holding locks (C17). The
//! case numbers are this project's own catalogue ids, kept so a test can be matched to its
//! case.

#![cfg(feature = "validate")]

mod common;

use std::cell::RefCell;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::{cycles, expect_panic, on_thread, one_cycle, recursive, start, take, HANG};
use instrumented_locks::{std_sync, thread, Condvar, Mutex};
use lockdep::{held_count, held_locks, Report};

/// C06: re-locking the same instance, directly and through a helper, is reported before
/// the real lock blocks; another thread locking it after the unlock is silent.
#[test]
fn c06_relock_reported_before_blocking() {
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    common::set_panicking(true);
    let helper = |m: &Mutex<i32>| *m.lock() += 1;
    {
        let _g = a.lock();
        expect_panic(|| drop(a.lock()));
        expect_panic(|| helper(&a));
    }
    common::set_panicking(false);
    assert_eq!(recursive(&take()), 2);
    assert_eq!(held_count(), 0);
    let a2 = a.clone();
    on_thread(move || drop(a2.lock()));
    assert!(take().is_empty());
}

/// C14 (a): a plain wait with a notifier is silent, and M is held exactly once afterwards.
#[test]
fn c14a_condvar_wait_is_silent() {
    let _h = start();
    let pair = Arc::new((Mutex::named(false, "M"), Condvar::new()));
    let pair2 = pair.clone();
    let (tx, rx) = mpsc::channel();
    let notifier = std::thread::spawn(move || {
        rx.recv_timeout(HANG).expect("waiter never got ready");
        let (m, cv) = &*pair2;
        *m.lock() = true;
        cv.notify_one();
    });
    let (m, cv) = &*pair;
    let mut g = m.lock();
    tx.send(()).unwrap();
    while !*g {
        assert!(!cv.wait_for(&mut g, HANG).timed_out(), "notifier hung");
    }
    let held = held_locks();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].class_name, "M");
    drop(g);
    notifier.join().unwrap();
    assert_eq!(held_count(), 0);
    assert!(
        take().is_empty(),
        "no recursive-lock or unlock-balance complaint"
    );
}

/// C14 (b): waiting on M while holding B taken after M re-acquires M under B: M -> B -> M.
#[test]
fn c14b_wait_while_holding_a_later_lock_is_a_cycle() {
    let _h = start();
    let m = Mutex::named(0, "M");
    let b = Mutex::named(0, "B");
    let cv = Condvar::new();
    {
        let _gm = m.lock();
        let _gb = b.lock();
    }
    assert!(take().is_empty());
    let mut gm = m.lock();
    let gb = b.lock();
    let t = cv.wait_for(&mut gm, Duration::from_millis(1));
    assert!(t.timed_out());
    assert_eq!(one_cycle(&take()), ["B", "M", "B"]);
    drop(gb);
    drop(gm);
    assert_eq!(held_count(), 0);
}

/// C14 with the std-flavoured condvar: the same verdicts through `wait_timeout`.
#[test]
fn c14_std_flavoured_condvar() {
    let _h = start();
    let m = std_sync::Mutex::named(0, "M");
    let b = std_sync::Mutex::named(0, "B");
    let cv = std_sync::Condvar::new();
    let g = m.lock().unwrap();
    let (g, t) = cv.wait_timeout(g, Duration::from_millis(1)).unwrap();
    assert!(t.timed_out());
    assert_eq!(held_count(), 1);
    drop(g);
    assert!(take().is_empty());
    {
        let _gm = m.lock().unwrap();
        let _gb = b.lock().unwrap();
    }
    let gm = m.lock().unwrap();
    let gb = b.lock().unwrap();
    let (gm, _) = cv.wait_timeout(gm, Duration::from_millis(1)).unwrap();
    assert_eq!(one_cycle(&take()), ["B", "M", "B"]);
    drop((gb, gm));
}

/// C15 (a): a spawned thread starts with an empty held set: no A -> B from the parent.
#[test]
fn c15a_child_thread_starts_with_no_held_locks() {
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    let b = Arc::new(Mutex::named(0, "B"));
    {
        let _ga = a.lock();
        let b2 = b.clone();
        let child = std::thread::spawn(move || {
            assert_eq!(held_count(), 0);
            drop(b2.lock());
        });
        child.join().unwrap();
    }
    let (a2, b2) = (a.clone(), b.clone());
    on_thread(move || {
        let _gb = b2.lock();
        let _ga = a2.lock();
    });
    assert!(take().is_empty());
}

/// C15 (a) with the tracked [`thread::spawn`]: the child holds only its join pseudo-lock,
/// and joining it under A records A -> join -> B. Then "T2: lock B; lock A" is a real
/// three-thread deadlock (T0 holds A and waits for the child, the child waits for B, T2
/// holds B and waits for A), and it is reported.
#[test]
fn c15a_tracked_join_sees_the_three_thread_deadlock() {
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    let b = Arc::new(Mutex::named(0, "B"));
    {
        let _ga = a.lock();
        let b2 = b.clone();
        let child = thread::spawn(move || {
            let held = held_locks();
            assert!(
                held.iter().all(|l| l.class_name == "thread-join"),
                "{held:#?}"
            );
            drop(b2.lock());
        });
        child.join().unwrap();
    }
    assert!(take().is_empty());
    let (a2, b2) = (a.clone(), b.clone());
    on_thread(move || {
        let _gb = b2.lock();
        let _ga = a2.lock();
    });
    assert_eq!(one_cycle(&take()), ["B", "A", "thread-join", "B"]);
}

/// C15 (b): joining, while holding A, a thread whose body takes A: A -> join -> A.
/// The child runs before the parent takes A, so nothing hangs; the report does not need
/// the real deadlock.
#[test]
fn c15b_join_while_holding_a_lock_the_child_takes() {
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    let a2 = a.clone();
    let (tx, rx) = mpsc::channel();
    let child = thread::spawn(move || {
        let x = Mutex::named(0, "X");
        drop(x.lock());
        drop(a2.lock());
        tx.send(()).unwrap();
    });
    rx.recv_timeout(HANG).expect("child hung");
    let _ga = a.lock();
    child.join().unwrap();
    let r = take();
    assert_eq!(cycles(&r), 1, "{r:#?}");
    let names = r[0].cycle_classes();
    assert_eq!(names.first().map(String::as_str), Some("A"));
    assert!(names.iter().any(|n| n == "thread-join"), "{names:?}");
}

struct Noisy(&'static Mutex<u32>);

impl Drop for Noisy {
    fn drop(&mut self) {
        *self.0.lock() += 1;
    }
}

thread_local! {
    static OBJ: RefCell<Option<Noisy>> = const { RefCell::new(None) };
}

/// C16 (a): a thread-local whose destructor locks a mutex, at thread exit: no crash.
#[test]
fn c16a_lock_in_tls_destructor() {
    let _h = start();
    let l: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named(0, "L")));
    let m: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named(0, "M")));
    on_thread(move || {
        OBJ.with(|o| *o.borrow_mut() = Some(Noisy(l)));
        drop(m.lock());
    });
    assert_eq!(*l.lock(), 1, "the destructor ran and locked L");
    assert!(take().is_empty());
}

thread_local! {
    static STASH: RefCell<Option<instrumented_locks::MutexGuard<'static, u32>>> =
        const { RefCell::new(None) };
}

/// C16 (b): a guard stashed in a thread-local is released during thread teardown; another
/// thread then locks it with no misuse report.
#[test]
fn c16b_guard_released_by_tls_teardown() {
    let _h = start();
    let l: &'static Mutex<u32> = Box::leak(Box::new(Mutex::named(0, "L")));
    on_thread(move || STASH.with(|s| *s.borrow_mut() = Some(l.lock())));
    // Teardown order decides whether lockdep's state outlived the guard; either way the
    // only acceptable report is about the exiting thread itself.
    let r = take();
    assert!(
        r.iter().all(|r| matches!(r, Report::LockHeldAtExit { .. })),
        "{r:#?}"
    );
    let g = l.try_lock_for(HANG).expect("the lock was released at exit");
    drop(g);
    assert!(take().is_empty(), "T2 gets no report");
}

struct Pair<'a> {
    _ga: instrumented_locks::MutexGuard<'a, u32>,
    _gb: instrumented_locks::MutexGuard<'a, u32>,
}

/// C16 (c): struct fields drop in declaration order (A, then B: not LIFO): balanced, and
/// nothing is held afterwards.
#[test]
fn c16c_field_drop_order_is_not_lifo() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = Mutex::named(0, "B");
    let c = Mutex::named(0, "C");
    let p = Pair {
        _ga: a.lock(),
        _gb: b.lock(),
    };
    drop(p);
    assert_eq!(held_count(), 0);
    drop(c.lock());
    let deps = lockdep::dependencies();
    assert!(
        deps.iter().all(|d| d.to != "C"),
        "no dependency into C: {deps:#?}"
    );
    assert!(take().is_empty());
}

struct Item(Arc<Mutex<Vec<u32>>>);

impl Drop for Item {
    fn drop(&mut self) {
        self.0.lock().push(1);
    }
}

/// C16 (d): the last `Arc` of an item dropped under its registry lock, whose `Drop` locks
/// the registry: recursive locking, reported before blocking.
#[test]
fn c16d_drop_relocking_a_held_lock() {
    let _h = start();
    let reg = Arc::new(Mutex::named(Vec::new(), "Reg"));
    let item = Arc::new(Item(reg.clone()));
    common::set_panicking(true);
    {
        let _g = reg.lock();
        expect_panic(move || drop(item));
    }
    common::set_panicking(false);
    assert_eq!(recursive(&take()), 1);
    assert_eq!(held_count(), 0);
}

/// C17: panics while holding locks, and the validator's own report panic.
#[test]
fn c17_panics_unwind_the_held_set() {
    let _h = start();
    let a = Arc::new(Mutex::named(0, "A"));
    let b = Arc::new(Mutex::named(0, "B"));
    let c = Mutex::named(0, "C");
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    // T2: B then A panics with the report; B is released by the unwind, A never held.
    common::set_panicking(true);
    expect_panic(|| {
        let _gb = b.lock();
        let _ga = a.lock();
    });
    common::set_panicking(false);
    assert_eq!(cycles(&take()), 1);
    assert_eq!(held_count(), 0);
    assert!(!b.is_locked() && !a.is_locked());
    drop(c.lock());
    // T3: A then B is silent (B -> A was not inserted).
    {
        let _ga = a.lock();
        let _gb = b.lock();
    }
    assert!(take().is_empty());

    // T4..T6 with a std-flavoured (poisoning) lock.
    let a2 = Arc::new(std_sync::Mutex::named(0, "A2"));
    let d = Arc::new(Mutex::named(0, "D"));
    let a3 = a2.clone();
    let r = std::thread::spawn(move || {
        let _g = a3.lock().unwrap();
        panic!("user panic in a critical section");
    })
    .join();
    assert!(r.is_err());
    assert!(a2.is_poisoned());
    let (a3, d2) = (a2.clone(), d.clone());
    on_thread(move || {
        let g = a3.lock().expect_err("poisoned").into_inner();
        assert_eq!(held_count(), 1, "the poisoned guard is a real holding");
        drop(d2.lock());
        drop(g);
    });
    let (a3, d2) = (a2.clone(), d.clone());
    on_thread(move || {
        let _gd = d2.lock();
        let _ga = a3.lock();
    });
    assert_eq!(one_cycle(&take()), ["D", "A2", "D"]);
}

/// A user panic inside nested critical sections leaves the held stack empty (unwinding
/// releases every guard) and the locks usable.
#[test]
fn panic_in_critical_section_releases_everything() {
    let _h = start();
    let a = Mutex::named(0, "A");
    let b = instrumented_locks::RwLock::named(0, "B");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ga = a.lock();
        let _gb = b.write();
        assert_eq!(held_count(), 2);
        panic!("boom");
    }));
    assert!(r.is_err());
    assert_eq!(held_count(), 0);
    drop(a.lock());
    drop(b.read());
    assert!(take().is_empty());
}

/// C14 (b) + C17: when the re-lock report panics, it does so before the thread waits; the
/// guard still owns the mutex, is no longer on the held stack, and unlocks without an
/// unlock-balance complaint.
#[test]
fn c14b_report_panic_at_wait_leaves_a_consistent_guard() {
    let _h = start();
    let m = Mutex::named(0, "M");
    let b = Mutex::named(0, "B");
    let cv = Condvar::new();
    {
        let _gm = m.lock();
        let _gb = b.lock();
    }
    let mut gm = m.lock();
    let gb = b.lock();
    common::set_panicking(true);
    expect_panic(|| {
        cv.wait_for(&mut gm, Duration::from_millis(1));
    });
    common::set_panicking(false);
    assert_eq!(cycles(&take()), 1);
    assert!(m.is_locked(), "the guard still owns the mutex");
    assert_eq!(held_count(), 1, "only B is on the held stack");
    drop(gm);
    drop(gb);
    assert!(!m.is_locked());
    assert_eq!(held_count(), 0);
    assert!(take().is_empty(), "no unlock-balance report");
}
