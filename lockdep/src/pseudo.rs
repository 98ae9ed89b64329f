//! Pseudo-locks: a wait that is not a lock (a condvar wait, a thread join, a flush) modelled
//! as one, like the kernel's `lockdep_map`-only locks (`lock_map_acquire()` /
//! `lock_map_release()`, `might_lock()`).

use std::marker::PhantomData;
use std::panic::Location;

use crate::keys::LockClassKey;
use crate::map::LockMap;
use crate::mode::Mode;

/// A lock that exists only for the validator: a wait that is not a lock (a condvar wait, a
/// thread join, a flush, a channel receive) modelled as one, like the kernel's
/// `lockdep_map`-only pseudo-locks (`lock_map_acquire()`, e.g. `(wq_completion)`).
///
/// The side that *does the work* runs inside [`enter`](Self::enter); the side that *waits for
/// it* calls [`wait`](Self::wait). Holding lock A while waiting, when the work takes A, is
/// then reported as the cycle A → pseudo → A.
///
/// `Send + Sync`; its guards are `!Send` (a held lock belongs to a thread).
///
/// ```
/// let join = lockdep::PseudoLock::new("worker-join");
/// {
///     let _work = join.enter(); // in the worker, around its body
/// }
/// join.wait(); // in the joiner, before it blocks on join()
/// ```
#[derive(Debug)]
pub struct PseudoLock {
    map: LockMap,
}

impl PseudoLock {
    /// A pseudo-lock whose class is the caller's location.
    #[track_caller]
    pub fn new(name: &'static str) -> PseudoLock {
        PseudoLock {
            map: LockMap::new(name),
        }
    }

    /// A pseudo-lock whose class is a static key.
    pub fn with_key(name: &'static str, key: &'static LockClassKey) -> PseudoLock {
        PseudoLock {
            map: LockMap::with_key(name, key),
        }
    }

    /// The underlying map (to pass to [`crate::acquire`] or the assertions).
    pub fn map(&self) -> &LockMap {
        &self.map
    }

    /// Holds the pseudo-lock exclusively until the guard drops.
    #[track_caller]
    pub fn enter(&self) -> PseudoGuard<'_> {
        self.enter_as(Mode::Exclusive, Location::caller())
    }

    /// Holds the pseudo-lock as a recursive reader until the guard drops (for work that may
    /// run nested in itself, like the kernel's `lock_map_acquire_read()`).
    #[track_caller]
    pub fn enter_read(&self) -> PseudoGuard<'_> {
        self.enter_as(Mode::RecursiveRead, Location::caller())
    }

    fn enter_as(&self, mode: Mode, site: &'static Location<'static>) -> PseudoGuard<'_> {
        crate::acquire(&self.map, 0, mode, false, None, site);
        PseudoGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// Validates an acquire of the pseudo-lock and releases it at once (kernel: the
    /// `lock_map_acquire(); lock_map_release();` pair in `flush_work()`).
    #[track_caller]
    pub fn wait(&self) {
        crate::might_lock(&self.map, 0, Mode::Exclusive, Location::caller());
    }
}

/// Holds a [`PseudoLock`]; releases it on drop. `!Send`: held locks belong to a thread.
#[derive(Debug)]
pub struct PseudoGuard<'a> {
    lock: &'a PseudoLock,
    _not_send: PhantomData<*const ()>,
}

impl Drop for PseudoGuard<'_> {
    fn drop(&mut self) {
        crate::release_guard(&self.lock.map);
    }
}
