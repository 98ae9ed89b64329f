//! `parking_lot` 0.12's API over [`instrumented_locks`]: patch it in, and every parking_lot
//! lock of the program, in every dependency, is validated by lockdep.
//!
//! # The one line
//!
//! In the workspace's `Cargo.toml` (the root manifest of the build, where `[patch]` is read):
//!
//! ```toml
//! [patch.crates-io]
//! parking_lot = { path = "<this repository>/instrumented-locks/compat/parking_lot" }
//! # or, without a checkout:
//! # parking_lot = { git = "<this repository's URL>" }
//! ```
//!
//! This crate is version 0.12.99, so it satisfies every `parking_lot = "0.12"` (and `^0.12.x`)
//! requirement in the dependency graph; `cargo tree -i parking_lot` shows it in place of the
//! registry's crate. Crates that ask for parking_lot 0.11 or 0.13 keep those (a patch is per
//! major version). After adding the line, always run `cargo update -p parking_lot`: a lockfile
//! that pins any 0.12 release keeps it, and cargo only warns that the patch "was not used".
//!
//! Everything a parking_lot 0.12 user can write compiles unchanged: the same items, methods,
//! trait impls, features (`arc_lock`, `send_guard`, `serde`, `owning_ref`,
//! `deadlock_detection`; `hardware-lock-elision` and `nightly` are accepted and do nothing),
//! and `const fn` constructors where parking_lot has them. The API-parity test in
//! `instrumented-locks/compat/parity/` checks this item by item against parking_lot 0.12.5.
//!
//! # What the patch does
//!
//! `Mutex`, `FairMutex`, `RwLock`, `ReentrantMutex`, their guards and `Condvar` are
//! instrumented-locks' validated types: each acquisition is checked by lockdep *before* it can
//! block, reports name the user's call site, and a lock's class is its construction site and
//! protected type. The raw locks (`RawMutex`, `RawRwLock`, ...) are instrumented-locks' own,
//! with parking_lot's semantics, on `lock_api` and `parking_lot_core` (the crates under
//! parking_lot, which the patch does not capture). Validation is always compiled in; switch
//! it off at run time with `INSTRUMENTED_LOCKS_VALIDATE=0`.
//!
//! # What generic lock_api code loses
//!
//! In parking_lot, `parking_lot::Mutex<T>` *is* `lock_api::Mutex<parking_lot::RawMutex, T>`.
//! Here it is not: it is `instrumented_locks::generic::Mutex<RawMutex, T>`, a type of its own
//! that carries the lock's validator state. So:
//!
//! - A lock written by hand as `lock_api::Mutex<parking_lot::RawMutex, T>` (or `RwLock`, ...)
//!   still compiles and works, over this crate's raw locks, but is **not validated**:
//!   lock_api's `Mutex::new` gives the raw lock neither a construction site nor the protected
//!   type, so there is no class to give it. For validation, use this crate's types, or
//!   `instrumented_locks::generic::Mutex<R, T>` with any raw lock `R`.
//! - Code that relies on the identity (a trait implemented for
//!   `lock_api::Mutex<parking_lot::RawMutex, T>` and used on a `parking_lot::Mutex<T>`, or
//!   `parking_lot::MutexGuard` passed where `lock_api::MutexGuard<RawMutex, T>` is expected)
//!   does not compile. The parity test's `type_identity.rs` lists these identities.
//! - The `Arc` guards are `instrumented_locks::generic`'s (`ArcMutexGuard<RawMutex, T>` is
//!   that type, not lock_api's).
//!
//! # Differences that can be observed
//!
//! - One `Condvar` may wait with several mutexes (parking_lot panics).
//! - Guards are `!Send` whatever features other crates enable in lock_api; `send_guard`
//!   makes them `Send` (see instrumented-locks' crate docs for what lockdep sees then).
//! - Without `deadlock_detection`, `deadlock` is not public, as in parking_lot.

#![no_std]

pub use instrumented_locks::lock_api;

pub use instrumented_locks::{
    const_fair_mutex, const_mutex, const_reentrant_mutex, const_rwlock, Condvar, FairMutex,
    FairMutexGuard, MappedFairMutexGuard, MappedMutexGuard, MappedReentrantMutexGuard,
    MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard, Once, OnceState,
    RawFairMutex, RawMutex, RawRwLock, RawThreadId, ReentrantMutex, ReentrantMutexGuard, RwLock,
    RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard, WaitTimeoutResult,
};

#[cfg(feature = "arc_lock")]
pub use instrumented_locks::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

/// parking_lot's deadlock detector (feature `deadlock_detection`): see
/// [`instrumented_locks::deadlock`].
#[cfg(feature = "deadlock_detection")]
pub mod deadlock {
    pub use instrumented_locks::deadlock::check_deadlock;
}
