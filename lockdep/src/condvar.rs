//! Condvar dependency tracking, an opt-in mode: a condvar's wait and notify as dependencies
//! through a pseudo-lock class, so that "a thread waits while holding L, and the thread that
//! would notify it must first take L" is found without the deadlock happening.
//!
//! Off by default, because a wait does not always need the notifier it is recorded with (any
//! other notifier, a timeout or a spurious wakeup may end it); the kernel's attempt to track
//! such waits in general (cross-release) was removed after false positives. Turn it on with
//! [`set_condvar_tracking`] where every wait on a condvar needs a notification that comes
//! under the same locks.

use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::held::record::CondvarId;
use crate::held::Find;
use crate::map::LockMap;
use crate::mode::Mode;
use crate::thread;
use crate::validate;

static TRACKING: AtomicBool = AtomicBool::new(false);

/// Turns condvar dependency tracking on or off (default off) and returns the previous setting.
/// Thread-safe; takes effect for waits and notifications made after the call. Off,
/// [`condvar_wait`] and [`condvar_notify`] do nothing.
pub fn set_condvar_tracking(on: bool) -> bool {
    // Relaxed: an independent setting.
    TRACKING.swap(on, Ordering::Relaxed)
}

fn tracking() -> bool {
    // Relaxed: an independent setting.
    TRACKING.load(Ordering::Relaxed)
}

/// The validator's view of one condition variable: a pseudo-lock whose class is the condvar's
/// construction site (reading as `Condvar@file:line`, or its name). Embed one in a condvar
/// wrapper and call [`condvar_wait`] and [`condvar_notify`]. `const`; `Send + Sync`.
#[derive(Debug)]
pub struct CondvarMap {
    map: LockMap,
}

impl CondvarMap {
    /// An unnamed condvar map; its class is the caller's location.
    #[track_caller]
    pub const fn new() -> CondvarMap {
        CondvarMap {
            map: LockMap::of_kind("Condvar"),
        }
    }

    /// A named condvar map; its class is the caller's location.
    #[track_caller]
    pub const fn named(name: &'static str) -> CondvarMap {
        CondvarMap {
            map: LockMap::new(name),
        }
    }

    /// The pseudo-lock's map.
    pub fn map(&self) -> &LockMap {
        &self.map
    }

    /// Where the condvar was made (its class's site), if its class is one of a site.
    pub fn site(&self) -> Option<&'static Location<'static>> {
        self.map.key().site()
    }
}

impl Default for CondvarMap {
    #[track_caller]
    fn default() -> Self {
        CondvarMap::new()
    }
}

/// A condvar wait is about to block (call it after the wait released its mutex with
/// [`release`](crate::release), before blocking; `site` is the user's `wait` call). With
/// tracking on, records that every lock this thread still holds is held while it waits for
/// `cv`: the dependency `held -> cv` (e.g. `S -(SN)-> cv` for a plain read of S), with the
/// cycle check of an acquisition. Off: nothing.
pub fn condvar_wait(cv: &CondvarMap, site: &'static Location<'static>) {
    if tracking() {
        validate::acquire(&cv.map, 0, Mode::Exclusive, false, None, site);
        let found = thread::release(Find::any(cv.map.instance()));
        if found != thread::Release::Released {
            validate::release_slow(&cv.map, found, site);
        }
    }
}

/// A thread notifies `cv` (`notify_one`, `notify_all`; `site` is the user's call). With
/// tracking on, records that the event a waiter of `cv` waits for comes only after this thread
/// took every lock it holds now: the dependencies `cv -> held`, in the modes they are held
/// (`cv -(EN)-> S` for a plain read of S, `cv -(ER)-> S` for a recursive one), each with the
/// cycle check. So "wait holding S" plus "notify after taking S" is reported as the cycle
/// `S -> cv -> S` when S is taken in a mode the waiter's hold blocks. Off: nothing.
pub fn condvar_notify(cv: &CondvarMap, site: &'static Location<'static>) {
    if tracking() {
        validate::depend_on_held(&cv.map, site);
    }
}

/// A condvar wait is about to sleep: call it after the wait released `mutex` ([`release`])
/// and validated its re-acquisition ([`acquire`], not trylock), just before the thread parks;
/// `condvar` is the wait's condvar (the dump names it). Until [`condvar_woken`] (the thread owns the
/// mutex again) or [`lock_contended`] (its re-lock must wait), other threads see the re-lock's
/// entry as *not held*: the dump ([`all_held_locks`]) shows the thread sleeping on the condvar
/// ([`ThreadLocks::condvar`]), the watchdog and [`deadlocks_now`] neither count it as the
/// mutex's holder nor judge its sleep (it waits for a notification). The cross-thread checks
/// still see the entry: the wait's guard lives on and re-locks the mutex, so a key
/// unregistered or a lock freed meanwhile is reported.
///
/// Independent of condvar tracking ([`set_condvar_tracking`]). Cost: one write section of the
/// thread's shared record; nothing if the thread has none. Thread-safe (it concerns the
/// calling thread only).
///
/// [`release`]: crate::release
/// [`acquire`]: crate::acquire
/// [`lock_contended`]: crate::lock_contended
/// [`all_held_locks`]: crate::all_held_locks
/// [`ThreadLocks::condvar`]: crate::ThreadLocks::condvar
/// [`deadlocks_now`]: crate::deadlocks_now
pub fn condvar_sleep(mutex: &LockMap, condvar: &CondvarMap) {
    let id = CondvarId {
        addr: std::ptr::from_ref(condvar).addr(),
        name: condvar.map.name(),
        site: condvar.site(),
    };
    // SAFETY: used only here; the record's write section makes no call that can reach the
    // state.
    if let Some(r) = unsafe { thread::state_fast() }.and_then(|st| st.plain_record()) {
        r.condvar_sleep(mutex.instance(), id);
        return;
    }
    thread::with_state(|st| {
        if let Some(r) = st.record() {
            r.condvar_sleep(mutex.instance(), id);
        }
    });
}

/// The sleep [`condvar_sleep`] announced is over and the thread owns `mutex` again (its
/// re-lock did not wait; a re-lock that waited is announced with [`lock_contended`] and
/// [`lock_acquired`] instead, which end the sleep too). Returns whether the thread still has
/// its entry of `mutex`: `false` if another thread's check took it off meanwhile (the lock
/// was reported freed, [`check_held_lock_freed`]); the wait's guard then must not release
/// it. Thread-safe (the calling thread only).
///
/// [`lock_contended`]: crate::lock_contended
/// [`lock_acquired`]: crate::lock_acquired
/// [`check_held_lock_freed`]: crate::check_held_lock_freed
pub fn condvar_woken(mutex: &LockMap) -> bool {
    if crate::lock_stat::on() {
        crate::lock_stat::hold_restarts(mutex);
    }
    // No borrow of the state when no mail waits (mail may take the entry off: then the
    // borrow's `settle` applies it first).
    // SAFETY: used only here; `wait_done` and `find` make no call that can reach the state.
    if let Some(st) = unsafe { thread::state_fast() } {
        if let Some(r) = st.plain_record() {
            r.wait_done();
            return st.find(mutex.instance()).is_some();
        }
    }
    thread::with_state(|st| {
        if let Some(r) = st.record() {
            r.wait_done();
        }
        st.find(mutex.instance()).is_some()
    })
    .unwrap_or(true)
}
