//! Static class keys and the internal key reference stored in every lock map.

use std::panic::Location;

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

/// What a lock map's class is derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeyRef {
    /// A [`LockClassKey`] in static storage, by address.
    Static(usize),
    /// The construction site of the lock (the kernel's init-site key), compared by value.
    Site(&'static Location<'static>),
    /// A [`DynamicKey`](crate::DynamicKey): its node address plus a serial number that is never
    /// reused, so a new key at a reused address is a different key.
    Dynamic { addr: usize, serial: u64 },
    /// The lock instance itself (opt-in per-instance classes): a serial number unique to one
    /// lock map and never reused; its classes are zapped when the map is dropped.
    Instance(u64),
    /// Tracked on the held stack but never validated (the kernel's
    /// `lockdep_set_novalidate_class()`).
    NoValidate,
}
