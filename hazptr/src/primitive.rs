//! The crate's one edge to the loom model checker: the atomics, fences, locks, cells,
//! thread-locals and OS barriers the algorithm uses, from `std` (and the kernel) normally
//! and from `loom` under `cfg(hazptr_loom)`, so that every other module is the same code in
//! both builds (the crossbeam-epoch pattern). No other module names the cfg.
//!
//! Only the algorithm's own synchronization goes through here; statistics counters and
//! configuration flags carry no ordering and use `std` directly.
//!
//! Build the loom models with `RUSTFLAGS="--cfg hazptr_loom"` and `--features loom` (a
//! namespaced cfg, so that building this crate for loom does not switch other crates of the
//! dependency graph into their own loom builds; an optional dependency, so that loom is in no
//! user's dependency graph).

/// Whether this is the loom build. Code that behaves differently under the model checker
/// (time does not exist there; fault injection is compiled in) tests this constant, which
/// the compiler folds, instead of carrying a `#[cfg]` of its own.
pub(crate) const MODEL_CHECKED: bool = cfg!(hazptr_loom);

#[cfg(hazptr_loom)]
pub use loom::sync::atomic::AtomicPtr;
#[cfg(hazptr_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicUsize};
#[cfg(hazptr_loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(hazptr_loom)]
pub(crate) use loom::thread_local;

#[cfg(not(hazptr_loom))]
pub use std::sync::atomic::AtomicPtr;
#[cfg(not(hazptr_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicUsize};
#[cfg(not(hazptr_loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(hazptr_loom))]
pub(crate) use std::thread_local;

/// A cell whose accesses loom checks for data races (loom's `UnsafeCell`); normally a
/// thin wrapper over `std::cell::UnsafeCell` with the same closure-based API.
#[cfg(hazptr_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// See the loom build's `UnsafeCell`: the same API over `std::cell::UnsafeCell`.
#[cfg(not(hazptr_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(hazptr_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a shared raw pointer to the value. The caller's protocol must rule out
    /// a concurrent `with_mut`.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a unique raw pointer to the value. The caller's protocol must rule out
    /// any concurrent access.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// One step of a busy-wait. Under loom this yields to the model's scheduler, which a
/// spin loop must do for loom to explore the other threads.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(hazptr_loom)]
    loom::thread::yield_now();
    #[cfg(not(hazptr_loom))]
    core::hint::spin_loop();
}

/// Offer the CPU to another runnable thread (`sched_yield`); under loom, a yield to the
/// model's scheduler.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(hazptr_loom)]
    loom::thread::yield_now();
    #[cfg(not(hazptr_loom))]
    std::thread::yield_now();
}

/// Whether the current thread unwinds out of a loom model. A failing model tears its
/// threads down while unwinding, outside the model, where loom objects cannot be touched;
/// destructors then skip their bookkeeping (everything is garbage then anyway). Always
/// false outside the loom build.
#[inline]
pub(crate) fn unwinding_out_of_model() -> bool {
    MODEL_CHECKED && std::thread::panicking()
}

/// A per-thread cache of the two last-inserted `(domain id, record address)` pairs for the
/// reader fast path: a `const`, destructor-free thread-local, so reading it is
/// `%fs`-relative loads and never fails, even during thread-local destruction. Two entries,
/// so that a thread that alternates between two domains (a program's own domain and the one
/// a library uses inside the same loop, as a lock validator's key lookups) stays on the fast
/// path; with one entry every alternation took the slow path's `RefCell` and search. Under
/// loom, where model threads do not get their own `std` thread-locals, the cache is always
/// empty and every lookup takes the slow path through the (loom) thread-local.
pub(crate) mod record_cache {
    // Empty entries are `(0, 0)` (domain ids start at 1).
    #[cfg(not(hazptr_loom))]
    std::thread_local! {
        static LAST: std::cell::Cell<[(u64, usize); 2]> =
            const { std::cell::Cell::new([(0, 0); 2]) };
    }

    /// The cached record address of domain `domain_id`, if it is one of the two entries.
    #[inline(always)]
    pub(crate) fn find(domain_id: u64) -> Option<usize> {
        #[cfg(not(hazptr_loom))]
        return LAST.with(|c| {
            let [a, b] = c.get();
            if a.0 == domain_id {
                Some(a.1)
            } else if b.0 == domain_id {
                Some(b.1)
            } else {
                None
            }
        });
        #[cfg(hazptr_loom)]
        {
            let _ = domain_id;
            None
        }
    }

    /// Makes `entry` the newer of the two entries; the older one goes (unless it is `entry`'s
    /// own domain's). Only the slow path calls it: a hit does not reorder.
    #[inline]
    pub(crate) fn set(entry: (u64, usize)) {
        #[cfg(not(hazptr_loom))]
        LAST.with(|c| {
            let [a, b] = c.get();
            let keep = if a.0 == entry.0 { b } else { a };
            c.set([entry, keep]);
        });
        #[cfg(hazptr_loom)]
        let _ = entry;
    }

    /// Empties the cache.
    #[inline]
    pub(crate) fn clear() {
        #[cfg(not(hazptr_loom))]
        LAST.with(|c| c.set([(0, 0); 2]));
    }
}

/// `membarrier(2)` through `libc::syscall`: a full barrier on every CPU that runs a thread
/// of this process. Never used under loom, where the Rust memory model has no name for it:
/// `register` then fails and every domain falls back to `FenceMode::Symmetric`.
#[cfg(all(target_os = "linux", not(hazptr_loom)))]
pub(crate) mod membarrier {
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn call(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) integers and touches no user memory.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Queries support and registers the process for private expedited barriers.
    pub(crate) fn register() -> bool {
        let supported = call(CMD_QUERY);
        supported >= 0
            && supported & CMD_PRIVATE_EXPEDITED != 0
            && call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// Issues one private expedited barrier; false if the kernel refused.
    pub(crate) fn private_expedited() -> bool {
        call(CMD_PRIVATE_EXPEDITED) == 0
    }
}

/// No `membarrier` here (not Linux, or the loom build): registration fails, so no domain
/// is ever `Asymmetric` and `private_expedited` is never called.
#[cfg(not(all(target_os = "linux", not(hazptr_loom))))]
pub(crate) mod membarrier {
    pub(crate) fn register() -> bool {
        false
    }

    pub(crate) fn private_expedited() -> bool {
        false
    }
}
