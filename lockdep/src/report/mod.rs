//! Reports: what they say ([`types`]), their kernel-style text ([`text`]), how they are built
//! from the validator's state ([`build`]), and where they go ([`policy`]).
//!
//! A report is built while the validator holds what it reads and delivered after it has let
//! go of everything, before the lock operation that caused it takes effect.

pub(crate) mod build;
mod policy;
mod text;
mod types;

pub(crate) use policy::{deliver, deliver_no_unwind, delivered};
pub use policy::{set_policy, Handler, Policy};
pub use types::{
    AssertKind, Capacity, CircularDependency, Dependency, KeyMisuse, LockDesc, LockInstance,
    Report, SameClass, ThreadDesc,
};
