//! Guards and threads: `!Send` by the crate's own marker unless `send_guard` is on; with it,
//! a guard dropped on another thread unlocks there with no report on either thread, and the
//! acquiring thread re-locks the lock afterwards without a false "recursive locking". (Until
//! it does, its held stack keeps the entry: see the crate docs' limits.)

mod common;

#[allow(unused_imports)] // each feature set uses its part
use instrumented_locks::{
    MappedMutexGuard, Mutex, MutexGuard, ReentrantMutexGuard, RwLockReadGuard, RwLockWriteGuard,
};
use static_assertions::assert_not_impl_any;

// Re-entrant guards are never `Send`.
assert_not_impl_any!(ReentrantMutexGuard<'static, u8>: Send);

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
}
