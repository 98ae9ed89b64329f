//! Static lock class keys.

use crate::nesting::Nesting;

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
    /// How two instances of this key's classes may nest; `None` follows
    /// [`set_nesting`](crate::set_nesting). Also keeps the key non-zero-sized, so that two
    /// keys in one static array have distinct addresses.
    nesting: Option<Nesting>,
}

impl LockClassKey {
    /// A new key; put it in a `static`. Nesting of its instances follows the global
    /// [`set_nesting`](crate::set_nesting).
    pub const fn new() -> LockClassKey {
        LockClassKey { nesting: None }
    }

    /// A new key whose classes always use `nesting` for two of their instances taken nested,
    /// whatever [`set_nesting`](crate::set_nesting) says; e.g. [`Nesting::Strict`] for a class
    /// whose instances must never nest without an annotation, as in the kernel.
    ///
    /// ```
    /// use lockdep::{LockClassKey, Nesting};
    /// static INODE: LockClassKey = LockClassKey::with_nesting(Nesting::Strict);
    /// # let _ = &INODE;
    /// ```
    pub const fn with_nesting(nesting: Nesting) -> LockClassKey {
        LockClassKey {
            nesting: Some(nesting),
        }
    }

    /// The nesting mode this key fixes, if any.
    pub fn nesting(&self) -> Option<Nesting> {
        self.nesting
    }
}

impl Default for LockClassKey {
    fn default() -> Self {
        LockClassKey::new()
    }
}
