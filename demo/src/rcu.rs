//! liburcu's memb flavour (`urcu-memb`): the userspace analogue of expedited RCU. Readers
//! mark a per-thread counter; `synchronize_rcu` issues `membarrier(PRIVATE_EXPEDITED)`
//! (IPIs to CPUs running the process's threads) and waits for every reader section.
//!
//! Compiled only with the `rcu` feature, which links the system's `liburcu-memb`
//! (`apt-get install liburcu-dev`). Without it, [`AVAILABLE`] is false and every function
//! here panics; callers check first.

/// Is liburcu linked into this binary?
pub const AVAILABLE: bool = cfg!(feature = "rcu");

#[cfg(feature = "rcu")]
mod ffi {
    extern "C" {
        pub fn urcu_memb_read_lock();
        pub fn urcu_memb_read_unlock();
        pub fn urcu_memb_synchronize_rcu();
        pub fn urcu_memb_register_thread();
        pub fn urcu_memb_unregister_thread();
    }
}

/// This thread's registration with liburcu; unregisters when the thread exits.
#[cfg(feature = "rcu")]
struct Registration;

#[cfg(feature = "rcu")]
impl Registration {
    fn new() -> Registration {
        // SAFETY: registering the calling thread once (this thread-local is created once per
        // thread); liburcu requires it before the first read-side lock.
        unsafe { ffi::urcu_memb_register_thread() };
        Registration
    }
}

#[cfg(feature = "rcu")]
impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: the thread registered in `new` and is not inside a read section (sections
        // are always closed by `read_unlock` before the thread can exit).
        unsafe { ffi::urcu_memb_unregister_thread() };
    }
}

#[cfg(feature = "rcu")]
thread_local! {
    static REGISTRATION: Registration = Registration::new();
}

/// Enters a read-side critical section (registers the thread on first use). Returns false,
/// entering nothing, when the thread's registration is no longer available (the thread is
/// exiting and its thread-locals are being destroyed).
pub fn read_lock() -> bool {
    #[cfg(feature = "rcu")]
    {
        if REGISTRATION.try_with(|_| ()).is_err() {
            return false;
        }
        // SAFETY: the thread is registered (thread-local above) and liburcu allows nesting.
        unsafe { ffi::urcu_memb_read_lock() };
        true
    }
    #[cfg(not(feature = "rcu"))]
    panic!("demo built without the `rcu` feature")
}

/// Registers the calling thread with liburcu now (otherwise the first [`read_lock`] does).
/// A grace period with no registered thread returns at once, so benchmarks register their
/// synchronizing threads too, as liburcu users usually do.
pub fn register_thread() {
    #[cfg(feature = "rcu")]
    REGISTRATION.with(|_| ());
    #[cfg(not(feature = "rcu"))]
    panic!("demo built without the `rcu` feature")
}

/// Leaves the read-side critical section entered by [`read_lock`] (which returned true).
pub fn read_unlock() {
    #[cfg(feature = "rcu")]
    // SAFETY: pairs with a `read_lock` on this thread that entered a section.
    unsafe {
        ffi::urcu_memb_read_unlock()
    };
    #[cfg(not(feature = "rcu"))]
    panic!("demo built without the `rcu` feature")
}

/// Waits for a grace period: every read section in progress when the call began has ended.
/// Must not be called inside a read section.
pub fn synchronize_rcu() {
    #[cfg(feature = "rcu")]
    // SAFETY: callers never hold a read section here (documented precondition).
    unsafe {
        ffi::urcu_memb_synchronize_rcu()
    };
    #[cfg(not(feature = "rcu"))]
    panic!("demo built without the `rcu` feature")
}

/// liburcu as a [`lockdep::KeySyncStrategy`]: one read section per bucket walk, one
/// (global) grace period per unregister. A thread whose liburcu registration is already gone
/// (lookups during thread exit) falls back to a reader lock, which `synchronize` also waits
/// for.
pub struct Rcu {
    fallback: parking_lot::RwLock<()>,
}

impl Rcu {
    /// The strategy; check [`AVAILABLE`] first.
    pub fn new() -> Rcu {
        if !AVAILABLE {
            panic!("demo built without the `rcu` feature");
        }
        Rcu {
            fallback: parking_lot::RwLock::new(()),
        }
    }
}

impl Default for Rcu {
    fn default() -> Self {
        Rcu::new()
    }
}

const TOKEN_RCU: usize = 0;
const TOKEN_FALLBACK: usize = 1;

impl lockdep::KeySyncStrategy for Rcu {
    fn read_enter(&self, _bucket: usize) -> usize {
        if read_lock() {
            TOKEN_RCU
        } else {
            // Held until read_exit on this thread.
            std::mem::forget(self.fallback.read());
            TOKEN_FALLBACK
        }
    }

    fn read_exit(&self, token: usize) {
        if token == TOKEN_RCU {
            read_unlock();
        } else {
            // SAFETY: read_enter forgot a read guard of `fallback` on this thread.
            unsafe { self.fallback.force_unlock_read() };
        }
    }

    fn synchronize(&self, _bucket: usize) {
        synchronize_rcu();
        drop(self.fallback.write());
    }

    fn synchronize_all(&self) {
        self.synchronize(0);
    }
}

#[cfg(all(test, feature = "rcu"))]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Barrier;

    /// A grace period waits for a reader that entered before it: the reader sets `done`
    /// inside its section, so `synchronize_rcu` returning means `done` is visible.
    #[test]
    fn synchronize_waits_for_a_reader() {
        let entered = Barrier::new(2);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(super::read_lock());
                entered.wait();
                // Keeps the section open long enough for the test to mean something.
                std::thread::sleep(std::time::Duration::from_millis(50));
                // Relaxed: the grace period orders it (the property under test).
                done.store(true, Ordering::Relaxed);
                super::read_unlock();
            });
            entered.wait();
            super::synchronize_rcu();
            // Relaxed: ordered by the grace period.
            assert!(done.load(Ordering::Relaxed));
        });
    }
}
