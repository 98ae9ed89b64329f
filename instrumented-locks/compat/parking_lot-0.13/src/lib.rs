//! `parking_lot` 0.13's API over [`instrumented_locks`]: patch it in next to the 0.12 compat
//! crate, and every parking_lot 0.13 lock of the program, in every dependency, is validated by
//! lockdep.
//!
//! # The patch lines
//!
//! A `[patch]` entry is per major version, and one table cannot name `parking_lot` twice, so
//! the second entry goes under a key of its own with `package` naming the crate. In the
//! workspace's `Cargo.toml` (the root manifest of the build):
//!
//! ```toml
//! [patch.crates-io]
//! parking_lot = { path = "<this repository>/instrumented-locks/compat/parking_lot" }
//! parking_lot_013 = { path = "<this repository>/instrumented-locks/compat/parking_lot-0.13", package = "parking_lot" }
//! ```
//!
//! (The key `parking_lot_013` is any name not otherwise in the table.) This crate is version
//! 0.13.99, so it satisfies every `parking_lot = "0.13"` requirement; the 0.12 compat crate
//! (0.12.99) takes the `^0.12` ones. Then run `cargo update -p parking_lot@0.13.0` (and the
//! same for the 0.12 release in the lockfile): a lockfile that pins a registry release keeps
//! it, and cargo only warns that the patch "was not used". `cargo tree -i parking_lot@0.13.99`
//! shows it in place. A build with only 0.13 users may carry the second line alone.
//!
//! # What is covered
//!
//! Everything a parking_lot 0.13 user writes with these items compiles and behaves the same:
//!
//! - `Mutex`, `FairMutex`, `RwLock`, `ReentrantMutex`, their guards, mapped guards and `Arc`
//!   guards are instrumented-locks' validated generic types over this crate's raw locks
//!   (`Mutex<T>` is `instrumented_locks::generic::Mutex<parking_lot::RawMutex, T>`), and
//!   `Condvar`/`WaitTimeoutResult` are instrumented-locks': each acquisition is checked by
//!   lockdep *before* it can block, reports name the user's call site, a lock's class is its
//!   construction site and protected type. `new` is `const` (0.13 dropped the `const_*`
//!   functions: they are not here); `into_inner_with_raw` and
//!   `MappedRwLockReadGuard::try_map_or_err` are 0.13's; the `Arc` guards take 0.13's raw
//!   locks as parameters (`ArcMutexGuard<RawMutex, T>`), and `raw()` returns them.
//! - [`RecursiveRwLock`] and its guards (the `*_arc` methods too): the validated `RwLock` over
//!   [`RawRwLockRecursive`] whose reads are recursive reads (for lockdep, and reader-biased in
//!   the raw lock).
//! - [`Once`] with 0.13's `new_completed`, `is_completed`, `wait`, `wait_force`, and
//!   [`OnceState`]'s `is_poisoned`/`is_completed`.
//! - The raw locks ([`RawMutex`], [`RawFairMutex`], [`RawRwLock`], [`RawRwLockRecursive`],
//!   [`RawThreadId`], [`RawCondvar`]) implement lock_api 0.5's traits, with per-acquisition
//!   guard state, and [`lock_api`] is lock_api 0.5. (They implement lock_api 0.4's traits too,
//!   which the validated types are written against.)
//! - The features `arc_lock`, `send_guard`, `serde`, `owning_ref`, `deadlock_detection`
//!   (`nightly` is accepted and does nothing; 0.13 removed `hardware-lock-elision`).
//!
//! Validation is always compiled in; switch it off at run time with
//! `INSTRUMENTED_LOCKS_VALIDATE=0`.
//!
//! # What generic lock_api 0.5 code loses
//!
//! In parking_lot 0.13, `parking_lot::Mutex<T>` *is* `lock_api::Mutex<parking_lot::RawMutex, T>`
//! (lock_api 0.5). Here it is instrumented-locks' own type over the same raw lock, written
//! against lock_api 0.4's raw-lock traits, which carries the lock's validator state. So:
//!
//! - A lock written by hand as `lock_api::Mutex<parking_lot::RawMutex, T>` (`RwLock`,
//!   `ReentrantMutex`, `lock_api::Condvar<parking_lot::RawCondvar>`) compiles and works over
//!   this crate's raw locks, but is **not validated**: lock_api's `new` gives the raw lock no
//!   construction site and no protected type, so there is no class to give it.
//! - Code that relies on the identity does not compile: a trait implemented for
//!   `lock_api::Mutex<parking_lot::RawMutex, T>` and used on a `parking_lot::Mutex<T>`, a
//!   `parking_lot::MutexGuard` passed where a `lock_api::MutexGuard` is expected, or a
//!   function generic over `R: lock_api::RawMutex` given a `parking_lot::Mutex`.
//! - The validated types' methods that take lock_api 0.5 acquisition state are lock_api
//!   0.4's: `force_unlock*()` and `make_guard_unchecked()` take no guard state.
//!   `ReentrantMutex::into_inner_with_raw` returns a fresh `RawThreadId` (stateless, so the
//!   same).
//!
//! # Differences that can be observed
//!
//! - One `Condvar` may wait with several mutexes (parking_lot panics).
//! - Guards are `!Send` unless `send_guard` is on (see instrumented-locks' crate docs for what
//!   lockdep sees then).
//! - [`RawCondvar`]'s notifications return `false` and `0` (its waits may wake spuriously,
//!   which lock_api 0.5 allows only so); the validated [`Condvar`]'s counts are exact.
//! - `deadlock::check_deadlock` is instrumented-locks' detector (feature `deadlock_detection`).
//! - The validated types still have the 0.12 methods 0.13 removed (`read_recursive*` on
//!   `RwLock`, `const_new`, `try_map_or_else`): code written for 0.13 never calls them.
//!
//! # Not covered
//!
//! What a 0.13 user can write that does not compile here, besides the lock_api identities
//! above:
//!
//! - `force_unlock*(guard)` and `make_guard_unchecked(guard)` (and the rwlock forms) with
//!   lock_api 0.5's acquisition state as argument: here they take none, as in 0.12.
//! - `get_mut` and `data_ptr` in a `const` context (0.13 made them `const fn`).
//! - `Condvar::raw()` (the validated condvar is not lock_api 0.5's `Condvar<RawCondvar>`).
//! - `deadlock::check_deadlock` returns instrumented-locks' thread records (with
//!   `thread_id()` and `backtrace()`, as parking_lot_core's), not parking_lot_core 0.10's
//!   `DeadlockedThread` type (code that names only those methods compiles, as the parity
//!   program's `tests/deadlock.rs` does).

pub use lock_api;

mod raw;
mod raw04;
mod recursive_rwlock;

use instrumented_locks::generic;

pub use instrumented_locks::{Condvar, Once, OnceState, WaitTimeoutResult};

/// A validated mutex (parking_lot 0.13's `Mutex`): instrumented-locks' generic mutex over
/// [`RawMutex`]. See [`instrumented_locks::generic::Mutex`].
pub type Mutex<T> = generic::Mutex<RawMutex, T>;
/// A held [`Mutex`].
pub type MutexGuard<'a, T> = generic::MutexGuard<'a, RawMutex, T>;
/// A held [`Mutex`], projected onto part of the data.
pub type MappedMutexGuard<'a, T> = generic::MappedMutexGuard<'a, RawMutex, T>;
/// A validated mutex whose every unlock is fair (parking_lot 0.13's `FairMutex`).
pub type FairMutex<T> = generic::Mutex<RawFairMutex, T>;
/// A held [`FairMutex`].
pub type FairMutexGuard<'a, T> = generic::MutexGuard<'a, RawFairMutex, T>;
/// A held [`FairMutex`], projected onto part of the data.
pub type MappedFairMutexGuard<'a, T> = generic::MappedMutexGuard<'a, RawFairMutex, T>;
/// A validated reader-writer lock (parking_lot 0.13's `RwLock`), writer-preferring: a read
/// waits behind a queued writer, so a thread's second read of it is reported. See
/// [`instrumented_locks::generic::RwLock`].
pub type RwLock<T> = generic::RwLock<RawRwLock, T>;
/// A read lock of an [`RwLock`].
pub type RwLockReadGuard<'a, T> = generic::RwLockReadGuard<'a, RawRwLock, T>;
/// A write lock of an [`RwLock`].
pub type RwLockWriteGuard<'a, T> = generic::RwLockWriteGuard<'a, RawRwLock, T>;
/// An upgradable read of an [`RwLock`].
pub type RwLockUpgradableReadGuard<'a, T> = generic::RwLockUpgradableReadGuard<'a, RawRwLock, T>;
/// A read lock of an [`RwLock`], projected onto part of the data.
pub type MappedRwLockReadGuard<'a, T> = generic::MappedRwLockReadGuard<'a, RawRwLock, T>;
/// A write lock of an [`RwLock`], projected onto part of the data.
pub type MappedRwLockWriteGuard<'a, T> = generic::MappedRwLockWriteGuard<'a, RawRwLock, T>;
/// A validated re-entrant mutex (parking_lot 0.13's `ReentrantMutex`). See
/// [`instrumented_locks::generic::ReentrantMutex`].
pub type ReentrantMutex<T> = generic::ReentrantMutex<RawMutex, RawThreadId, T>;
/// A held [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> = generic::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A held [`ReentrantMutex`], projected onto part of the data.
pub type MappedReentrantMutexGuard<'a, T> =
    generic::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

pub use raw::{RawCondvar, RawFairMutex, RawMutex, RawRwLock, RawRwLockRecursive, RawThreadId};
pub use recursive_rwlock::{
    MappedRecursiveRwLockReadGuard, MappedRecursiveRwLockWriteGuard, RecursiveRwLock,
    RecursiveRwLockReadGuard, RecursiveRwLockUpgradableReadGuard, RecursiveRwLockWriteGuard,
};

#[cfg(feature = "arc_lock")]
pub use instrumented_locks::generic::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

/// parking_lot's deadlock detector (feature `deadlock_detection`): see
/// [`instrumented_locks::deadlock`].
#[cfg(feature = "deadlock_detection")]
pub mod deadlock {
    pub use instrumented_locks::deadlock::check_deadlock;
}
