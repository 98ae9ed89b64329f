//! The validated locks, generic over `lock_api`'s raw-lock traits: one definition per lock
//! kind, as in lock_api (the raw lock apart from the data wrapper).
//!
//! | type | raw lock | what it adds to the lock_api type |
//! |---|---|---|
//! | [`Mutex<R, T>`] | `R: lock_api::RawMutex` | a [`LockMap`](lockdep::LockMap); guards carry three bits of tracking |
//! | [`RwLock<R, T>`] | `R: lock_api::RawRwLock` | the same |
//! | [`ReentrantMutex<R, G, T>`] | `R: lock_api::RawMutex`, `G: lock_api::GetThreadId` | the same; only a thread's outermost lock is tracked |
//!
//! Every method of lock_api 0.4's `Mutex`, `RwLock`, `ReentrantMutex` and of their guards is
//! here with the same signature and meaning, each available under the same raw-trait bounds,
//! plus the validator's additions (`named`, `with_class`, `with_dynamic_key`, `lock_nested`,
//! `lock_nest_lock`, `assert_held`, ...). The crate root instantiates them with this crate's
//! raw locks, as parking_lot instantiates lock_api's:
//! `instrumented_locks::Mutex<T> = generic::Mutex<raw::RawMutex, T>`.
//!
//! # Layout
//!
//! Each lock is a [`lockdep::LockMap`] next to the lock_api type (`lock_api::Mutex<R, T>`, ...),
//! which owns the raw lock, the data cell and, for the re-entrant mutex, the owner and count
//! (that one taken apart, of the same size: lock_api's `ReentrantMutex<R, G, ()>`, the raw
//! re-entrant mutex, and the data cell next to it, so that a mapped guard reaches the owner).
//! A plain guard is one word, as lock_api's: the lock's address with the track (held or not,
//! and the mode) in its three low bits, so that it moves in one register, also into a tuple or
//! a struct of guards. The acquisition's subclass and nest lock stay in lockdep's held-lock
//! entry, where a condvar wait or `unlocked` finds them (`lockdep::relock_of`). `Arc` guards
//! are the `Arc` and the track word; with `send_guard` the track is larger (the holding thread,
//! the subclass and nest lock) and sits next to the lock's address. Mapped guards are
//! lock_api's mapped guard (for the re-entrant mutex this crate's own, of the same fields: the
//! raw mutex's address and the data's) plus the map's address and the word. Without the
//! `validate` feature the map and the word are zero-sized: every type has the size and the
//! code of its lock_api counterpart.

mod acquire;
mod guard;
mod surface;

mod mutex;
mod remutex;
mod rwlock;
mod rwlock_guards;

pub use mutex::{MappedMutexGuard, Mutex, MutexGuard};
pub use remutex::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
pub use rwlock::RwLock;
pub use rwlock_guards::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};

#[cfg(feature = "arc_lock")]
pub use mutex::ArcMutexGuard;
#[cfg(feature = "arc_lock")]
pub use remutex::ArcReentrantMutexGuard;
#[cfg(feature = "arc_lock")]
pub use rwlock_guards::{ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard};

pub(crate) use acquire::{
    acquisitions, block, here, raw_helpers, timed, tried, Defer, Relocks, Tracked,
};
pub(crate) use guard::{
    guard_core, guard_impls, guard_mut, guard_stable, mapped_guard, projections,
};
pub(crate) use surface::{
    default_from, force_unlocks, into_inner_with_raw, lock_surface, validator_queries,
};
