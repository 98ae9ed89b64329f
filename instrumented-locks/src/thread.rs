//! [`spawn`] / [`JoinHandle`]: `std::thread` with the join modelled for lockdep.
//!
//! A pure lock-order validator cannot see a thread that joins another while holding a lock
//! the other needs. Lockdep handles the kernel's version (flushing a work item while holding
//! a lock the work takes) with a pseudo-lock: the work runs "inside" a `lockdep_map` and the
//! flush "acquires" it. This module does the same for threads: the spawned body runs inside
//! a [`lockdep::PseudoLock`] (one class per spawn site), and [`JoinHandle::join`] validates
//! an acquisition of it before joining. Holding `A` while joining a thread whose body takes
//! `A` is reported as the cycle `A -> (join) -> A`, whether or not the run deadlocks.
//!
//! Held locks belong to threads: a spawned thread starts with an empty held-lock stack, so
//! the spawner's locks never produce dependencies into the child's acquisitions.

use std::sync::Arc;

use lockdep::PseudoLock;

/// Like [`std::thread::spawn`], with the join tracked (see the module docs). The class of
/// the join pseudo-lock is the caller's location.
///
/// Panics if the OS cannot create a thread (as `std::thread::spawn`).
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let join = Arc::new(PseudoLock::new("thread-join"));
    let body = Arc::clone(&join);
    let inner = std::thread::spawn(move || {
        let _running = crate::is_enabled().then(|| body.enter());
        f()
    });
    JoinHandle { inner, join }
}

/// An owned permission to join a thread started by [`spawn`].
#[derive(Debug)]
pub struct JoinHandle<T> {
    inner: std::thread::JoinHandle<T>,
    join: Arc<PseudoLock>,
}

impl<T> JoinHandle<T> {
    /// Validates the join against the locks this thread holds (reported before it can
    /// block), then waits for the thread like `std::thread::JoinHandle::join`.
    #[track_caller]
    pub fn join(self) -> std::thread::Result<T> {
        if crate::is_enabled() {
            self.join.wait();
        }
        self.inner.join()
    }

    /// The thread's handle.
    pub fn thread(&self) -> &std::thread::Thread {
        self.inner.thread()
    }

    /// Whether the thread's body has returned.
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
}
