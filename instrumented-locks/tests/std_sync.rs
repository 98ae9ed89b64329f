//! The std-flavoured module: `LockResult`, poisoning, `TryLockError`, condvar by value.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{start, take, HANG};
use instrumented_locks::std_sync::{Condvar, Mutex, RwLock, TryLockError};

fn poison_mutex(m: &Arc<Mutex<u32>>) {
    let m2 = m.clone();
    let r = std::thread::spawn(move || {
        let mut g = m2.lock().unwrap();
        *g += 1;
        panic!("poison it");
    })
    .join();
    assert!(r.is_err());
}

#[test]
fn mutex_poisoning() {
    let _h = start();
    let m = Arc::new(Mutex::new(1));
    assert!(!m.is_poisoned());
    *m.lock().unwrap() += 1;
    poison_mutex(&m);
    assert!(m.is_poisoned());
    let g = m.lock().expect_err("poisoned").into_inner();
    assert_eq!(*g, 3, "the panicking holder's write is visible");
    assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
    drop(g);
    match m.try_lock() {
        Err(TryLockError::Poisoned(e)) => assert_eq!(*e.into_inner(), 3),
        _ => panic!("expected a poisoned try_lock"),
    }
    m.clear_poison();
    assert!(!m.is_poisoned());
    assert!(m.try_lock().is_ok());
    let mut m = Arc::try_unwrap(m).ok().unwrap();
    *m.get_mut().unwrap() = 4;
    assert_eq!(m.into_inner().unwrap(), 4);
    let m = Arc::new(Mutex::named(0, "poisoned"));
    poison_mutex(&m);
    let mut m = Arc::try_unwrap(m).ok().unwrap();
    assert_eq!(*m.get_mut().expect_err("poisoned").into_inner(), 1);
    assert_eq!(m.into_inner().expect_err("poisoned").into_inner(), 1);
    assert!(format!("{:?}", Mutex::<u8>::default()).contains("poisoned: false"));
    assert!(take().is_empty());
}

#[test]
fn a_panic_that_started_before_the_lock_does_not_poison() {
    let _h = start();
    struct LockOnDrop<'a>(&'a Mutex<u32>);
    impl Drop for LockOnDrop<'_> {
        fn drop(&mut self) {
            *self.0.lock().unwrap() += 1;
        }
    }
    let m = Mutex::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _d = LockOnDrop(&m);
        panic!("unwinding");
    }));
    assert!(r.is_err());
    assert!(!m.is_poisoned(), "the guard was taken during the unwind");
    assert_eq!(*m.lock().unwrap(), 1);
    assert!(take().is_empty());
}

#[test]
fn rwlock_poisoning_by_writers_only() {
    let _h = start();
    let l = Arc::new(RwLock::new(5));
    let l2 = l.clone();
    let _ = std::thread::spawn(move || {
        let _r = l2.read().unwrap();
        panic!("reader panics");
    })
    .join();
    assert!(!l.is_poisoned());
    {
        let r = l.read().unwrap();
        assert!(matches!(l.try_write(), Err(TryLockError::WouldBlock)));
        assert_eq!(*l.try_read().unwrap(), *r);
    }
    let l2 = l.clone();
    let _ = std::thread::spawn(move || {
        let mut w = l2.write().unwrap();
        *w = 6;
        panic!("writer panics");
    })
    .join();
    assert!(l.is_poisoned());
    assert_eq!(*l.read().expect_err("poisoned").into_inner(), 6);
    assert!(matches!(l.try_read(), Err(TryLockError::Poisoned(_))));
    assert!(matches!(l.try_write(), Err(TryLockError::Poisoned(_))));
    l.clear_poison();
    *l.write().unwrap() = 7;
    let mut l = Arc::try_unwrap(l).ok().unwrap();
    assert_eq!(*l.get_mut().unwrap(), 7);
    assert_eq!(l.into_inner().unwrap(), 7);
    assert!(take().is_empty());
}

#[test]
fn condvar_by_value() {
    let _h = start();
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p2 = pair.clone();
    let t = std::thread::spawn(move || {
        let (m, cv) = &*p2;
        *m.lock().unwrap() = true;
        cv.notify_all();
    });
    let (m, cv) = &*pair;
    let (g, res) = cv
        .wait_timeout_while(m.lock().unwrap(), HANG, |ready| !*ready)
        .unwrap();
    assert!(*g && !res.timed_out());
    let g = cv.wait_while(g, |ready| !*ready).unwrap();
    let (g, res) = cv.wait_timeout(g, Duration::from_millis(1)).unwrap();
    assert!(res.timed_out());
    drop(g);
    t.join().unwrap();
    cv.notify_one();

    // A plain `wait` returns `Err` with the guard when the mutex was poisoned meanwhile.
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p2 = pair.clone();
    let (m, cv) = &*pair;
    let g = m.lock().unwrap();
    let t = std::thread::spawn(move || {
        let (m, cv) = &*p2;
        let _g = m.lock().unwrap();
        cv.notify_one();
        panic!("poison while the waiter sleeps");
    });
    let g = cv.wait(g).expect_err("poisoned").into_inner();
    drop(g);
    assert!(t.join().is_err());
    assert!(m.is_poisoned());
    assert!(take().is_empty());
}

/// `{:?}` prints what std's prints, in every state: unlocked, held (std quotes a mutex's
/// placeholder, not an rwlock's), poisoned, and pretty.
#[test]
fn debug_prints_what_std_prints() {
    let _h = start();
    let (ours, theirs) = (Arc::new(Mutex::new(1)), Arc::new(std::sync::Mutex::new(1)));
    assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
    assert_eq!(format!("{ours:#?}"), format!("{theirs:#?}"));
    {
        let (_a, _b) = (ours.lock().unwrap(), theirs.lock().unwrap());
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
    }
    poison_mutex(&ours);
    let t2 = theirs.clone();
    assert!(std::thread::spawn(move || {
        let mut g = t2.lock().unwrap();
        *g += 1;
        panic!("poison it, as `poison_mutex` does");
    })
    .join()
    .is_err());
    assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "poisoned");
    let (ours, theirs) = (RwLock::new(2), std::sync::RwLock::new(2));
    assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
    {
        let (_a, _b) = (ours.write().unwrap(), theirs.write().unwrap());
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
    }
    {
        let (_a, _b) = (ours.read().unwrap(), theirs.read().unwrap());
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
    }
    assert!(take().is_empty());
}
