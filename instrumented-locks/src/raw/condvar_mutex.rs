//! [`CondvarMutex`]: the raw mutexes a [`Condvar`](crate::Condvar) can wait with.

use super::RawMutex;

/// A raw mutex that a [`Condvar`](crate::Condvar) (and [`raw::Condvar`](super::Condvar)) can
/// wait with: this crate's [`RawMutex`], or a type that *is* one under another name, such as
/// the parking_lot 0.13 compat crate's `RawMutex` (a newtype that also implements lock_api
/// 0.5's traits). The validated condvar's waits take a `generic::MutexGuard<'_, R, T>` for any
/// such `R`.
///
/// # Safety
///
/// [`as_raw_mutex`](Self::as_raw_mutex) must return the raw mutex that `Self`'s
/// `lock_api::RawMutex` methods lock and unlock, the same one on every call: the condvar
/// unlocks it, parks its waiters on its address and may requeue them onto it, so a guard of
/// `Self` must own exactly that mutex.
pub unsafe trait CondvarMutex: lock_api::RawMutex {
    /// The raw mutex behind `self`.
    fn as_raw_mutex(&self) -> &RawMutex;
}

// SAFETY: the mutex itself.
unsafe impl CondvarMutex for RawMutex {
    #[inline]
    fn as_raw_mutex(&self) -> &RawMutex {
        self
    }
}
