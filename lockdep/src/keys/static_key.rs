//! Static lock class keys.

/// A static lock class key: every lock map created with the same key (and subclass) belongs to
/// the same lock class.
///
/// This is the kernel's `struct lock_class_key` in static storage, as used by
/// `lockdep_set_class()`. The key is identified by its address, so it must live in a `static`.
/// It needs no registration. For keys created and destroyed at run time, use
/// [`DynamicKey`](crate::DynamicKey).
///
/// ```
/// static REQUEST_QUEUE: lockdep::LockClassKey = lockdep::LockClassKey::new();
/// let map = lockdep::LockMap::with_key("request_queue", &REQUEST_QUEUE);
/// # let _ = map;
/// ```
#[derive(Debug)]
pub struct LockClassKey {
    // Non-zero size so that two keys in one static array have distinct addresses.
    _distinct: u8,
}

impl LockClassKey {
    /// A new key; put it in a `static`.
    pub const fn new() -> LockClassKey {
        LockClassKey { _distinct: 0 }
    }
}

impl Default for LockClassKey {
    fn default() -> Self {
        LockClassKey::new()
    }
}
