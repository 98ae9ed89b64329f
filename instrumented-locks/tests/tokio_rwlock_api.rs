//! The `tokio` feature's `RwLock` has tokio's API: every test of `same_code_as_tokio` is
//! compiled twice, once against `tokio::sync` and once against `instrumented_locks::tokio`,
//! from the same source, and asserts the same values. Then, with validation, a projected
//! guard keeps the lock's one held entry and releases it exactly once.

#![cfg(feature = "tokio")]

use std::future::Future;

fn block_on<F: Future>(fut: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(fut)
}

/// The tests in `$body`, in a module `$name` that imports the lock types from `$path`.
macro_rules! against {
    ($name:ident, $path:path) => {
        mod $name {
            use std::sync::Arc;

            use super::block_on;
            use $path::{
                OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock,
                RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard,
            };

            #[test]
            fn with_max_readers_limits_the_readers() {
                let l = RwLock::with_max_readers(5u32, 2);
                let (r1, r2) = (l.try_read().expect("1st"), l.try_read().expect("2nd"));
                assert_eq!((*r1, *r2), (5, 5));
                assert!(l.try_read().is_err(), "a 3rd reader waits");
                drop(r1);
                assert_eq!(*l.try_read().expect("a reader left"), 5);
            }

            static LIMITED: RwLock<u32> = RwLock::const_with_max_readers(7, 1);

            #[test]
            fn const_with_max_readers_in_a_static() {
                let r = LIMITED.try_read().expect("free");
                assert_eq!(*r, 7);
                assert!(LIMITED.try_read().is_err(), "one reader at most");
            }

            #[test]
            #[should_panic]
            fn with_max_readers_refuses_zero() {
                let _ = RwLock::with_max_readers(0u32, 0);
            }

            #[test]
            fn read_guard_map_and_try_map() {
                let l = RwLock::new((1u32, 2u32));
                block_on(async {
                    let r = RwLockReadGuard::map(l.read().await, |v| &v.1);
                    assert_eq!(*r, 2);
                    drop(r);
                    let r =
                        RwLockReadGuard::try_map(l.read().await, |v| Some(&v.0)).expect("a part");
                    assert_eq!(*r, 1);
                    drop(r);
                    let r = RwLockReadGuard::try_map(l.read().await, |_| None::<&u32>)
                        .expect_err("no part: the guard back");
                    assert_eq!(*r, (1, 2));
                    assert_eq!(format!("{r:?}"), "(1, 2)");
                });
            }

            #[test]
            fn write_guard_map_try_map_and_into_mapped() {
                let l = RwLock::new((1u32, 2u32));
                block_on(async {
                    let mut w: RwLockMappedWriteGuard<'_, u32> =
                        RwLockWriteGuard::map(l.write().await, |v| &mut v.0);
                    *w += 10;
                    drop(w);
                    let mut w = RwLockWriteGuard::try_map(l.write().await, |v| Some(&mut v.1))
                        .expect("a part");
                    *w += 20;
                    drop(w);
                    let mut w = RwLockWriteGuard::try_map(l.write().await, |_| None::<&mut u32>)
                        .expect_err("no part: the guard back");
                    w.0 += 100;
                    drop(w);
                    let mut w = RwLockWriteGuard::into_mapped(l.write().await);
                    w.1 += 200;
                    assert!(l.try_read().is_err(), "still held for writing");
                    drop(w);
                    assert_eq!(*l.read().await, (111, 222));
                });
            }

            #[test]
            fn mapped_write_guard_map_and_try_map() {
                let l = RwLock::new(((1u32, 2u32), 3u32));
                block_on(async {
                    let w = RwLockWriteGuard::map(l.write().await, |v| &mut v.0);
                    let mut w = RwLockMappedWriteGuard::map(w, |v| &mut v.1);
                    *w = 20;
                    drop(w);
                    let w = RwLockWriteGuard::into_mapped(l.write().await);
                    let w = RwLockMappedWriteGuard::try_map(w, |_| None::<&mut u32>)
                        .expect_err("no part: the guard back");
                    let mut w =
                        RwLockMappedWriteGuard::try_map(w, |v| Some(&mut v.1)).expect("a part");
                    *w = 30;
                    assert_eq!(w.to_string(), "30");
                    drop(w);
                    assert_eq!(*l.read().await, ((1, 20), 30));
                });
            }

            #[test]
            fn write_guard_downgrade_and_downgrade_maps() {
                let l = RwLock::new((1u32, 2u32));
                block_on(async {
                    let r = l.write().await.downgrade();
                    assert_eq!(*r, (1, 2));
                    assert!(l.try_read().is_ok(), "a read beside the downgraded one");
                    drop(r);
                    let r = RwLockWriteGuard::downgrade_map(l.write().await, |v| &v.1);
                    assert_eq!((*r, l.try_read().is_ok()), (2, true));
                    drop(r);
                    let w = RwLockWriteGuard::try_downgrade_map(l.write().await, |_| None::<&u32>)
                        .expect_err("no part: the write guard back");
                    assert!(l.try_read().is_err(), "still held for writing");
                    drop(w);
                    let r = RwLockWriteGuard::try_downgrade_map(l.write().await, |v| Some(&v.0))
                        .expect("a part");
                    assert_eq!((*r, l.try_read().is_ok()), (1, true));
                });
            }

            #[test]
            fn owned_read_guard_map_try_map_and_rwlock() {
                let l = Arc::new(RwLock::new((1u32, 2u32)));
                block_on(async {
                    let r: OwnedRwLockReadGuard<(u32, u32), u32> =
                        OwnedRwLockReadGuard::map(l.clone().read_owned().await, |v| &v.1);
                    assert_eq!(*r, 2);
                    assert!(Arc::ptr_eq(OwnedRwLockReadGuard::rwlock(&r), &l));
                    let r = OwnedRwLockReadGuard::try_map(r, |_| None::<&u8>)
                        .expect_err("no part: the guard back");
                    assert_eq!(*r, 2);
                    drop(r);
                    let r =
                        OwnedRwLockReadGuard::try_map(l.clone().read_owned().await, |v| Some(&v.0))
                            .expect("a part");
                    assert_eq!(r.to_string(), "1");
                });
            }

            #[test]
            fn owned_write_guard_maps_downgrades_and_rwlock() {
                let l = Arc::new(RwLock::new((1u32, 2u32)));
                block_on(async {
                    let w = l.clone().write_owned().await;
                    assert!(Arc::ptr_eq(OwnedRwLockWriteGuard::rwlock(&w), &l));
                    let mut w: OwnedRwLockMappedWriteGuard<(u32, u32), u32> =
                        OwnedRwLockWriteGuard::map(w, |v| &mut v.0);
                    *w += 10;
                    drop(w);
                    let w = OwnedRwLockWriteGuard::try_map(l.clone().write_owned().await, |_| {
                        None::<&mut u32>
                    })
                    .expect_err("no part: the guard back");
                    let mut w =
                        OwnedRwLockWriteGuard::try_map(w, |v| Some(&mut v.1)).expect("a part");
                    *w += 20;
                    drop(w);
                    let mut w = OwnedRwLockWriteGuard::into_mapped(l.clone().write_owned().await);
                    w.0 += 100;
                    drop(w);
                    let r = l.clone().write_owned().await.downgrade();
                    assert_eq!(*r, (111, 22));
                    assert!(l.try_read().is_ok(), "a read beside the downgraded one");
                    drop(r);
                    let r =
                        OwnedRwLockWriteGuard::downgrade_map(l.clone().write_owned().await, |v| {
                            &v.1
                        });
                    assert_eq!((*r, l.try_read().is_ok()), (22, true));
                    drop(r);
                    let w = OwnedRwLockWriteGuard::try_downgrade_map(
                        l.clone().write_owned().await,
                        |_| None::<&u32>,
                    )
                    .expect_err("no part: the write guard back");
                    assert!(l.try_read().is_err(), "still held for writing");
                    drop(w);
                    let r = OwnedRwLockWriteGuard::try_downgrade_map(
                        l.clone().write_owned().await,
                        |v| Some(&v.0),
                    )
                    .expect("a part");
                    assert_eq!((*r, l.try_read().is_ok()), (111, true));
                });
            }

            #[test]
            fn owned_mapped_write_guard_map_try_map_and_rwlock() {
                let l = Arc::new(RwLock::new(((1u32, 2u32), 3u32)));
                block_on(async {
                    let w = OwnedRwLockWriteGuard::map(l.clone().write_owned().await, |v| &mut v.0);
                    assert!(Arc::ptr_eq(OwnedRwLockMappedWriteGuard::rwlock(&w), &l));
                    let w = OwnedRwLockMappedWriteGuard::try_map(w, |_| None::<&mut u32>)
                        .expect_err("no part: the guard back");
                    let mut w = OwnedRwLockMappedWriteGuard::map(w, |v| &mut v.1);
                    *w = 20;
                    drop(w);
                    let w = OwnedRwLockWriteGuard::into_mapped(l.clone().write_owned().await);
                    let mut w = OwnedRwLockMappedWriteGuard::try_map(w, |v| Some(&mut v.1))
                        .expect("a part");
                    *w = 30;
                    assert_eq!(format!("{w:?}"), "30");
                    drop(w);
                    assert_eq!(*l.read().await, ((1, 20), 30));
                });
            }
        }
    };
}

against!(same_code_as_tokio, tokio::sync);
against!(same_code_ours, instrumented_locks::tokio);

#[cfg(feature = "validate")]
mod validated {
    use std::sync::{Arc, Mutex as StdMutex};

    use instrumented_locks::task::instrument;
    use instrumented_locks::tokio::{
        OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock,
        RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard,
    };
    use lockdep::{Mode, Policy, Report};

    use super::block_on;

    static REPORTS: StdMutex<Vec<Report>> = StdMutex::new(Vec::new());

    fn held_modes() -> Vec<Mode> {
        lockdep::held_locks().iter().map(|h| h.mode).collect()
    }

    #[test]
    fn a_projected_guard_keeps_the_one_entry_and_releases_it_once() {
        lockdep::set_policy(Policy::Callback(Arc::new(|r: &Report| {
            REPORTS.lock().unwrap().push(r.clone());
        })));
        let l = Arc::new(RwLock::named((1u32, (2u32, 3u32)), "projected"));
        block_on(instrument(async {
            // Borrowed guards: map, a failed try_map, map again, into_mapped; one entry.
            let w = RwLockWriteGuard::map(l.write().await, |v| &mut v.1);
            let w = RwLockMappedWriteGuard::try_map(w, |_| None::<&mut u8>).expect_err("back");
            let w = RwLockMappedWriteGuard::map(w, |v| &mut v.0);
            assert_eq!((*w, held_modes()), (2, vec![Mode::Exclusive]));
            tokio::task::yield_now().await;
            assert_eq!(
                held_modes(),
                [Mode::Exclusive],
                "held by the task across polls"
            );
            drop(w);
            assert_eq!(lockdep::held_count(), 0, "released by the last guard");

            let r = RwLockWriteGuard::downgrade_map(l.write().await, |v| &v.1);
            let r = RwLockReadGuard::try_map(r, |v| Some(&v.1)).expect("a part");
            assert_eq!((*r, held_modes()), (3, vec![Mode::Read]));
            drop(r);
            let w = RwLockWriteGuard::try_downgrade_map(l.write().await, |_| None::<&u8>)
                .expect_err("back");
            assert_eq!(
                held_modes(),
                [Mode::Exclusive],
                "a failed downgrade keeps the mode"
            );
            drop(w);

            // Owned guards: the same, and the lock is free again afterwards.
            let w = OwnedRwLockWriteGuard::into_mapped(l.clone().write_owned().await);
            let w = OwnedRwLockMappedWriteGuard::map(w, |v| &mut v.1);
            let w = OwnedRwLockMappedWriteGuard::try_map(w, |_| None::<&mut u8>).expect_err("back");
            assert_eq!(held_modes(), [Mode::Exclusive]);
            drop(w);
            let r = OwnedRwLockWriteGuard::downgrade_map(l.clone().write_owned().await, |v| &v.0);
            let r = OwnedRwLockReadGuard::map(r, |v| v);
            assert_eq!((*r, held_modes()), (1, vec![Mode::Read]));
            drop(r);
            assert_eq!(lockdep::held_count(), 0);
            assert!(l.try_write().is_ok(), "tokio's lock is free too");
        }));
        // Only this test's lock: the other tests of this file run beside it.
        let reports: Vec<Report> = std::mem::take(&mut *REPORTS.lock().unwrap())
            .into_iter()
            .filter(|r| r.to_string().contains("projected"))
            .collect();
        assert!(reports.is_empty(), "no unbalanced release: {reports:#?}");
        lockdep::set_policy(Policy::Stderr);
    }
}
