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
//!   `hpref` and seize. The Rust memory model has no name for it, so the loom build never
//!   uses it (registration fails there, see `primitive::membarrier`).

use std::sync::atomic::{compiler_fence, Ordering};

use crate::primitive::{fence, membarrier};

/// Where the store-buffering fence lives. Chosen per [`crate::Domain`] at creation and fixed
/// for the domain's lifetime, before any reader of that domain can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FenceMode {
    /// `fence(SeqCst)` on both the reader and the synchronizer (the default).
    Symmetric,
    /// Compiler fence on the reader, `membarrier(PRIVATE_EXPEDITED)` on the synchronizer.
    /// Falls back to [`FenceMode::Symmetric`] where the kernel lacks it (non-Linux,
    /// seccomp, old kernels) and always in the loom build.
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
        // SeqCst fence: pairs with the synchronizer's SeqCst fence in
        // `Domain::heavy_barrier` (store buffering).
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
pub(crate) fn membarrier_expedited() {
    assert!(
        membarrier::private_expedited(),
        "hazptr: membarrier(PRIVATE_EXPEDITED) failed after registration"
    );
}
