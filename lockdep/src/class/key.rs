//! What a lock map's class is derived from: the key half of a class's identity (the other half
//! is the subclass).

use std::hash::{Hash, Hasher};
use std::panic::Location;

use super::static_key::LockClassKey;

/// What a lock map's class is derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeyRef {
    /// A [`LockClassKey`] in static storage, by address.
    Static(StaticKey),
    /// The construction site of the lock (the kernel's init-site key), compared by value.
    Site(&'static Location<'static>),
    /// The construction site plus the protected type: a generic adapter that builds every
    /// lock on one line is monomorphized per type, and so is its class.
    SiteType {
        site: &'static Location<'static>,
        ty: TypeName,
    },
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

impl KeyRef {
    /// The construction site of a key that is one (a lock's class by where it was made).
    pub(crate) fn site(self) -> Option<&'static Location<'static>> {
        match self {
            KeyRef::Site(site) | KeyRef::SiteType { site, .. } => Some(site),
            _ => None,
        }
    }
}

/// A static key, compared and hashed by address (its identity), never by value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StaticKey(pub &'static LockClassKey);

impl PartialEq for StaticKey {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for StaticKey {}

impl Hash for StaticKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (self.0 as *const LockClassKey as usize).hash(h);
    }
}

/// The protected type of a lock, as `std::any::type_name::<T>` (a pointer to it, because
/// `type_name` is not `const` but a pointer to it can be stored by a `const fn`). Compared and
/// hashed by the name it returns: two copies of one instantiation in different codegen units
/// are one type. Two distinct types with one name (two versions of one crate) would share a
/// class only if they were also built at the same site.
#[derive(Clone, Copy)]
pub(crate) struct TypeName(pub fn() -> &'static str);

impl TypeName {
    pub(crate) fn get(self) -> &'static str {
        (self.0)()
    }
}

impl PartialEq for TypeName {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for TypeName {}

impl Hash for TypeName {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.get().hash(h);
    }
}

impl std::fmt::Debug for TypeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.get())
    }
}
