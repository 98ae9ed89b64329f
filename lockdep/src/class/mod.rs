//! Lock classes as values: what names a class (a key and a subclass), the id of a class, the
//! lock-free check that an id is still live, the copy of ids a lock map keeps, and the names
//! of classes whose locks have none.
//!
//! The class *table* (names, dependencies) is in [`graph`](crate::graph), under the graph lock;
//! finding the class of a lock map is [`resolve`](crate::resolve). What is here needs no lock
//! and holds no pointer: an id is an index plus a generation, so a stale copy is detected, never
//! followed.

mod cached;
pub(crate) mod generation;
mod id;
mod key;
pub(crate) mod name;
mod static_key;

pub(crate) use cached::ClassCache;
pub use id::ClassId;
pub(crate) use key::{KeyRef, StaticKey, TypeName};
pub(crate) use static_key::KeyMark;
pub use static_key::LockClassKey;
