//! The `tokio` feature: validated `tokio::sync` locks held per task, on tokio's multi-thread
//! and current-thread runtimes and on a `LocalSet`, and blocking guards held across an
//! `.await`.

#![cfg(all(feature = "tokio", feature = "validate"))]

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard as StdGuard};
use std::task::{Context, Poll, Waker};

use instrumented_locks::task::{instrument, spawn, spawn_local};
use instrumented_locks::tokio::Mutex;
use lockdep::{Policy, Report, ReportKind};
use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;

static SERIAL: StdMutex<()> = StdMutex::new(());
static REPORTS: StdMutex<Vec<Report>> = StdMutex::new(Vec::new());
/// Reports of this kind also panic the reporting task (after being collected): for an
/// acquisition that would really block the thread.
static PANIC_ON_RECURSIVE: AtomicBool = AtomicBool::new(false);

/// Serializes the test on the process-wide validator, resets it and collects reports.
fn start() -> StdGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    lockdep::reset();
    // Relaxed: written here, before the runtime that reads it is built.
    PANIC_ON_RECURSIVE.store(false, Ordering::Relaxed);
    lockdep::set_policy(Policy::Callback(Arc::new(|r: &Report| {
        REPORTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
        // Relaxed: see above.
        if r.kind() == ReportKind::RecursiveLocking && PANIC_ON_RECURSIVE.load(Ordering::Relaxed) {
            panic!("lockdep: recursive locking");
        }
    })));
    take();
    serial
}

fn take() -> Vec<Report> {
    std::mem::take(&mut *REPORTS.lock().unwrap_or_else(|e| e.into_inner()))
}

fn kinds(reports: &[Report]) -> Vec<ReportKind> {
    reports.iter().map(Report::kind).collect()
}

fn multi_thread() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .expect("runtime")
}

fn current_thread() -> Runtime {
    Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

/// Both runtime flavours, one after the other.
fn runtimes() -> [(&'static str, Runtime); 2] {
    [
        ("multi-thread", multi_thread()),
        ("current-thread", current_thread()),
    ]
}

/// A class name as reports print it, for a dependency check.
fn has_dependency(from: &str, to: &str) -> bool {
    lockdep::dependencies()
        .iter()
        .any(|d| d.from == from && d.to == to)
}

#[test]
fn abba_between_two_tokio_mutexes_in_two_tasks_is_reported() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named(0u32, "abba_a"));
        let b = Arc::new(Mutex::named(0u32, "abba_b"));
        rt.block_on(async {
            let (a1, b1) = (a.clone(), b.clone());
            spawn(async move {
                let _ga = a1.lock().await;
                tokio::task::yield_now().await;
                let _gb = b1.lock().await;
            })
            .await
            .expect("task 1");
            // Task 2 runs after task 1 finished: no deadlock can happen, the order is
            // reported anyway.
            let (a2, b2) = (a.clone(), b.clone());
            spawn(async move {
                let _gb = b2.lock().await;
                tokio::task::yield_now().await;
                let _ga = a2.lock().await;
            })
            .await
            .expect("task 2");
        });
        let r = take();
        assert_eq!(
            kinds(&r),
            [ReportKind::CircularDependency],
            "{flavour}: {r:#?}"
        );
        let thread = r[0].thread();
        assert!(
            thread.task.is_some(),
            "{flavour}: the report names the task"
        );
        assert!(
            thread.name.starts_with("task "),
            "{flavour}: {}",
            thread.name
        );
        assert!(r[0].to_string().contains(" on "), "{flavour}: {}", r[0]);
    }
}

#[test]
fn consistent_order_across_many_migrating_tasks_is_silent() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named(0u64, "order_a"));
        let b = Arc::new(Mutex::named(0u64, "order_b"));
        rt.block_on(async {
            let tasks: Vec<_> = (0..32)
                .map(|_| {
                    let (a, b) = (a.clone(), b.clone());
                    spawn(async move {
                        for _ in 0..20 {
                            let mut ga = a.lock().await;
                            // Contended and yielding: the task is parked and may resume
                            // on another worker, holding `a`.
                            tokio::task::yield_now().await;
                            let mut gb = b.lock().await;
                            *ga += 1;
                            *gb += 1;
                            drop(gb);
                            drop(ga);
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("task");
            }
        });
        assert_eq!(*a.try_lock().expect("free"), 640, "{flavour}");
        let r = take();
        assert!(r.is_empty(), "{flavour}: {r:#?}");
        assert!(has_dependency("order_a", "order_b"), "{flavour}");
        assert!(!has_dependency("order_b", "order_a"), "{flavour}");
        // No entry stayed behind on any thread: the test thread holds nothing.
        assert_eq!(lockdep::held_count(), 0, "{flavour}");
    }
}

#[test]
fn two_tasks_contending_on_one_thread_are_not_recursion() {
    let _serial = start();
    let rt = current_thread();
    let m = Arc::new(Mutex::named((), "contended"));
    rt.block_on(async {
        let (tx, rx) = oneshot::channel::<()>();
        let m1 = m.clone();
        let holder = spawn(async move {
            let _g = m1.lock().await;
            rx.await.expect("release signal");
        });
        tokio::task::yield_now().await;
        let m2 = m.clone();
        let waiter = spawn(async move {
            let _g = m2.lock().await;
        });
        tokio::task::yield_now().await;
        tx.send(()).expect("holder alive");
        holder.await.expect("holder");
        waiter.await.expect("waiter");
    });
    let r = take();
    assert!(r.is_empty(), "{r:#?}");
}

#[test]
fn blocking_guard_held_across_an_await_is_reported() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let m = instrumented_locks::Mutex::named(0u32, "held_across");
        let line = rt.block_on(instrument(async {
            let line = line!() + 1;
            let g = m.lock();
            tokio::task::yield_now().await;
            drop(g);
            line
        }));
        let r = take();
        assert_eq!(
            kinds(&r),
            [ReportKind::HeldAcrossAwait],
            "{flavour}: {r:#?}"
        );
        let Report::HeldAcrossAwait {
            lock, task, thread, ..
        } = &r[0]
        else {
            unreachable!()
        };
        assert_eq!(lock.name, Some("held_across"), "{flavour}");
        assert_eq!(
            lock.site.line(),
            line,
            "{flavour}: the guard's acquisition site"
        );
        assert_eq!(thread.task, Some(*task), "{flavour}");
        let text = r[0].to_string();
        assert!(text.contains("held across an await"), "{flavour}: {text}");
    }
}

#[test]
fn held_across_await_is_reported_once_per_site() {
    let _serial = start();
    let rt = current_thread();
    let m = instrumented_locks::Mutex::named(0u32, "once_per_site");
    rt.block_on(instrument(async {
        for _ in 0..5 {
            let g = m.lock();
            tokio::task::yield_now().await;
            drop(g);
        }
    }));
    // Five awaits with the guard held at one site: one report.
    assert_eq!(kinds(&take()), [ReportKind::HeldAcrossAwait]);
}

#[test]
fn blocking_guard_dropped_before_the_await_is_silent() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let m = instrumented_locks::Mutex::named(0u32, "dropped_before");
        rt.block_on(instrument(async {
            for _ in 0..3 {
                {
                    let mut g = m.lock();
                    *g += 1;
                }
                tokio::task::yield_now().await;
            }
        }));
        let r = take();
        assert!(r.is_empty(), "{flavour}: {r:#?}");
    }
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_lock_future_dropped_while_waiting_leaves_no_entry() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named((), "cancel_a"));
        let b = Arc::new(Mutex::named((), "cancel_b"));
        rt.block_on(async {
            let hold_b = b.clone().try_lock_owned().expect("free");
            let (a1, b1) = (a.clone(), b.clone());
            spawn(async move {
                let _ga = a1.lock().await;
                {
                    let mut waiting = pin!(b1.lock());
                    assert!(poll_once(waiting.as_mut()).is_pending(), "b is held");
                    assert_eq!(lockdep::held_count(), 2, "a, and b being waited for");
                } // the lock future is cancelled here
                assert_eq!(lockdep::held_count(), 1, "only a");
            })
            .await
            .expect("task");
            drop(hold_b);
            // `a` is not held any more by anyone: taking it after `b` closes no cycle
            // with a stale entry, but a -> b was recorded when b was awaited under a.
            let (a2, b2) = (a.clone(), b.clone());
            spawn(async move {
                let _ga = a2.lock().await;
                let _gb = b2.lock().await;
            })
            .await
            .expect("task");
        });
        let r = take();
        assert!(r.is_empty(), "{flavour}: {r:#?}");
    }
}

#[test]
fn an_aborted_task_holding_an_async_lock_leaves_no_entry() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named((), "abort_a"));
        let b = Arc::new(Mutex::named((), "abort_b"));
        rt.block_on(async {
            let (held_tx, held_rx) = oneshot::channel();
            let a1 = a.clone();
            let victim = spawn(async move {
                let _ga = a1.lock().await;
                held_tx.send(()).expect("test alive");
                std::future::pending::<()>().await;
            });
            held_rx.await.expect("victim holds a");
            victim.abort();
            assert!(victim.await.expect_err("aborted").is_cancelled());
            // A stale `a` on any worker would give b -> a here, then a -> b a cycle.
            for _ in 0..16 {
                let (a2, b2) = (a.clone(), b.clone());
                spawn(async move {
                    let _gb = b2.lock().await;
                    tokio::task::yield_now().await;
                })
                .await
                .expect("task");
                spawn(async move {
                    let _ga = a2.lock().await;
                    tokio::task::yield_now().await;
                })
                .await
                .expect("task");
            }
        });
        let r = take();
        assert!(r.is_empty(), "{flavour}: {r:#?}");
        assert!(!has_dependency("abort_a", "abort_b"), "{flavour}");
        assert!(!has_dependency("abort_b", "abort_a"), "{flavour}");
    }
}

#[test]
fn async_blocking_async_cycle_is_reported() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named((), "mixed_async"));
        let b = Arc::new(instrumented_locks::Mutex::named((), "mixed_blocking"));
        rt.block_on(async {
            let (a1, b1) = (a.clone(), b.clone());
            spawn(async move {
                let _ga = a1.lock().await;
                let _gb = b1.lock(); // a (async) -> b (blocking)
            })
            .await
            .expect("task 1");
            let (a2, b2) = (a.clone(), b.clone());
            spawn(async move {
                let gb = b2.lock();
                // b (blocking) -> a (async): closes the cycle. (`a` is free, so this
                // poll does not return Pending with `b` held.)
                let ga = std::pin::pin!(a2.lock());
                let ready = poll_once(ga);
                assert!(ready.is_ready());
                drop(ready);
                drop(gb);
            })
            .await
            .expect("task 2");
        });
        let r = take();
        assert_eq!(
            kinds(&r),
            [ReportKind::CircularDependency],
            "{flavour}: {r:#?}"
        );
        assert_eq!(
            r[0].cycle_classes(),
            ["mixed_blocking", "mixed_async", "mixed_blocking"],
            "{flavour}"
        );
    }
}

/// Held across an await on a single-threaded executor, then taken by another task on that
/// thread: the thread still holds the blocking lock, so the second task's lock is recursive
/// locking, reported before the thread blocks.
#[test]
fn blocking_guard_across_await_then_another_task_on_the_thread_is_recursive() {
    let _serial = start();
    // Relaxed: set before the runtime is built.
    PANIC_ON_RECURSIVE.store(true, Ordering::Relaxed);
    let rt = current_thread();
    let local = tokio::task::LocalSet::new();
    let m = Arc::new(instrumented_locks::Mutex::named((), "c29_m"));
    local.block_on(&rt, async {
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let m1 = m.clone();
        let a = spawn_local(async move {
            let _g = m1.lock();
            done_rx.await.expect("signal"); // guard held across the await
        });
        tokio::task::yield_now().await; // A runs and awaits, holding m
        let m2 = m.clone();
        let b = spawn_local(async move {
            let _g = m2.lock(); // would block the only thread forever
        });
        let err = b
            .await
            .expect_err("B panics at the report instead of blocking");
        assert!(err.is_panic());
        done_tx.send(()).expect("A alive");
        a.await.expect("A");
    });
    let r = take();
    assert_eq!(
        kinds(&r),
        [ReportKind::HeldAcrossAwait, ReportKind::RecursiveLocking],
        "{r:#?}"
    );
    let Report::RecursiveLocking(s) = &r[1] else {
        unreachable!()
    };
    assert_eq!(s.holding.name, Some("c29_m"));
    assert!(s.thread.task.is_some());
}

/// The negative control: released before the await, taken by another task.
#[test]
fn blocking_guard_released_before_await_then_another_task_is_silent() {
    let _serial = start();
    let rt = current_thread();
    let local = tokio::task::LocalSet::new();
    let m = Arc::new(instrumented_locks::Mutex::named((), "c29_b"));
    local.block_on(&rt, async {
        let m1 = m.clone();
        let a = spawn_local(async move {
            drop(m1.lock());
            tokio::task::yield_now().await;
        });
        let m2 = m.clone();
        let b = spawn_local(async move {
            drop(m2.lock());
        });
        a.await.expect("A");
        b.await.expect("B");
    });
    let r = take();
    assert!(r.is_empty(), "{r:#?}");
}

/// With `send_guard`, a blocking guard held across an await and dropped on another thread:
/// no crash, and no report (the guard type is declared movable). What this crate cannot do
/// yet: the lock stays on the acquiring thread's held stack until that thread takes it
/// again, so a lock taken there meanwhile gets a dependency from it.
#[cfg(feature = "send_guard")]
#[test]
fn send_guard_held_across_await_and_dropped_elsewhere_does_not_crash() {
    static M: instrumented_locks::Mutex<()> = instrumented_locks::Mutex::named((), "c29_c_m");
    let _serial = start();
    let rt = current_thread();
    let n = instrumented_locks::Mutex::named((), "c29_c_n");
    let (tx, rx) = std::sync::mpsc::channel();
    let dropper = std::thread::spawn(move || drop(rx.recv().expect("guard")));
    rt.block_on(instrument(async move {
        let g = M.lock();
        tokio::task::yield_now().await;
        tx.send(g).expect("dropper alive"); // the task "resumes elsewhere" and unlocks
    }));
    dropper.join().expect("dropper");
    rt.block_on(instrument(async {
        drop(n.lock());
    }));
    let r = take();
    assert_eq!(kinds(&r), [ReportKind::HeldAcrossAwait], "{r:#?}");
}

#[test]
fn rwlock_read_write_and_downgrade() {
    let _serial = start();
    let rt = multi_thread();
    let l = Arc::new(instrumented_locks::tokio::RwLock::named(1u32, "rw"));
    let m = Arc::new(Mutex::named(0u32, "rw_m"));
    rt.block_on(async {
        let (l1, m1) = (l.clone(), m.clone());
        spawn(async move {
            let w = l1.write().await;
            let r = instrumented_locks::tokio::RwLockWriteGuard::downgrade(w);
            tokio::task::yield_now().await;
            let _gm = m1.lock().await; // rw (read) -> rw_m
            assert_eq!(*r, 1);
            let r2 = l1.try_read();
            assert!(r2.is_ok(), "a read beside a read");
        })
        .await
        .expect("task");
        let (l2, m2) = (l.clone(), m.clone());
        spawn(async move {
            let _gm = m2.lock().await;
            let _w = l2.write_owned().await; // rw_m -> rw (write): a cycle
        })
        .await
        .expect("task");
    });
    assert_eq!(kinds(&take()), [ReportKind::CircularDependency]);
}

#[test]
fn outside_an_instrumented_task_an_async_lock_is_validated_not_held() {
    let _serial = start();
    let rt = current_thread();
    let blocking = instrumented_locks::Mutex::named((), "outside_blocking");
    let a = Mutex::named((), "outside_async");
    rt.block_on(async {
        let _g = blocking.lock();
        let _ga = a.lock().await; // blocking -> async recorded; `a` not held afterwards
        assert_eq!(lockdep::held_count(), 1);
    });
    assert!(has_dependency("outside_blocking", "outside_async"));
    assert!(take().is_empty());
}

#[test]
fn an_owned_guard_dropped_by_another_task_releases_its_owner_entry() {
    let _serial = start();
    let rt = multi_thread();
    let a = Arc::new(Mutex::named((), "moved_a"));
    let b = Arc::new(Mutex::named((), "moved_b"));
    rt.block_on(async {
        let a1 = a.clone();
        let guard = spawn(async move { a1.lock_owned().await })
            .await
            .expect("task");
        spawn(async move { drop(guard) }).await.expect("task");
        let (a2, b2) = (a.clone(), b.clone());
        spawn(async move {
            let _gb = b2.lock().await;
            let _ga = a2.lock().await; // no stale `a` anywhere: no a -> b before this
        })
        .await
        .expect("task");
    });
    assert!(take().is_empty());
    assert!(!has_dependency("moved_a", "moved_b"));
}

#[test]
fn abba_between_tasks_that_are_not_instrumented_is_reported() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named(0u32, "plain_a"));
        let b = Arc::new(Mutex::named(0u32, "plain_b"));
        rt.block_on(async {
            let (a1, b1) = (a.clone(), b.clone());
            tokio::spawn(async move {
                let _ga = a1.lock().await;
                tokio::task::yield_now().await;
                let _gb = b1.lock().await;
            })
            .await
            .expect("task 1");
            let (a2, b2) = (a.clone(), b.clone());
            tokio::spawn(async move {
                let _gb = b2.lock().await;
                tokio::task::yield_now().await;
                let _ga = a2.lock().await;
            })
            .await
            .expect("task 2");
        });
        let r = take();
        assert_eq!(
            kinds(&r),
            [ReportKind::CircularDependency],
            "{flavour}: {r:#?}"
        );
    }
}

#[test]
fn consistent_order_across_tasks_that_are_not_instrumented_is_silent() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named(0u64, "plain_order_a"));
        let b = Arc::new(Mutex::named(0u64, "plain_order_b"));
        rt.block_on(async {
            let tasks: Vec<_> = (0..16)
                .map(|_| {
                    let (a, b) = (a.clone(), b.clone());
                    tokio::spawn(async move {
                        for _ in 0..20 {
                            let _ga = a.lock().await;
                            tokio::task::yield_now().await;
                            let _gb = b.lock().await;
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("task");
            }
        });
        let r = take();
        assert!(r.is_empty(), "{flavour}: {r:#?}");
        assert!(
            has_dependency("plain_order_a", "plain_order_b"),
            "{flavour}"
        );
        assert_eq!(lockdep::held_count(), 0, "{flavour}");
    }
}

#[test]
fn blocking_lock_is_held_by_the_thread() {
    let _serial = start();
    let m = Mutex::named(0u32, "blocking_lock_m");
    let n = Mutex::named(0u32, "blocking_lock_n");
    std::thread::scope(|s| {
        s.spawn(|| {
            let gm = m.blocking_lock();
            assert_eq!(lockdep::held_count(), 1);
            let gn = n.blocking_lock(); // m -> n
            drop(gn);
            drop(gm);
            assert_eq!(lockdep::held_count(), 0);
        });
    });
    assert!(has_dependency("blocking_lock_m", "blocking_lock_n"));
    assert!(take().is_empty());
}

#[test]
fn mapped_and_owned_guards_keep_and_release_the_entry() {
    use instrumented_locks::tokio::{MutexGuard, RwLock};
    let _serial = start();
    let rt = multi_thread();
    let m = Arc::new(Mutex::named((1u32, 2u32), "mapped_m"));
    let l = Arc::new(RwLock::named(0u32, "owned_rw"));
    rt.block_on(async {
        let (m, l) = (m.clone(), l.clone());
        spawn(async move {
            let g = MutexGuard::map(m.lock().await, |v| &mut v.1);
            assert_eq!(*g, 2);
            assert_eq!(lockdep::held_count(), 1, "the mapped guard holds the entry");
            tokio::task::yield_now().await;
            drop(g);
            assert_eq!(lockdep::held_count(), 0);
            let g = m.lock().await;
            let g = MutexGuard::try_map(g, |_| None::<&mut u32>).expect_err("kept");
            assert_eq!(
                lockdep::held_count(),
                1,
                "the returned guard holds the entry"
            );
            drop(g);
            let r = l.clone().read_owned().await;
            tokio::task::yield_now().await;
            assert_eq!(lockdep::held_count(), 1);
            drop(r);
            let w = l.clone().write_owned().await;
            let r = instrumented_locks::tokio::OwnedRwLockWriteGuard::downgrade(w);
            assert_eq!(lockdep::held_locks()[0].mode, lockdep::Mode::Read);
            drop(r);
            assert_eq!(lockdep::held_count(), 0);
            let g = instrumented_locks::tokio::OwnedMutexGuard::map(
                m.clone().lock_owned().await,
                |v| &mut v.0,
            );
            assert_eq!((*g, lockdep::held_count()), (1, 1));
            drop(g);
            let r = instrumented_locks::tokio::RwLockReadGuard::map(l.read().await, |v| v);
            let r2 = l.clone().try_read_owned().expect("readers share");
            assert_eq!((*r, *r2, lockdep::held_count()), (0, 0, 2));
            drop((r, r2));
            let mut w = instrumented_locks::tokio::RwLockWriteGuard::map(l.write().await, |v| v);
            *w += 1;
            assert!(
                l.clone().try_write_owned().is_err(),
                "held by the mapped guard"
            );
            drop(w);
            assert_eq!(*l.clone().try_write_owned().expect("free"), 1);
            assert_eq!(lockdep::held_count(), 0);
        })
        .await
        .expect("task");
    });
    assert!(take().is_empty());
}

/// A task that holds an async lock while it waits (between polls, on no thread) is in the
/// all-threads dump as a task, with the lock; no thread shows the lock; once it releases the
/// lock and ends, the dump shows it no more.
#[test]
fn the_dump_shows_a_task_holding_an_async_lock_between_polls() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let a = Arc::new(Mutex::named((), "dump_a"));
        rt.block_on(async {
            let (held_tx, held_rx) = oneshot::channel();
            let (go_tx, go_rx) = oneshot::channel::<()>();
            let a1 = a.clone();
            let holder = spawn(async move {
                let _ga = a1.lock().await;
                held_tx.send(()).expect("test alive");
                go_rx.await.expect("test alive");
            });
            held_rx.await.expect("holder holds a");
            let is_a = |l: &lockdep::LockDesc| l.name == Some("dump_a");
            // The holder's poll may still be ending on its worker: wait until it has. A dump
            // copies the threads, then the tasks, so one taken while the poll ends can show
            // the lock on the worker and in the task (documented skew): wait for one that
            // shows it in the task only (a thread that kept showing it would hit the guard).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            let d = loop {
                let d = lockdep::all_held_locks();
                if d.tasks.iter().any(|t| t.held.iter().any(is_a))
                    && !d.threads.iter().any(|t| t.held.iter().any(is_a))
                {
                    break d;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{flavour}: hang guard:{d}"
                );
                tokio::task::yield_now().await;
            };
            assert_eq!(d.tasks.len(), 1, "{flavour}:{d}");
            assert_eq!(d.tasks[0].held.len(), 1, "{flavour}:{d}");
            assert!(
                !d.threads.iter().any(|t| t.held.iter().any(is_a)),
                "{flavour}: a thread shows the task's lock:{d}"
            );
            assert!(
                d.to_string().contains("lock held by task") && d.to_string().contains("dump_a"),
                "{flavour}:{d}"
            );
            // A second task waits for the lock: shown waiting for it, not holding it.
            let a2 = a.clone();
            let waiter = spawn(async move {
                drop(a2.lock().await);
            });
            let d = loop {
                let d = lockdep::all_held_locks();
                if d.tasks.iter().any(|t| t.waiting.as_ref().is_some_and(is_a)) {
                    break d;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{flavour}: hang guard:{d}"
                );
                tokio::task::yield_now().await;
            };
            let holders: Vec<_> = d.tasks.iter().filter(|t| t.held.iter().any(is_a)).collect();
            assert_eq!(holders.len(), 1, "{flavour}: one holder:{d}");
            assert!(d.to_string().contains("waiting for: "), "{flavour}:{d}");
            go_tx.send(()).expect("holder alive");
            holder.await.expect("holder");
            waiter.await.expect("waiter");
            let d = lockdep::all_held_locks();
            assert!(d.tasks.is_empty(), "{flavour}:{d}");
        });
        let r = take();
        assert!(r.is_empty(), "{flavour}: {r:#?}");
    }
}

/// A tokio lock's data whose `Debug` takes a blocking (thread) lock.
struct LocksOnFormat(Arc<instrumented_locks::Mutex<u32>>);

impl std::fmt::Debug for LocksOnFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", *self.0.lock())
    }
}

/// `{:?}` of a tokio lock formats its data under the lock's own validated try-lock (tokio's
/// format): in a task, a lock the data's `Debug` takes depends on it, so the other order is
/// reported; a lock the task holds prints `<locked>`, with no report.
#[test]
fn debug_of_a_tokio_lock_formats_under_a_validated_try_lock() {
    for (flavour, rt) in runtimes() {
        let _serial = start();
        let n = Arc::new(instrumented_locks::Mutex::named(7u32, "debug_n"));
        let m = Arc::new(Mutex::named(LocksOnFormat(n.clone()), "debug_m"));
        let rw = Arc::new(instrumented_locks::tokio::RwLock::named(3u32, "debug_rw"));
        rt.block_on(async {
            let (m1, rw1) = (m.clone(), rw.clone());
            spawn(async move {
                assert_eq!(format!("{m1:?}"), "Mutex { data: 7 }");
                assert_eq!(format!("{rw1:?}"), "RwLock { data: 3 }");
                let _w = rw1.write().await;
                assert_eq!(format!("{rw1:?}"), "RwLock { data: <locked> }");
            })
            .await
            .expect("task");
        });
        assert!(
            has_dependency("debug_m", "debug_n"),
            "{flavour}: the data's lock depends on the formatted one"
        );
        assert_eq!(kinds(&take()), [], "{flavour}");
        // The other order, on a thread: a real deadlock with a task formatting `m`.
        let (m2, n2) = (m.clone(), n.clone());
        std::thread::spawn(move || {
            let _gn = n2.lock();
            drop(m2.blocking_lock());
        })
        .join()
        .expect("thread");
        assert_eq!(
            kinds(&take()),
            [ReportKind::CircularDependency],
            "{flavour}"
        );
    }
}
