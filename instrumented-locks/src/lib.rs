//! Drop-in replacements for parking_lot's `Mutex`, `RwLock`, `ReentrantMutex` and `Condvar`
//! that report lock-order problems through [`lockdep`] (placeholder docs, see below).

#![warn(missing_docs)]

mod condvar;
mod dep;
mod guard_impls;
mod mutex;
mod remutex;
mod rwlock;
mod rwlock_guards;
pub mod std_sync;
mod switch;
pub mod thread;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use dep::HeldGuard;
pub use mutex::{MappedMutexGuard, Mutex, MutexGuard};
pub use remutex::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
pub use rwlock::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};
pub use switch::{is_enabled, set_enabled, ENV_VAR};
