//! `into_inner_with_raw` (lock_api 0.5's, for parking_lot 0.13 users) on the validated
//! `Mutex`, `FairMutex`, `RwLock` and `ReentrantMutex`: the data and a working raw lock come
//! back, each once.

use std::rc::Rc;

use instrumented_locks::lock_api::{RawMutex as _, RawRwLock as _};
use instrumented_locks::{FairMutex, Mutex, ReentrantMutex, RwLock};

#[test]
fn mutex_gives_back_its_raw_mutex_and_data() {
    let data = Rc::new(5);
    let m = Mutex::new(Rc::clone(&data));
    drop(m.lock());
    let (raw, back) = m.into_inner_with_raw();
    // Moved, not copied or dropped: two owners of the `Rc`.
    assert_eq!(Rc::strong_count(&data), 2);
    assert_eq!(*back, 5);
    assert!(!raw.is_locked());
    assert!(raw.try_lock());
    assert!(raw.is_locked());
    // SAFETY: locked just above, by this thread.
    unsafe { raw.unlock() };

    let (raw, back) = FairMutex::new(String::from("fair")).into_inner_with_raw();
    assert_eq!(back, "fair");
    assert!(raw.try_lock());
}

#[test]
fn rwlock_gives_back_its_raw_rwlock_and_data() {
    let lock = RwLock::new(vec![1, 2, 3]);
    lock.write().push(4);
    let (raw, back) = lock.into_inner_with_raw();
    assert_eq!(back, [1, 2, 3, 4]);
    assert!(!raw.is_locked());
    assert!(raw.try_lock_exclusive());
    assert!(raw.is_locked_exclusive());
    // SAFETY: locked exclusively just above, by this thread.
    unsafe { raw.unlock_exclusive() };
}

#[test]
fn reentrant_mutex_gives_back_its_raw_mutex_and_data() {
    let data = Rc::new(7);
    let m = ReentrantMutex::new(Rc::clone(&data));
    {
        let _outer = m.lock();
        let _inner = m.lock();
    }
    let (raw, _thread_id, back) = m.into_inner_with_raw();
    assert_eq!(Rc::strong_count(&data), 2);
    assert_eq!(*back, 7);
    assert!(!raw.is_locked());
    assert!(raw.try_lock());
    // SAFETY: locked just above, by this thread.
    unsafe { raw.unlock() };
}
