//! Drop-in replacements for parking_lot's `Mutex`, `RwLock`, `ReentrantMutex` and `Condvar`
//! (and a `std::sync`-flavoured set) that report lock-order problems through [`lockdep`], the
//! userspace port of the Linux kernel's lock validator.
//!
//! # Quick start
//!
//! 1. Depend on the crate and change the import; nothing else changes:
//!
//!    ```text
//!    - use parking_lot::{Mutex, RwLock, Condvar};
//!    + use instrumented_locks::{Mutex, RwLock, Condvar};
//!    ```
//!
//!    Code written against `std::sync` uses [`std_sync`] instead (same poisoning and
//!    `LockResult`).
//! 2. Run your tests or your program. The first time two locks are taken in an order that
//!    contradicts an order seen before, in *any* threads, lockdep prints a report to stderr,
//!    even if the run never deadlocks:
//!
//!    ```
//!    use instrumented_locks::Mutex;
//!
//!    let checking = Mutex::named(100, "checking");
//!    let savings = Mutex::named(100, "savings");
//!    {
//!        let _c = checking.lock();
//!        let _s = savings.lock(); // learns: checking -> savings
//!    }
//!    {
//!        let _s = savings.lock();
//!        let _c = checking.lock(); // prints "possible circular locking dependency detected"
//!    }
//!    ```
//!
//!    The report names both locks, the sites of every dependency in the cycle and the
//!    scenario that deadlocks (see the crate's README and `examples/`).
//! 3. Make reports fail your tests: `lockdep::set_policy(lockdep::Policy::Panic)` at the start
//!    of a test, or collect them with `Policy::Callback`.
//! 4. In release builds, turn validation off (`default-features = false`): the types become
//!    plain parking_lot, same size and speed. Or keep it compiled in and switch it off at run
//!    time with [`set_enabled`] or the `INSTRUMENTED_LOCKS_VALIDATE=0` environment variable.
//!
//! # What is checked
//!
//! - **Lock classes.** Locks constructed at one source line are one class (lockdep's graph is
//!   over classes, so AB/BA between *any* two instances is found). Choose the class with
//!   `with_class(val, &KEY, name)` (a static [`lockdep::LockClassKey`]) or
//!   `with_dynamic_key`; name it with `named`.
//! - **Before blocking.** Every blocking acquisition (lock, write, read, timed locks, condvar
//!   re-lock, upgrade, `unlocked` re-lock) is validated *before* it can block, so relocking a
//!   held mutex is reported instead of hanging silently.
//! - **Modes.** `write`/`lock` are exclusive, `read` is a non-recursive reader,
//!   `read_recursive` a recursive reader, `upgradable_read` an upgradable reader (see
//!   [`RwLock`]), so recursive and upgradable readers give no false positives.
//! - **try_lock** follows lockdep: a successful try-lock is held but nothing depends on it.
//! - **Same-class nesting** of two mutexes is fine in any fixed order (lockdep's default
//!   `Nesting::InstanceOrder`); under `lockdep::set_nesting(Nesting::Strict)` it needs an
//!   annotation, `lock_nested(subclass)` or `lock_nest_lock(&outer_guard)`, as in the kernel.
//! - **Condvar waits** release the mutex and validate the re-lock with the locks held then.
//! - **Threads.** Guards are `!Send` (a guard cannot be unlocked on another thread; the type
//!   system forbids it). [`thread::spawn`] models joins so that joining, under lock `A`, a
//!   thread that takes `A` is reported.
//! - **Misuse.** A lock freed while held, a thread exiting with locks held, an unregistered
//!   dynamic key, and failed `assert_held()` / `assert_not_held()` are reported.
//!
//! # Features
//!
//! - `validate` (default): feed lockdep. Without it every type is a zero-cost shell around
//!   parking_lot (same `size_of`; `new` becomes `const`). With it, `new` is not `const`
//!   (lockdep's `LockMap` has no `const` constructor yet), so use `std::sync::LazyLock` for
//!   statics.
//!
//! # Limits
//!
//! A lock is identified by its address while held: moving an unlocked lock is fine, but
//! `mem::forget` of a guard followed by moving the lock loses track of it. `force_unlock`,
//! `lock_arc` and `bump` are not provided.

#![warn(missing_docs)]

mod condvar;
mod dep;
mod guard_impls;
mod mutex;
pub mod raw;
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
