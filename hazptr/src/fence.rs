//! Fence modes: who pays for the store-buffering fence, the reader or the synchronizer.
//!
//! Hazard pointers need a full fence between a reader's slot store and its load of the
//! protected pointer, paired with a full fence between the synchronizer's unpublish and its
//! scan (the store-buffering pattern; see the crate docs). Two ways to place it:
//!
//! * [`FenceMode::Symmetric`]: both sides issue `fence(SeqCst)`. No IPIs, works everywhere,
//!   and loom can check it.
//! * [`FenceMode::Asymmetric`]: the reader issues only a compiler fence, and the
//!   synchronizer calls `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every
//!   running thread of the process execute a full barrier (an IPI to each CPU running one of
//!   our threads). This is the scheme of folly's `asymmetric_thread_fence_heavy`, liburcu's
//!   `hpref` and seize; the Rust memory model has no name for it, so it is never used under
//!   `cfg(loom)`.

use std::sync::atomic::{compiler_fence, Ordering};

use crate::primitive::fence;

/// Where the store-buffering fence lives. Chosen per [`crate::Domain`] at creation and fixed
/// for the domain's lifetime, before any reader of that domain can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FenceMode {
    /// `fence(SeqCst)` on both the reader and the synchronizer (the default).
    Symmetric,
    /// Compiler fence on the reader, `membarrier(PRIVATE_EXPEDITED)` on the synchronizer.
    /// Falls back to [`FenceMode::Symmetric`] where the kernel lacks it (non-Linux,
    /// seccomp, old kernels) and always under `cfg(loom)`.
    Asymmetric,
}

/// Resolves the requested mode to the one this process can run: registers for
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` when `Asymmetric` is asked for and supported.
/// Registration is per process and idempotent, so calling it for each domain is harmless.
pub(crate) fn resolve(requested: FenceMode) -> FenceMode {
    match requested {
        FenceMode::Symmetric => FenceMode::Symmetric,
        FenceMode::Asymmetric if membarrier::register() => FenceMode::Asymmetric,
        FenceMode::Asymmetric => FenceMode::Symmetric,
    }
}

/// The reader's half of the store-buffering pair: orders the slot store before the load of
/// the protected pointer (and before the accesses of the read-side critical section).
#[inline(always)]
pub(crate) fn light(mode: FenceMode) {
    match mode {
        // SeqCst fence: pairs with the synchronizer's SeqCst fence in `heavy` (SB pattern).
        FenceMode::Symmetric => fence(Ordering::SeqCst),
        // Compiler-only fence: the synchronizer's membarrier upgrades it to a full barrier on
        // whichever CPU runs this thread (or we were not running, which orders us too).
        FenceMode::Asymmetric => compiler_fence(Ordering::SeqCst),
    }
}

/// Issues one `membarrier(PRIVATE_EXPEDITED)` for a domain in `Asymmetric` mode.
///
/// # Panics
/// If the kernel refuses after a successful registration (it cannot, short of a kernel
/// bug): a SeqCst fence alone would not pair with the readers' compiler fences, so
/// carrying on would be unsound.
pub(crate) fn membarrier() {
    assert!(
        membarrier::private_expedited(),
        "hazptr: membarrier(PRIVATE_EXPEDITED) failed after registration"
    );
}

#[cfg(all(target_os = "linux", not(loom)))]
mod membarrier {
    //! `membarrier(2)` through `libc::syscall` (the `membarrier` crate does not link with a
    //! current toolchain; see `shared/reference/hazptr-anchors.md` §0).

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
    pub(super) fn register() -> bool {
        let supported = call(CMD_QUERY);
        supported >= 0
            && supported & CMD_PRIVATE_EXPEDITED != 0
            && call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// Issues one private expedited barrier; false if the kernel refused.
    pub(super) fn private_expedited() -> bool {
        call(CMD_PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(not(all(target_os = "linux", not(loom))))]
mod membarrier {
    pub(super) fn register() -> bool {
        false
    }
    pub(super) fn private_expedited() -> bool {
        false
    }
}
