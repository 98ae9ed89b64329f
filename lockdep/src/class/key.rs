//! What a lock map's class is derived from: the key half of a class's identity (the other half
//! is the subclass).

use std::panic::Location;

/// What a lock map's class is derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeyRef {
    /// A [`LockClassKey`](crate::LockClassKey) in static storage, by address.
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
