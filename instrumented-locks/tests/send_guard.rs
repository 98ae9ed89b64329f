//! Guards and threads: `!Send` by the crate's own marker unless `send_guard` is on; with it,
//! a guard dropped on another thread unlocks there with no report on either thread, and the
//! lock leaves the acquiring thread's held stack exactly (before that thread's next lock
//! operation): no "bad unlock balance", no "recursive locking" when it re-locks, no
//! dependency from the moved lock to the locks it takes next, and no "lock held when thread
//! exits" if it exits while the guard lives on elsewhere.

mod common;

#[allow(unused_imports)] // each feature set uses its part
use instrumented_locks::{
    MappedMutexGuard, Mutex, MutexGuard, ReentrantMutexGuard, RwLockReadGuard, RwLockWriteGuard,
};
use static_assertions::assert_not_impl_any;

// Re-entrant guards are never `Send`.
assert_not_impl_any!(ReentrantMutexGuard<'static, u8>: Send);

// A guard shares `&T` with the threads it is shared with: `Sync` only for `T: Sync`, also
// through an `Arc` (whose mutex is `Sync` for `T: Send` alone) and once mapped.
mod sync_needs_sync_data {
    use std::cell::Cell;

    use static_assertions::{assert_impl_all, assert_not_impl_any};

    assert_not_impl_any!(instrumented_locks::ReentrantMutexGuard<'static, Cell<u8>>: Sync, Send);
    assert_not_impl_any!(
        instrumented_locks::MappedReentrantMutexGuard<'static, Cell<u8>>: Sync, Send
    );
    assert_impl_all!(instrumented_locks::ReentrantMutexGuard<'static, u8>: Sync);
    assert_impl_all!(instrumented_locks::MappedReentrantMutexGuard<'static, u8>: Sync);
    #[cfg(feature = "arc_lock")]
    mod arc {
        use super::*;
        use instrumented_locks::generic::ArcReentrantMutexGuard;
        use instrumented_locks::{RawMutex, RawThreadId};

        assert_not_impl_any!(ArcReentrantMutexGuard<RawMutex, RawThreadId, Cell<u8>>: Sync, Send);
        assert_impl_all!(ArcReentrantMutexGuard<RawMutex, RawThreadId, u8>: Sync);
        assert_not_impl_any!(
            instrumented_locks::generic::ArcMutexGuard<RawMutex, Cell<u8>>: Sync
        );
    }
}

#[cfg(not(feature = "send_guard"))]
mod not_send {
    use super::*;
    use static_assertions::assert_impl_all;

    assert_not_impl_any!(MutexGuard<'static, u8>: Send);
    assert_not_impl_any!(MappedMutexGuard<'static, u8>: Send);
    assert_not_impl_any!(RwLockReadGuard<'static, u8>: Send);
    assert_not_impl_any!(RwLockWriteGuard<'static, u8>: Send);
    assert_not_impl_any!(instrumented_locks::std_sync::MutexGuard<'static, u8>: Send);
    // Even over a raw lock whose own marker says `Send`: the crate's marker decides.
    assert_not_impl_any!(
        instrumented_locks::generic::MutexGuard<'static, SendRaw, u8>: Send
    );
    assert_impl_all!(MutexGuard<'static, u8>: Sync);

    /// A raw mutex whose guards lock_api would make `Send`.
    pub struct SendRaw(instrumented_locks::RawMutex);

    // SAFETY: forwards every call to a correct raw mutex.
    unsafe impl lock_api::RawMutex for SendRaw {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: SendRaw = SendRaw(<instrumented_locks::RawMutex as lock_api::RawMutex>::INIT);
        type GuardMarker = lock_api::GuardSend;
        fn lock(&self) {
            self.0.lock();
        }
        fn try_lock(&self) -> bool {
            self.0.try_lock()
        }
        unsafe fn unlock(&self) {
            // SAFETY: our caller holds the lock.
            unsafe { self.0.unlock() }
        }
    }
}

#[cfg(feature = "send_guard")]
mod send {
    use super::common::{assert_reports, start};
    use super::*;
    use instrumented_locks::RwLock;
    use static_assertions::assert_impl_all;

    assert_impl_all!(MutexGuard<'static, u8>: Send);
    assert_impl_all!(RwLockWriteGuard<'static, u8>: Send);
    assert_not_impl_any!(MutexGuard<'static, std::rc::Rc<u8>>: Send);

    #[test]
    fn a_guard_dropped_on_another_thread_gives_no_report() {
        let _h = start();
        let m = Mutex::named(0, "sent");
        let l = RwLock::named(0, "sent rwlock");
        let g = m.lock();
        std::thread::scope(|s| {
            s.spawn(move || drop(g)).join().unwrap();
        });
        assert_reports!();
        // The release reached this thread when it took the lock again: not recursive
        // locking, and dropping the new guard here balances.
        drop(m.lock());
        assert_reports!();
        assert_eq!(lockdep::held_count(), 0);
        let w = l.write();
        std::thread::scope(|s| {
            s.spawn(move || drop(w)).join().unwrap();
        });
        drop(l.read());
        assert_reports!();
        assert_eq!(lockdep::held_count(), 0);
    }

    #[test]
    fn nesting_is_still_validated_while_the_guard_is_at_home() {
        let _h = start();
        let a = Mutex::named(0, "A");
        let b = Mutex::named(0, "B");
        {
            let _a = a.lock();
            let _b = b.lock();
        }
        let gb = b.lock();
        let ga = a.lock(); // B -> A: the inverse order, reported before anything moves.
        assert_reports!(lockdep::Report::CircularDependency(_));
        std::thread::scope(|s| {
            s.spawn(move || drop(ga)).join().unwrap();
        });
        drop(gb);
        drop(a.lock());
        assert_reports!();
        assert_eq!(lockdep::held_count(), 0);
    }

    fn depends(from: &str, to: &str) -> bool {
        lockdep::dependencies()
            .iter()
            .any(|d| d.from == from && d.to == to)
    }

    /// An executor's task takes M on one worker, awaits, resumes on another worker and
    /// unlocks M there; meanwhile another task on the first worker takes N. M is not held by
    /// the first worker any more: no M -> N dependency, no report.
    #[test]
    fn a_guard_released_elsewhere_leaves_the_acquiring_stack_exactly() {
        let _h = start();
        let m = Mutex::named(0, "task M");
        let k = Mutex::named(0, "worker K");
        let n = Mutex::named(0, "task N");
        let gk = k.lock();
        let gm = m.lock();
        assert_eq!(lockdep::held_count(), 2);
        std::thread::scope(|s| {
            s.spawn(move || drop(gm)).join().unwrap();
        });
        // Exactly M left: K is still held here, and the locks taken now depend on K only.
        assert_eq!(lockdep::held_count(), 1);
        assert!(lockdep::is_held(k.lock_map().unwrap()));
        assert!(!lockdep::is_held(m.lock_map().unwrap()));
        drop(n.lock());
        assert!(depends("worker K", "task N"));
        assert!(
            !depends("task M", "task N"),
            "{:#?}",
            lockdep::dependencies()
        );
        drop(gk);
        assert_eq!(lockdep::held_count(), 0);
        assert_reports!();
    }

    /// The acquiring thread exits while the guard it sent lives on; the receiver releases
    /// it later. Neither the exit nor the release is reported.
    #[test]
    fn the_acquiring_thread_may_exit_before_the_guard_is_released() {
        let _h = start();
        let m = Mutex::named(0, "outliving");
        std::thread::scope(|s| {
            let g = s.spawn(|| m.lock()).join().unwrap();
            assert_reports!();
            drop(g);
        });
        assert_reports!();
        // The lock is free and this thread's stack is clean.
        drop(m.lock());
        assert_eq!(lockdep::held_count(), 0);
        assert_reports!();
    }

    /// A guard that goes there and back: sent to a thread, sent back, dropped at home.
    #[test]
    fn a_guard_sent_back_home_releases_normally() {
        let _h = start();
        let m = Mutex::named(0, "boomerang");
        let g = m.lock();
        let g = std::thread::scope(|s| s.spawn(move || g).join().unwrap());
        drop(g);
        assert_eq!(lockdep::held_count(), 0);
        assert_reports!();
    }

    /// lock_stat follows a guard released on another thread: the hold is counted once, in the
    /// class of the lock, and nothing is left over on the acquiring thread (a later hold of
    /// the same lock there is timed from its own acquisition).
    #[test]
    fn lock_stat_counts_the_hold_of_a_guard_released_elsewhere() {
        let _h = start();
        lockdep::reset_lock_stat();
        lockdep::set_lock_stat(true);
        let m = Mutex::named(0, "stat traveller");
        let g = m.lock();
        std::thread::scope(|s| s.spawn(move || drop(g)).join().unwrap());
        drop(m.lock());
        lockdep::set_lock_stat(false);
        let s = lockdep::lock_stat();
        let c = s.class("stat traveller").expect("stats of the lock");
        assert_eq!((c.acquisitions, c.hold.count), (2, 2));
        assert_eq!(lockdep::held_count(), 0);
        assert_reports!();
    }

    /// A guard released on another thread leaves the acquiring thread's shared record at
    /// once for other threads' eyes, before that thread's next lock operation applies the
    /// release: the dump shows no holder, and unregistering the lock's key elsewhere is no
    /// "key unregistered while held".
    #[test]
    fn a_guard_released_elsewhere_is_not_held_in_other_threads_eyes() {
        let _h = start();
        let key = lockdep::DynamicKey::new("moved key");
        let m = Mutex::with_dynamic_key(0, &key, "moved lock");
        let instance = std::ptr::from_ref(m.lock_map().unwrap()).addr();
        let g = m.lock();
        std::thread::scope(|s| s.spawn(move || drop(g)).join().unwrap());
        // No lock operation on this thread since: its record still has the entry, with the
        // release waiting in its mailbox.
        std::thread::scope(|s| {
            s.spawn(|| {
                let d = lockdep::all_held_locks();
                assert!(d.holders_of(instance).is_empty(), "{d}");
            })
            .join()
            .unwrap();
        });
        drop(m);
        std::thread::scope(|s| s.spawn(|| key.unregister()).join().unwrap());
        assert_reports!();
        assert_eq!(lockdep::held_count(), 0);
    }

    /// Of two guards of one rwlock held in two modes, the one dropped on another thread takes
    /// its own entry off the acquiring thread's stack (the mail names its mode): the
    /// upgradable read stays, so a read under it and its upgrade are silent. Before, the
    /// topmost entry went and the read's was left: a false recursive locking, then a false
    /// "wrong mode" at the upgrade.
    #[test]
    fn a_guard_released_elsewhere_takes_its_own_entry_of_a_lock_held_twice() {
        let _h = start();
        let rw = instrumented_locks::RwLock::named(0, "MOVED RW");
        let r = rw.read();
        let at = line!() + 1;
        let u = rw.upgradable_read();
        assert_eq!(
            super::common::take().len(),
            1,
            "an upgradable read under a read is reported"
        );
        std::thread::scope(|s| s.spawn(move || drop(r)).join().unwrap());
        drop(rw.read());
        let held: Vec<_> = lockdep::held_locks()
            .iter()
            .map(|l| (l.name, l.mode, l.site.line()))
            .collect();
        assert_eq!(held, [(Some("MOVED RW"), lockdep::Mode::Upgradable, at)]);
        drop(instrumented_locks::RwLockUpgradableReadGuard::upgrade(u));
        assert_reports!();
        assert_eq!(lockdep::held_count(), 0);
    }

    /// This thread's held entries: (name, mode, acquiring line), bottom first, after a lock
    /// operation (which applies what other threads posted).
    fn held_after_mail() -> Vec<(Option<&'static str>, lockdep::Mode, u32)> {
        drop(Mutex::named(0, "NUDGE").lock());
        super::common::held_entries()
    }

    /// A guard downgraded on another thread: the acquiring thread's entry, the guard's own,
    /// changes mode (by mail) rather than staying exclusive; of a read and an upgradable read
    /// of one lock, the downgraded upgradable read's entry becomes a read, and the other read
    /// stays.
    #[test]
    fn a_guard_downgraded_on_another_thread_changes_its_own_entry_at_home() {
        use instrumented_locks::{RwLockUpgradableReadGuard, RwLockWriteGuard};
        use lockdep::Mode::{Read, Upgradable};
        let _h = start();
        let rw = RwLock::named(0, "DOWN");
        let at = line!() + 1;
        let w = rw.write();
        std::thread::scope(|s| {
            s.spawn(move || drop(RwLockWriteGuard::downgrade(w)));
        });
        // The guard is gone: nothing held.
        assert!(held_after_mail().iter().all(|e| e.0 != Some("DOWN")));
        let w = rw.write();
        let r = std::thread::scope(|s| {
            s.spawn(move || RwLockWriteGuard::downgrade(w))
                .join()
                .unwrap()
        });
        assert_eq!(held_after_mail(), [(Some("DOWN"), Read, at + 6)]);
        // Held as a read, so a recursive read under it is silent.
        drop(rw.read_recursive());
        drop(r);
        assert_reports!();
        // A read and an upgradable read; the upgradable one goes to another thread and is
        // downgraded there.
        let g = rw.read();
        let u = rw.upgradable_read();
        super::common::take();
        let r2 = std::thread::scope(|s| {
            s.spawn(move || RwLockUpgradableReadGuard::downgrade(u))
                .join()
                .unwrap()
        });
        let held = held_after_mail();
        assert_eq!(
            held.iter().map(|e| e.1).collect::<Vec<_>>(),
            [Read, Read],
            "{held:?}"
        );
        assert!(!held.iter().any(|e| e.1 == Upgradable));
        drop((g, r2));
        assert_eq!(lockdep::held_count(), 0);
    }

    /// A guard upgraded on another thread waits there: the upgrade is validated against that
    /// thread's held locks, and the acquiring thread holds the entry exclusively afterwards.
    #[test]
    fn a_guard_upgraded_on_another_thread_is_validated_there() {
        use instrumented_locks::RwLockUpgradableReadGuard;
        let _h = start();
        let rw = RwLock::named(0, "UP");
        let m = Mutex::named(0, "UP-M");
        let u = rw.upgradable_read();
        let w = std::thread::scope(|s| {
            s.spawn(|| {
                let _g = m.lock();
                RwLockUpgradableReadGuard::upgrade(u)
            })
            .join()
            .unwrap()
        });
        // Recorded there: M -> RW (the upgrade, a read's dependency). No report yet.
        assert_reports!();
        assert_eq!(
            held_after_mail()
                .iter()
                .find(|e| e.0 == Some("UP"))
                .map(|e| e.1),
            Some(lockdep::Mode::Exclusive)
        );
        drop(w);
        // A reader of RW that takes M: the upgrade waited for such a reader while holding M.
        drop((rw.read(), m.lock()));
        assert_eq!(
            super::common::one_cycle(&super::common::take()),
            ["UP", "UP-M", "UP"]
        );
    }
}
