//! A parking_lot 0.13 user's locks: `Mutex`, `FairMutex`, `RwLock` (plain, upgradable,
//! mapped guards), `RecursiveRwLock`, `ReentrantMutex`. Every assertion holds for the real
//! parking_lot 0.13.0 and for the compat crate.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{
    FairMutex, FairMutexGuard, MappedMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard,
    Mutex, MutexGuard, RecursiveRwLock, RecursiveRwLockReadGuard,
    RecursiveRwLockUpgradableReadGuard, ReentrantMutex, ReentrantMutexGuard, RwLock,
    RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard,
};

/// 0.13 removed the `const_*` functions: `new` is `const`.
static COUNTER: Mutex<u32> = Mutex::new(0);
static TABLE: RwLock<[u8; 4]> = RwLock::new([0; 4]);
static RECURSIVE: RecursiveRwLock<u8> = RecursiveRwLock::new(3);
static FAIR: FairMutex<u8> = FairMutex::new(1);
static REENTRANT: ReentrantMutex<u8> = ReentrantMutex::new(2);

#[test]
fn statics_are_const_constructed() {
    *COUNTER.lock() += 1;
    TABLE.write()[1] = 9;
    assert_eq!(TABLE.read()[1], 9);
    assert_eq!(*RECURSIVE.read(), 3);
    assert_eq!(*FAIR.lock(), 1);
    assert_eq!(*REENTRANT.lock(), 2);
    assert!(*COUNTER.lock() >= 1);
}

#[test]
fn mutex_guards_and_projections() {
    let m = Mutex::new((1u32, String::from("a")));
    {
        let mut g: MutexGuard<'_, _> = m.lock();
        g.0 += 1;
        assert!(m.is_locked());
        assert!(m.try_lock().is_none());
        MutexGuard::unlocked(&mut g, || assert!(m.try_lock().is_some()));
        MutexGuard::bump(&mut g);
        let mut s: MappedMutexGuard<'_, String> = MutexGuard::map(g, |v| &mut v.1);
        s.push('b');
    }
    assert!(!m.is_locked());
    {
        let g = m.lock();
        let g = match MutexGuard::try_map(g, |v| if v.0 > 10 { Some(&mut v.0) } else { None }) {
            Ok(_) => unreachable!("the data has 2"),
            Err(g) => g,
        };
        let r: Result<MappedMutexGuard<'_, u32>, (MutexGuard<'_, _>, &str)> =
            MutexGuard::try_map_or_err(g, |v| if v.0 == 2 { Ok(&mut v.0) } else { Err("no") });
        let Ok(mapped) = r else {
            panic!("the data has 2")
        };
        assert_eq!(*mapped, 2);
        MappedMutexGuard::unlock_fair(mapped);
    }
    assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
    assert!(m.try_lock_until(Instant::now()).is_some());
    let mut m = m;
    m.get_mut().0 = 5;
    assert_eq!(m.into_inner(), (5, String::from("ab")));
    assert_eq!(format!("{:?}", Mutex::new(7)), "Mutex { data: 7 }");
    // 0.13's `into_inner_with_raw` (the raw lock's type differs under the compat crate).
    let (_raw, data) = Mutex::new(String::from("x")).into_inner_with_raw();
    assert_eq!(data, "x");
    let (_raw, data) = FairMutex::new(3).into_inner_with_raw();
    assert_eq!(data, 3);
    let (_raw, data) = RwLock::new(4).into_inner_with_raw();
    assert_eq!(data, 4);
    let (_raw, data) = RecursiveRwLock::new(5).into_inner_with_raw();
    assert_eq!(data, 5);
    let (_raw, _thread_id, data) = ReentrantMutex::new(6).into_inner_with_raw();
    assert_eq!(data, 6);
}

#[test]
fn mutex_across_threads() {
    let m = Arc::new(Mutex::new(0u64));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                for _ in 0..1000 {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*m.lock(), 4000);
    let g = m.lock_arc();
    assert!(m.try_lock().is_none());
    drop(g);
}

#[test]
fn fair_mutex() {
    let m = FairMutex::new(vec![1]);
    let mut g: FairMutexGuard<'_, Vec<i32>> = m.lock();
    g.push(2);
    FairMutexGuard::unlock_fair(g);
    assert_eq!(*m.lock(), [1, 2]);
    assert!(m.try_lock_for(Duration::ZERO).is_some());
}

#[test]
fn rwlock_reads_writes_and_projections() {
    let lock = RwLock::new((1, 2));
    {
        let r1: RwLockReadGuard<'_, _> = lock.read();
        let r2 = lock.try_read().expect("readers share");
        assert_eq!(r1.0 + r2.1, 3);
        assert!(lock.try_write().is_none());
        let m: MappedRwLockReadGuard<'_, i32> = RwLockReadGuard::map(r1, |v| &v.0);
        // 0.13's name (0.12's `try_map_or_else`).
        let m = MappedRwLockReadGuard::try_map_or_err(m, |v| if *v == 1 { Ok(v) } else { Err(()) });
        let Ok(m) = m else { panic!("holds 1") };
        assert_eq!(*m, 1);
    }
    {
        let mut w: RwLockWriteGuard<'_, _> = lock.write();
        w.0 = 10;
        assert!(lock.is_locked_exclusive());
        let mut m: MappedRwLockWriteGuard<'_, i32> = RwLockWriteGuard::map(w, |v| &mut v.1);
        *m = 20;
    }
    let w = lock.write();
    let r = RwLockWriteGuard::downgrade(w);
    assert!(lock.try_read().is_some());
    assert!(lock.try_write().is_none());
    drop(r);
    assert_eq!(*lock.read(), (10, 20));
    assert!(lock.try_write_for(Duration::from_millis(1)).is_some());
    assert!(lock.try_read_until(Instant::now()).is_some());
}

#[test]
fn rwlock_upgradable() {
    let lock = RwLock::new(1);
    let u: RwLockUpgradableReadGuard<'_, i32> = lock.upgradable_read();
    assert!(lock.try_read().is_some(), "shared with readers");
    assert!(
        lock.try_upgradable_read().is_none(),
        "one upgradable read at a time"
    );
    let mut w = RwLockUpgradableReadGuard::upgrade(u);
    *w = 2;
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    let u = match RwLockUpgradableReadGuard::try_upgrade(u) {
        Ok(w) => RwLockWriteGuard::downgrade_to_upgradable(w),
        Err(_) => unreachable!("no other reader"),
    };
    let mut u = u;
    RwLockUpgradableReadGuard::with_upgraded(&mut u, |v| *v = 3);
    let r = RwLockUpgradableReadGuard::downgrade(u);
    assert_eq!(*r, 3);
    drop(r);
    let u = lock.upgradable_read();
    let w = RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(1));
    let Ok(w) = w else { panic!("no reader") };
    assert_eq!(*w, 3);
}

#[test]
fn recursive_rwlock_reads_again_behind_a_waiting_writer() {
    // With a plain `RwLock`, the second read could deadlock behind the writer; the recursive
    // lock lets it through whether or not the writer has queued yet.
    for _ in 0..20 {
        let lock = Arc::new(RecursiveRwLock::new(0));
        let first: RecursiveRwLockReadGuard<'_, i32> = lock.read();
        let (tx, rx) = mpsc::channel();
        let writer = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                tx.send(()).unwrap();
                *lock.write() += 1;
            })
        };
        rx.recv().unwrap();
        let second = lock.read();
        assert!(lock.try_read().is_some());
        assert_eq!(*first + *second, 0);
        drop(first);
        drop(second);
        writer.join().unwrap();
        assert_eq!(*lock.read(), 1);
    }
}

#[test]
fn recursive_rwlock_upgrade_and_write() {
    let lock = RecursiveRwLock::new(1);
    let upgradable = lock.upgradable_read();
    let read = lock.read();
    drop(read);
    let mut write = RecursiveRwLockUpgradableReadGuard::upgrade(upgradable);
    *write = 2;
    drop(write);
    assert_eq!(*lock.read(), 2);
    assert!(lock.try_write().is_some());
    assert!(lock.try_read_for(Duration::from_millis(1)).is_some());
    let mut lock = lock;
    *lock.get_mut() = 4;
    assert_eq!(lock.into_inner(), 4);
}

#[test]
fn reentrant_mutex() {
    let m = Arc::new(ReentrantMutex::new(5));
    let a: ReentrantMutexGuard<'_, i32> = m.lock();
    let b = m.lock();
    assert_eq!(*a + *b, 10);
    assert!(m.is_owned_by_current_thread());
    let other = {
        let m = Arc::clone(&m);
        thread::spawn(move || m.try_lock().is_none())
    };
    assert!(other.join().unwrap());
    drop(a);
    drop(b);
    assert!(!m.is_locked());
    let g = m.lock();
    let mapped = ReentrantMutexGuard::map(g, |v| v);
    assert_eq!(*mapped, 5);
}

#[test]
fn serde_round_trip() {
    let m = Mutex::new(vec![1, 2]);
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(json, "[1,2]");
    let back: RwLock<Vec<i32>> = serde_json::from_str(&json).unwrap();
    assert_eq!(*back.read(), [1, 2]);
}

#[cfg(feature = "send_guard")]
#[test]
fn guards_are_send_with_send_guard() {
    fn send<T: Send>(_: &T) {}
    let m = Mutex::new(1);
    let lock = RwLock::new(2);
    let g = m.lock();
    let r = lock.read();
    send(&g);
    send(&r);
    thread::scope(|s| {
        s.spawn(move || drop((g, r)));
    });
    assert!(!m.is_locked());
    assert!(!lock.is_locked());
}

#[test]
fn arc_guards_and_raw_locks_by_name() {
    use parking_lot::lock_api::{RawMutex as _, RawRwLock as _};
    use parking_lot::{
        ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockWriteGuard, RawMutex, RawRwLock,
        RawRwLockRecursive,
    };

    // The `Arc` guards, named with parking_lot's raw locks.
    let m = Arc::new(Mutex::new(1));
    let g: ArcMutexGuard<RawMutex, i32> = m.lock_arc();
    assert!(Arc::ptr_eq(ArcMutexGuard::mutex(&g), &m));
    // The raw lock is parking_lot's, with lock_api 0.5's traits.
    // SAFETY: only queried, never unlocked through.
    let raw: &RawMutex = unsafe { m.raw() };
    assert!(raw.is_locked());
    drop(g);
    assert!(!raw.is_locked());

    let lock = Arc::new(RwLock::new(2));
    let w: ArcRwLockWriteGuard<RawRwLock, i32> = lock.write_arc();
    // SAFETY: only queried.
    assert!(unsafe { lock.raw() }.is_locked_exclusive());
    let r: ArcRwLockReadGuard<RawRwLock, i32> = ArcRwLockWriteGuard::downgrade(w);
    assert_eq!(*r, 2);
    drop(r);

    let rec = Arc::new(RecursiveRwLock::new(3));
    let r1: ArcRwLockReadGuard<RawRwLockRecursive, i32> = rec.read_arc();
    let r2 = rec.try_read_arc().expect("recursive reads share");
    assert_eq!(*r1 + *r2, 6);
    assert!(rec.try_write_arc().is_none());
    drop((r1, r2));
    *rec.write_arc() = 4;
    assert_eq!(*rec.upgradable_read_arc(), 4);
    assert_eq!(
        Arc::strong_count(&rec),
        1,
        "the guards gave their Arcs back"
    );

    let (raw, data): (RawMutex, String) = Mutex::new(String::from("m")).into_inner_with_raw();
    assert!(!raw.is_locked());
    assert_eq!(data, "m");
}
