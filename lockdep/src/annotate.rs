//! Annotations: held-lock assertions and queries, pinning, and pseudo-locks.
//!
//! Kernel counterparts: `lockdep_assert_held*()`, `lockdep_assert_not_held()`,
//! `lockdep_assert_none_held_once()`, `lock_is_held_type()`, `lockdep_pin_lock()`,
//! `might_lock()` and the `lock_map_acquire()` / `lock_map_release()` pseudo-locks.

use std::marker::PhantomData;
use std::panic::Location;

use crate::describe::{held_descs, thread_desc};
use crate::held::with_state;
use crate::map::LockMap;
use crate::policy;
use crate::report::{AssertKind, LockDesc, Report};
use crate::types::Mode;

fn fail(kind: AssertKind, lock: &str, site: &'static Location<'static>) {
    let r = with_state(|st| Report::AssertionFailed {
        thread: thread_desc(st),
        kind,
        lock: lock.to_owned(),
        site,
        held: held_descs(st),
    });
    if let Some(r) = r {
        policy::deliver(vec![r]);
    }
}

/// True if this thread holds `map` (in any mode). Thread-local, no lock taken.
pub fn is_held(map: &LockMap) -> bool {
    with_state(|st| st.find(map.instance()).is_some()).unwrap_or(false)
}

/// The number of locks this thread holds, pseudo-locks and unvalidated locks included (the
/// same entries [`held_locks`] lists and [`is_held`] searches). Thread-local, no lock taken.
pub fn held_count() -> usize {
    with_state(|st| st.held.len()).unwrap_or(0)
}

/// This thread's held locks, bottom first. Takes the graph lock briefly for class names.
pub fn held_locks() -> Vec<LockDesc> {
    with_state(|st| held_descs(st)).unwrap_or_default()
}

/// Reports [`AssertKind::NotHeld`] unless this thread holds `map`
/// (kernel: `lockdep_assert_held()`).
#[track_caller]
pub fn assert_held(map: &LockMap) {
    if !is_held(map) {
        fail(AssertKind::NotHeld, map.name(), Location::caller());
    }
}

/// Like [`assert_held`], and also checks the mode: `Mode::Exclusive` requires a writer, either
/// read mode accepts any reader (kernel: `lockdep_assert_held_write()` / `_read()`).
#[track_caller]
pub fn assert_held_mode(map: &LockMap, mode: Mode) {
    let site = Location::caller();
    match with_state(|st| st.find(map.instance()).map(|i| st.held[i].mode)).flatten() {
        None => fail(AssertKind::NotHeld, map.name(), site),
        Some(m) if m.is_read() != mode.is_read() => fail(AssertKind::WrongMode, map.name(), site),
        Some(_) => {}
    }
}

/// Reports [`AssertKind::Held`] if this thread holds `map`
/// (kernel: `lockdep_assert_not_held()`).
#[track_caller]
pub fn assert_not_held(map: &LockMap) {
    if is_held(map) {
        fail(AssertKind::Held, map.name(), Location::caller());
    }
}

/// Reports [`AssertKind::SomeHeld`] if this thread holds any lock
/// (kernel: `lockdep_assert_none_held_once()`).
#[track_caller]
pub fn assert_none_held() {
    if held_count() != 0 {
        fail(AssertKind::SomeHeld, "", Location::caller());
    }
}

/// Changes the mode of a held lock without releasing it, e.g. a write lock downgraded to a
/// read lock (the kernel's `lock_downgrade()`; parking_lot `RwLockWriteGuard::downgrade`).
/// Later acquisitions see the new mode. Reports [`AssertKind::NotHeld`] if this thread does
/// not hold `map`. No lock taken.
#[track_caller]
pub fn set_held_mode(map: &LockMap, mode: Mode) {
    let ok = with_state(|st| match st.find(map.instance()) {
        Some(i) => {
            st.set_mode(i, mode);
            true
        }
        None => false,
    });
    if ok == Some(false) {
        fail(AssertKind::NotHeld, map.name(), Location::caller());
    }
}

/// Moves a held lock to another subclass of its key without releasing it (the kernel's
/// `lock_set_subclass()`, used when a nesting level changes while a lock stays held, as in
/// the scheduler's `double_lock_balance()`). Later acquisitions depend on the new class.
/// Reports [`AssertKind::NotHeld`] if this thread does not hold `map`; an invalid subclass is
/// reported like on acquire. The graph lock is taken only if the subclass's class is new.
#[track_caller]
pub fn set_held_subclass(map: &LockMap, subclass: u8) {
    let site = Location::caller();
    let class = crate::resolve::resolve_class(map, subclass, site);
    let ok = with_state(|st| match st.find(map.instance()) {
        Some(i) => {
            st.set_class(i, class, subclass);
            true
        }
        None => false,
    });
    if ok == Some(false) {
        fail(AssertKind::NotHeld, map.name(), site);
    }
}

/// Pins a held lock: releasing it before [`unpin`] is reported
/// ([`AssertKind::ReleasedWhilePinned`]); kernel `lockdep_pin_lock()`. Pinning a lock that
/// is not held reports [`AssertKind::NotHeld`].
#[track_caller]
pub fn pin(map: &LockMap) {
    let ok = with_state(|st| match st.find(map.instance()) {
        Some(i) => {
            st.held[i].pin_count += 1;
            st.pins += 1;
            true
        }
        None => false,
    });
    if ok == Some(false) {
        fail(AssertKind::NotHeld, map.name(), Location::caller());
    }
}

/// Undoes one [`pin`]; reports [`AssertKind::BadUnpin`] if the lock is not held or not pinned.
#[track_caller]
pub fn unpin(map: &LockMap) {
    let ok = with_state(|st| match st.find(map.instance()) {
        Some(i) if st.held[i].pin_count > 0 => {
            st.held[i].pin_count -= 1;
            st.pins -= 1;
            true
        }
        _ => false,
    });
    if ok == Some(false) {
        fail(AssertKind::BadUnpin, map.name(), Location::caller());
    }
}

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
    pub fn with_key(name: &'static str, key: &'static crate::LockClassKey) -> PseudoLock {
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
        crate::acquire(
            &self.map,
            0,
            Mode::Exclusive,
            false,
            None,
            Location::caller(),
        );
        PseudoGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// Holds the pseudo-lock as a recursive reader until the guard drops (for work that may
    /// run nested in itself, like the kernel's `lock_map_acquire_read()`).
    #[track_caller]
    pub fn enter_read(&self) -> PseudoGuard<'_> {
        crate::acquire(
            &self.map,
            0,
            Mode::RecursiveRead,
            false,
            None,
            Location::caller(),
        );
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
        crate::release(&self.lock.map, Location::caller());
    }
}

/// A held lock in transit from one thread to another (a guard sent to another thread, an
/// unlock done by a different thread than the lock). Created by [`detach`]; `Send`.
#[must_use = "attach it on the thread that now holds the lock"]
#[derive(Debug)]
pub struct DetachedLock {
    entry: crate::held::HeldLock,
}

/// Removes a held lock from this thread's held stack without a report, so that another
/// thread can [`DetachedLock::attach`] it (for guards that move between threads, which the
/// kernel's per-task model has no counterpart for). Returns `None` and reports
/// [`AssertKind::NotHeld`] if this thread does not hold `map`. No lock taken.
#[track_caller]
pub fn detach(map: &LockMap) -> Option<DetachedLock> {
    let entry = with_state(|st| {
        let i = st.find(map.instance())?;
        Some(st.remove(i))
    })
    .flatten();
    if entry.is_none() {
        fail(AssertKind::NotHeld, map.name(), Location::caller());
    }
    entry.map(|entry| DetachedLock { entry })
}

impl DetachedLock {
    /// Puts the lock on the current thread's held stack. It did not wait for anything on
    /// this thread, so it gets no dependency into it (like a trylock), but later acquisitions
    /// here depend on it, and it must be released here. No lock taken.
    #[track_caller]
    pub fn attach(self) {
        let mut e = self.entry;
        e.trylock = true;
        e.nest_lock = 0;
        e.pin_count = 0;
        e.site = Location::caller();
        with_state(|st| st.push(e));
    }
}
