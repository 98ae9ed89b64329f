//! A parking_lot 0.13 user's `Condvar`, `Once` (with 0.13's `wait`, `is_completed`,
//! `new_completed`) and generic lock_api 0.5 code over parking_lot's raw locks.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::lock_api::{self, RawMutex as _, RawRwLock as _, RawRwLockUpgrade as _};
use parking_lot::{Condvar, Mutex, Once, OnceState, WaitTimeoutResult};

#[test]
fn condvar_handshake_and_timeouts() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let waiter = {
        let pair = Arc::clone(&pair);
        thread::spawn(move || {
            let (m, cv) = &*pair;
            let mut ready = m.lock();
            cv.wait_while(&mut ready, |ready| !*ready);
            *ready
        })
    };
    {
        let (m, cv) = &*pair;
        *m.lock() = true;
        cv.notify_all();
    }
    assert!(waiter.join().unwrap());
    let (m, cv) = &*pair;
    let mut g = m.lock();
    let r: WaitTimeoutResult = cv.wait_for(&mut g, Duration::from_millis(1));
    assert!(r.timed_out());
    assert!(!cv.notify_one(), "nobody waits");
    assert_eq!(cv.notify_all(), 0);
}

static READY: Once = Once::new();
static ALREADY: Once = Once::new_completed();

#[test]
fn once_wait_and_queries() {
    let waiter = thread::spawn(|| {
        READY.wait();
        READY.is_completed()
    });
    READY.call_once(|| {});
    assert!(waiter.join().unwrap());
    assert_eq!(READY.state(), OnceState::Done);
    assert!(READY.state().is_completed() && READY.state().done());
    assert!(ALREADY.is_completed());
    ALREADY.call_once(|| unreachable!("completed at construction"));
    ALREADY.wait_force();

    let poisoned = Once::new();
    let r = std::panic::catch_unwind(|| poisoned.call_once(|| panic!("boom")));
    assert!(r.is_err());
    assert!(poisoned.state().is_poisoned());
    assert!(std::panic::catch_unwind(|| poisoned.wait()).is_err());
    poisoned.call_once_force(|state| assert!(state.is_poisoned()));
    poisoned.wait();
}

/// Code written against lock_api 0.5, generic over the raw lock.
fn sum_locked<R: lock_api::RawMutex>(m: &lock_api::Mutex<R, Vec<u32>>) -> u32 {
    m.lock().iter().sum()
}

#[test]
fn generic_lock_api_code_over_the_raw_locks() {
    let m: lock_api::Mutex<parking_lot::RawMutex, Vec<u32>> = lock_api::Mutex::new(vec![1, 2]);
    assert_eq!(sum_locked(&m), 3);
    let (_raw, data) = m.into_inner_with_raw();
    assert_eq!(data, [1, 2]);

    // The raw locks' per-acquisition state.
    let raw = parking_lot::RawMutex::INIT;
    let guard = raw.lock();
    assert!(raw.is_locked());
    assert!(raw.try_lock().is_none());
    // SAFETY: held with this acquisition state.
    unsafe { raw.unlock(guard) };
    assert!(!raw.is_locked());

    let rw = <parking_lot::RawRwLock>::INIT;
    let up = rw.lock_upgradable();
    let shared = rw
        .try_lock_shared()
        .expect("shared with an upgradable read");
    // SAFETY: held shared with this state.
    unsafe { rw.unlock_shared(shared) };
    // SAFETY: the upgradable lock is held with this state.
    let ex = unsafe { rw.upgrade(up) };
    assert!(rw.is_locked_exclusive());
    // SAFETY: held exclusively with this state.
    unsafe { rw.unlock_exclusive(ex) };
    assert!(!rw.is_locked());

    let rec: lock_api::RwLock<parking_lot::RawRwLockRecursive, u8> = lock_api::RwLock::new(1);
    let a = rec.read();
    let b = rec.read();
    assert_eq!(*a + *b, 2);
    drop((a, b));

    let re: lock_api::ReentrantMutex<parking_lot::RawMutex, parking_lot::RawThreadId, u8> =
        lock_api::ReentrantMutex::new(4);
    let g1 = re.lock();
    let g2 = re.lock();
    assert_eq!(*g1 + *g2, 8);
    drop((g1, g2));

    let pair = Arc::new((
        lock_api::Mutex::<parking_lot::RawMutex, bool>::new(false),
        lock_api::Condvar::<parking_lot::RawCondvar>::new(),
    ));
    let waiter = {
        let pair = Arc::clone(&pair);
        thread::spawn(move || {
            let (m, cv) = &*pair;
            let mut g = m.lock();
            while !*g {
                cv.wait(&mut g);
            }
        })
    };
    let (m, cv) = &*pair;
    *m.lock() = true;
    // The notification counts of a raw condvar differ between implementations (lock_api 0.5
    // lets a condvar with spurious wake-ups return 0): not asserted.
    cv.notify_all();
    waiter.join().unwrap();
}
