//! Every wrapper method behaves like parking_lot's: mutual exclusion, progress, timeouts,
//! guard projection, upgrade/downgrade, condvar waits. Runs with and without `validate`,
//! and checks that a correct program produces no report.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{start, take, HANG};
use instrumented_locks::{
    Condvar, MappedMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard,
    ReentrantMutex, ReentrantMutexGuard, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};

const THREADS: usize = 2;
const ROUNDS: usize = 2_000;

#[test]
fn mutex_excludes_and_makes_progress() {
    let _h = start();
    let m = Arc::new(Mutex::new(0usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let mut g = m.lock();
                    let v = *g;
                    *g = v + 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*m.lock(), THREADS * ROUNDS);
    assert!(take().is_empty());
}

#[test]
fn mutex_try_and_timed_locks() {
    let _h = start();
    let m = Mutex::new(1);
    let (locked_tx, locked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let mref = &m;
    std::thread::scope(|s| {
        s.spawn(move || {
            let _g = mref.lock();
            locked_tx.send(()).unwrap();
            release_rx.recv_timeout(HANG).expect("test hung");
        });
        locked_rx.recv_timeout(HANG).unwrap();
        assert!(m.is_locked());
        assert!(m.try_lock().is_none());
        assert!(m.try_lock_for(Duration::from_millis(2)).is_none());
        assert!(m
            .try_lock_until(Instant::now() + Duration::from_millis(2))
            .is_none());
        release_tx.send(()).unwrap();
        let g = m.try_lock_for(HANG).expect("released");
        assert_eq!(*g, 1);
    });
    assert!(!m.is_locked());
    assert_eq!(*m.try_lock().unwrap(), 1);
    assert_eq!(*m.try_lock_until(Instant::now() + HANG).unwrap(), 1);
    assert!(take().is_empty());
}

#[test]
fn mutex_data_access() {
    let _h = start();
    let mut m = Mutex::new(vec![1, 2, 3]);
    m.get_mut().push(4);
    assert_eq!(m.lock().len(), 4);
    // SAFETY: no guard is alive; the pointer is only read here.
    assert_eq!(unsafe { (*m.data_ptr()).len() }, 4);
    assert_eq!(
        format!("{:?}", m),
        format!("{:?}", real_parking_lot::Mutex::new(vec![1, 2, 3, 4]))
    );
    assert_eq!(format!("{:?}", m.lock()), "[1, 2, 3, 4]");
    assert_eq!(m.into_inner(), [1, 2, 3, 4]);
    let d: Mutex<u8> = Mutex::default();
    assert_eq!(*d.lock(), 0);
    let f = Mutex::from("x");
    assert_eq!(format!("{}", f.lock()), "x");
    let n = Mutex::named(5, "five");
    assert_eq!(*n.lock_nested(0), 5);
    assert!(take().is_empty());
}

#[test]
fn mutex_guard_map_try_map_unlocked_unlock_fair() {
    let _h = start();
    let m = Mutex::new((1, String::from("a")));
    {
        let g = m.lock();
        let mut s = MutexGuard::map(g, |t| &mut t.1);
        s.push('b');
        let mut s2 = MappedMutexGuard::map(s, |s| s);
        s2.push('c');
        assert!(m.is_locked());
        let s3 = match MappedMutexGuard::try_map(s2, |_| None::<&mut u8>) {
            Ok(_) => panic!("declined"),
            Err(g) => g,
        };
        assert_eq!(&*s3, "abc");
        let first = MappedMutexGuard::try_map(s3, |s| s.as_mut_str().get_mut(0..1));
        assert_eq!(first.ok().as_deref(), Some("a"));
    }
    assert!(!m.is_locked());
    let g = m.lock();
    let g = match MutexGuard::try_map(g, |_| None::<&mut u8>) {
        Ok(_) => panic!("declined"),
        Err(g) => g,
    };
    let mut one = MutexGuard::try_map(g, |t| Some(&mut t.0)).ok().unwrap();
    *one += 1;
    drop(one);
    let mut g = m.lock();
    let seen_unlocked = MutexGuard::unlocked(&mut g, || m.try_lock().is_some());
    assert!(seen_unlocked, "unlocked() really released the mutex");
    assert!(m.is_locked());
    MutexGuard::unlock_fair(g);
    assert!(!m.is_locked());
    assert_eq!(m.lock().0, 2);
    assert!(take().is_empty());
}

#[test]
fn nest_lock_guard_takes_same_class_locks() {
    let _h = start();
    let outer = Mutex::new(());
    let inners: Vec<Mutex<u32>> = (0..2).map(Mutex::new).collect();
    let o = outer.lock();
    let a = inners[1].lock_nest_lock(&o);
    let b = inners[0].lock_nest_lock(&o);
    assert_eq!((*a, *b), (1, 0));
    drop((b, a));
    drop(o);
    assert!(take().is_empty());
}

#[test]
fn rwlock_readers_share_writers_exclude() {
    let _h = start();
    let l = Arc::new(RwLock::new(0usize));
    let r1 = l.read();
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert!(l2.try_read().is_some(), "readers share");
        assert!(l2.try_read_recursive().is_some());
        assert!(l2.try_write().is_none(), "a reader excludes writers");
        assert!(l2.try_write_for(Duration::from_millis(1)).is_none());
        assert!(l2.try_write_until(Instant::now()).is_none());
        assert!(l2.try_upgradable_read().is_some());
    })
    .join()
    .unwrap();
    drop(r1);
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let l = l.clone();
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let mut w = l.write();
                    let v = *w;
                    *w = v + 1;
                    drop(w);
                    let _ = *l.read();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*l.read(), THREADS * ROUNDS);
    let w = l.write();
    assert!(l.is_locked_exclusive());
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert!(l2.try_read().is_none());
        assert!(l2.try_read_for(Duration::from_millis(1)).is_none());
        assert!(l2.try_read_until(Instant::now()).is_none());
        assert!(l2.try_upgradable_read().is_none());
    })
    .join()
    .unwrap();
    drop(w);
    assert!(!l.is_locked());
    assert!(l.try_read_for(HANG).is_some());
    assert!(l.try_read_until(Instant::now() + HANG).is_some());
    assert!(l.try_write_for(HANG).is_some());
    assert!(l.try_write_until(Instant::now() + HANG).is_some());
    assert!(take().is_empty());
}

#[test]
fn rwlock_upgrade_downgrade_and_guards() {
    let _h = start();
    let l = RwLock::new(vec![1]);
    let u = l.upgradable_read();
    let r = l.read_recursive();
    let u = RwLockUpgradableReadGuard::try_upgrade(u).expect_err("a reader is present");
    drop(r);
    let u = RwLockUpgradableReadGuard::try_upgrade_until(u, Instant::now())
        .unwrap_or_else(|_| panic!("no reader left"));
    let u = RwLockWriteGuard::downgrade_to_upgradable(u);
    let mut w = RwLockUpgradableReadGuard::upgrade(u);
    w.push(2);
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(*r, [1, 2]);
    assert!(l.try_write().is_none());
    drop(r);
    let u = l.upgradable_read();
    let r = RwLockUpgradableReadGuard::downgrade(u);
    assert!(
        l.try_upgradable_read().is_some(),
        "downgraded: upgradable slot free"
    );
    drop(r);

    let w = l.write();
    let mut m = RwLockWriteGuard::map(w, |v| &mut v[0]);
    *m = 10;
    let mut m = MappedRwLockWriteGuard::map(m, |x| x);
    *m += 1;
    drop(m);
    let r = l.read();
    let first = RwLockReadGuard::map(r, |v| &v[0]);
    let first = MappedRwLockReadGuard::map(first, |x| x);
    assert_eq!(*first, 11);
    drop(first);

    let mut r = l.read();
    assert!(RwLockReadGuard::unlocked(&mut r, || l
        .try_write()
        .is_some()));
    drop(r);
    let mut w = l.write();
    assert!(RwLockWriteGuard::unlocked(&mut w, || l
        .try_write()
        .is_some()));
    drop(w);
    let mut u = l.upgradable_read();
    assert!(RwLockUpgradableReadGuard::unlocked(&mut u, || l
        .try_write()
        .is_some()));
    drop(u);

    let mut l = RwLock::named(1, "one");
    *l.get_mut() += 1;
    assert_eq!(*l.write_nested(1), 2);
    assert_eq!(*l.read_nested(1), 2);
    let o = Mutex::new(());
    let og = o.lock();
    assert_eq!(*l.write_nest_lock(&og), 2);
    drop(og);
    assert_eq!(format!("{:?}", l.read()), "2");
    assert_eq!(l.into_inner(), 2);
    assert_eq!(*RwLock::<u8>::default().read(), 0);
    assert_eq!(*RwLock::from(3).read(), 3);
    assert!(take().is_empty());
}

#[test]
fn reentrant_mutex_relocks_and_excludes_others() {
    let _h = start();
    let m = Arc::new(ReentrantMutex::new(std::cell::Cell::new(0)));
    {
        let g1 = m.lock();
        let g2 = m.lock();
        g2.set(g1.get() + 1);
        assert!(m.is_owned_by_current_thread());
        let m2 = m.clone();
        std::thread::spawn(move || {
            assert!(m2.try_lock().is_none());
            assert!(m2.try_lock_for(Duration::from_millis(1)).is_none());
            assert!(m2.try_lock_until(Instant::now()).is_none());
            assert!(!m2.is_owned_by_current_thread());
        })
        .join()
        .unwrap();
    }
    assert!(!m.is_locked());
    let mut g = m.lock_nested(0);
    let released = ReentrantMutexGuard::unlocked(&mut g, || !m.is_locked());
    assert!(released);
    let c = ReentrantMutexGuard::map(g, |c| c);
    assert_eq!(c.get(), 1);
    drop(c);
    assert_eq!(m.try_lock_for(HANG).unwrap().get(), 1);
    assert_eq!(m.try_lock_until(Instant::now() + HANG).unwrap().get(), 1);
    let mut m = Arc::try_unwrap(m).ok().unwrap();
    m.get_mut().set(5);
    assert_eq!(m.into_inner().get(), 5);
    let r = ReentrantMutex::<u8>::default();
    assert_eq!(
        format!("{r:?}"),
        format!("{:?}", real_parking_lot::ReentrantMutex::new(0u8))
    );
    assert!(take().is_empty());
}

#[test]
fn condvar_wait_notify_and_timeouts() {
    let _h = start();
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p2 = pair.clone();
    let producer = std::thread::spawn(move || {
        let (m, cv) = &*p2;
        for _ in 0..3 {
            *m.lock() += 1;
            cv.notify_all();
        }
    });
    let (m, cv) = &*pair;
    let mut g = m.lock();
    let deadline = Instant::now() + HANG;
    let t = cv.wait_while_until(&mut g, |v| *v < 3, deadline);
    assert!(!t.timed_out(), "producer hung");
    assert_eq!(*g, 3);
    producer.join().unwrap();
    // Timeouts with no notifier.
    assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
    assert!(cv
        .wait_until(&mut g, Instant::now() + Duration::from_millis(1))
        .timed_out());
    assert!(cv
        .wait_while_for(&mut g, |_| true, Duration::from_millis(1))
        .timed_out());
    // wait_while with an already-false condition returns at once.
    cv.wait_while(&mut g, |v| *v != 3);
    assert!(!cv.notify_one(), "nobody waits");
    assert_eq!(cv.notify_all(), 0);
    drop(g);

    // A plain `wait` woken by a notifier that waits until the waiter is parked.
    let p3 = pair.clone();
    let (tx, rx) = mpsc::channel();
    let notifier = std::thread::spawn(move || {
        rx.recv_timeout(HANG).unwrap();
        let (m, cv) = &*p3;
        let mut g = m.lock();
        *g = 100;
        let start = Instant::now();
        while !cv.notify_one() {
            assert!(start.elapsed() < HANG, "waiter never parked");
            MutexGuard::unlocked(&mut g, std::thread::yield_now);
        }
    });
    let mut g = m.lock();
    tx.send(()).unwrap();
    while *g != 100 {
        cv.wait(&mut g);
    }
    drop(g);
    notifier.join().unwrap();
    assert!(take().is_empty());
}

#[test]
fn guards_are_not_send_and_locks_are_send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Mutex<u32>>();
    send_sync::<RwLock<u32>>();
    send_sync::<ReentrantMutex<u32>>();
    send_sync::<Condvar>();
    send_sync::<instrumented_locks::std_sync::Mutex<u32>>();
    // Guards: `!Send` is checked by compile_fail doctests on `MutexGuard`.
}

/// Without validation, `new` is `const`, like parking_lot's: statics work unchanged.
#[cfg(not(feature = "validate"))]
#[test]
fn const_new_without_validation() {
    static M: Mutex<u32> = Mutex::new(7);
    static L: RwLock<u32> = RwLock::new(8);
    static R: ReentrantMutex<u32> = ReentrantMutex::new(9);
    static C: Condvar = Condvar::new();
    assert_eq!((*M.lock(), *L.read(), *R.lock()), (7, 8, 9));
    assert_eq!(C.notify_all(), 0);
}

/// With validation, a static goes through `LazyLock`; the class is still the site of `new`.
#[test]
fn static_through_lazy_lock() {
    static M: std::sync::LazyLock<Mutex<u32>> = std::sync::LazyLock::new(|| Mutex::new(7));
    let _h = start();
    assert_eq!(*M.lock(), 7);
    assert!(take().is_empty());
}

#[test]
fn rwlock_and_reentrant_try_maps() {
    let _h = start();
    let l = RwLock::new((1, 2));
    let r = match RwLockReadGuard::try_map(l.read(), |_| None::<&u8>) {
        Ok(_) => panic!("declined"),
        Err(r) => r,
    };
    let m = RwLockReadGuard::try_map(r, |t| Some(&t.0)).ok().unwrap();
    let m = match MappedRwLockReadGuard::try_map(m, |_| None::<&u8>) {
        Ok(_) => panic!("declined"),
        Err(m) => m,
    };
    assert_eq!(
        *MappedRwLockReadGuard::try_map(m, |x| Some(x)).ok().unwrap(),
        1
    );
    let w = match RwLockWriteGuard::try_map(l.write(), |_| None::<&mut u8>) {
        Ok(_) => panic!("declined"),
        Err(w) => w,
    };
    let mut m = RwLockWriteGuard::try_map(w, |t| Some(&mut t.1))
        .ok()
        .unwrap();
    *m += 1;
    let m = match MappedRwLockWriteGuard::try_map(m, |_| None::<&mut u8>) {
        Ok(_) => panic!("declined"),
        Err(m) => m,
    };
    let mut m = MappedRwLockWriteGuard::try_map(m, |x| Some(x))
        .ok()
        .unwrap();
    *m += 1;
    drop(m);
    assert_eq!(*l.read(), (1, 4));
    assert!(!l.is_locked());

    let r = ReentrantMutex::new((5, 6));
    let g = match ReentrantMutexGuard::try_map(r.lock(), |_| None::<&u8>) {
        Ok(_) => panic!("declined"),
        Err(g) => g,
    };
    let six = ReentrantMutexGuard::try_map(g, |t| Some(&t.1))
        .ok()
        .unwrap();
    let six = instrumented_locks::MappedReentrantMutexGuard::map(six, |x| x);
    assert_eq!(*six, 6);
    assert!(r.is_locked());
    drop(six);
    assert!(!r.is_locked());
    assert!(take().is_empty());
}

#[test]
fn tracked_spawn_behaves_like_std_spawn() {
    let _h = start();
    let (tx, rx) = mpsc::channel::<()>();
    let h = instrumented_locks::thread::spawn(move || {
        rx.recv_timeout(HANG).expect("test hung");
        7
    });
    assert!(!h.is_finished());
    assert!(h.thread().name().is_none());
    tx.send(()).unwrap();
    assert_eq!(h.join().unwrap(), 7);
    let p = instrumented_locks::thread::spawn(|| panic!("child panics"));
    assert!(p.join().is_err());
    assert!(take().is_empty());
}

#[test]
fn unsized_data_and_with_upgraded() {
    let _h = start();
    let m: Arc<Mutex<[u8]>> = Arc::new(Mutex::new([1, 2, 3]));
    m.lock()[0] = 9;
    assert_eq!(&*m.lock(), &[9, 2, 3]);
    let l: Box<RwLock<dyn std::fmt::Debug + Send + Sync>> = Box::new(RwLock::new(5u8));
    assert_eq!(format!("{:?}", &*l.read()), "5");
    let l = RwLock::new(1);
    let mut u = l.upgradable_read();
    assert_eq!(
        u.with_upgraded(|v| {
            *v += 1;
            *v
        }),
        2
    );
    assert_eq!(u.try_with_upgraded(|v| *v), Some(2));
    drop(u);
    assert!(!l.is_locked());
    assert!(take().is_empty());
}
