//! The moment a thread is gone: after every thread-local destructor of a thread that ends,
//! and never for the thread that ends the *process* with `exit()`.
//!
//! The held-at-exit report waits for that moment. A thread's thread-local destructors run in
//! two cases: the thread ends (its start routine returned, or it called `pthread_exit`), or it
//! called `exit()` (glibc's `exit` runs the calling thread's thread-local destructors before
//! the `atexit` handlers). Only the first is a thread exiting with locks held; the second ends
//! the whole program, and nothing can wait for those locks any more (sled's crash tests call
//! `std::process::exit` from whatever thread, under its own locks). The two cannot be told
//! apart inside a thread-local destructor, but POSIX thread-specific data tells them: its
//! destructors (`pthread_key_create`) run when a thread ends, after the thread-local ones,
//! and `exit()` runs none. So the exit check, when locks are still held, sets this module's
//! key for the thread, and the key's destructor reports what is held then. A lock released
//! by a later thread-local destructor (a guard stashed in a thread-local) is not reported.
//!
//! Without a key (not Unix, or `pthread_key_create` failed: the process has used up its
//! keys), the exit check reports at once, as it did before.

/// Arranges for [`report_held_at_end`](super::report_held_at_end) to run when the
/// calling thread ends (not if it calls `exit()`); false if that cannot be arranged, and the
/// caller reports now.
#[cfg(unix)]
pub(super) fn defer_report() -> bool {
    let Some(key) = key::get() else {
        return false;
    };
    // Any non-null value: the destructor only needs to run, and never reads it.
    // SAFETY: `key` was made by `pthread_key_create` and is never deleted (only a losing
    // duplicate is, before anyone sees it); the value is never dereferenced.
    unsafe {
        libc::pthread_setspecific(key, std::ptr::NonNull::<u8>::dangling().as_ptr().cast()) == 0
    }
}

/// Not Unix: no thread-specific data here, so the exit check reports at once.
#[cfg(not(unix))]
pub(super) fn defer_report() -> bool {
    false
}

#[cfg(unix)]
mod key {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The key, plus [`MADE`], once made; [`FAILED`] if it cannot be; 0 before. Made without
    /// a lock or a `Once` (two threads may both make one; the loser deletes its own), so that
    /// a `fork()` in the middle leaves nothing half-made in the child.
    static KEY: AtomicU64 = AtomicU64::new(0);
    const MADE: u64 = 1 << 32;
    const FAILED: u64 = 1 << 33;

    /// The key, made on the first call.
    pub(super) fn get() -> Option<libc::pthread_key_t> {
        // Acquire: pairs with the Release below; the key is a plain number, but the caller
        // uses it with the C library, which must see it made.
        match KEY.load(Ordering::Acquire) {
            0 => make(),
            FAILED => None,
            v => Some((v & !MADE) as libc::pthread_key_t),
        }
    }

    #[cold]
    fn make() -> Option<libc::pthread_key_t> {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is a valid out-pointer; the destructor is an `extern "C" fn` that
        // lives for the whole process.
        let ok = unsafe { libc::pthread_key_create(&mut key, Some(at_thread_end)) } == 0;
        let mine = if ok { u64::from(key) | MADE } else { FAILED };
        // AcqRel on success (publishes the key, see `get`), Acquire on failure (reads the
        // winner's).
        match KEY.compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => ok.then_some(key),
            Err(theirs) => {
                if ok {
                    // SAFETY: our own key, never handed out.
                    unsafe { libc::pthread_key_delete(key) };
                }
                (theirs != FAILED).then_some((theirs & !MADE) as libc::pthread_key_t)
            }
        }
    }

    /// The key's destructor: the thread is ending, all its thread-local destructors ran.
    unsafe extern "C" fn at_thread_end(_value: *mut libc::c_void) {
        // A panic must not unwind into the C library.
        let _ = std::panic::catch_unwind(super::super::report_held_at_end);
    }
}
