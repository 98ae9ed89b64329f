//! [`RawThreadId`]: the per-thread id that [`lock_api::ReentrantMutex`] compares owners by.

use std::num::NonZeroUsize;
use std::ptr::NonNull;

/// The current thread's id for [`lock_api::ReentrantMutex`]: the address of a one-byte
/// thread-local, so reading it is one TLS address computation.
///
/// The id is non-zero and unique among live threads; a thread that exits may have its id
/// reused by a later thread (as with parking_lot 0.12's `RawThreadId`). A reentrant mutex
/// leaked in the locked state by an exited thread could therefore be re-entered by such a
/// later thread; a guard dropped normally never sees this.
///
/// Use it as `lock_api::ReentrantMutex<RawMutex, RawThreadId, T>`.
pub struct RawThreadId;

// SAFETY: two live threads never share a thread-local's address, and a thread's own address
// is the same on every call, so the id identifies the calling thread while it lives.
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: RawThreadId = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        thread_local! {
            // One byte per thread; only its address is used. `const` keeps access lazy-free.
            static ANCHOR: u8 = const { 0 };
        }
        ANCHOR.with(|anchor| NonNull::from(anchor).addr())
    }
}
