//! Drop-in replacements for parking_lot 0.12 (`Mutex`, `FairMutex`, `RwLock`,
//! `ReentrantMutex`, `Condvar`, `Once`, the raw locks and the `lock_api` surface), plus a
//! `std::sync`-flavoured set, that report lock-order problems through [`lockdep`], the
//! userspace port of the Linux kernel's lock validator.
//!
//! # Quick start
//!
//! 1. **Patch parking_lot** (every parking_lot lock of the program, its dependencies' too):
//!    one line in the workspace's `Cargo.toml`, nothing else changes:
//!
//!    ```toml
//!    [patch.crates-io]
//!    parking_lot = { path = "<this repository>/instrumented-locks/compat/parking_lot" }
//!    ```
//!
//!    Or **change the import** in your own code only:
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
//! 3. Make reports fail your tests: `let _scope = instrumented_locks::`[`test_scope`]`();` at
//!    the top of a test fails that test on any report its thread (or a thread it
//!    [enters](lockdep::ScopeHandle::enter) into the scope) makes, even one already printed earlier in
//!    the process, and leaves the other tests alone. ([`set_policy`]`(`[`Policy::Panic`]`)` is
//!    process-wide: under `cargo test`'s parallel threads it makes whichever test triggers a
//!    report panic; `Policy::Callback` collects reports instead.) Everything needed to
//!    configure the validator is re-exported here (see
//!    [Configuring the validator](#configuring-the-validator)).
//! 4. In release builds, turn validation off (next section) or switch it off at run time.
//!
//! # Features
//!
//! | feature | default | what it does |
//! |---|---|---|
//! | `validate` | yes | feed lockdep. Without it every type is the plain lock_api type over [`raw`]'s locks: same size, same code (a test asserts the sizes) |
//! | `arc_lock` | no | the `Arc` guards (`lock_arc`, `read_arc`, ..., `ArcMutexGuard` ...), parking_lot's `arc_lock` |
//! | `send_guard` | no | guards become `Send` (parking_lot's `send_guard`); see [Threads](#threads) |
//! | `serde` | no | `Serialize`/`Deserialize` for the locks |
//! | `owning_ref` | no | `owning_ref::StableAddress` for the guards |
//! | `deadlock_detection` | no | parking_lot_core's detector of deadlocks that happened ([`deadlock`]) |
//! | `tokio` | no | validated `tokio::sync::{Mutex, RwLock}` (module `tokio`) and the task spawn helpers ([`task`]); see [Async](#async) |
//! | `signal` | no | lockdep's `dump_on_signal` (through `signal-hook`); off, it returns an `Unsupported` error, and a patched program's graph has no `signal-hook` |
//!
//! **Switching validation off for release builds.** Cargo unifies features across a build,
//! and a dependency table under `[target.'cfg(not(debug_assertions))'.dependencies]` is not
//! a profile switch (that `cfg` is not evaluated per profile): it leaves `validate` on,
//! silently. What works is a feature of your own that forwards to ours:
//!
//! ```toml
//! [dependencies]
//! instrumented-locks = { path = "…", default-features = false }
//!
//! [features]
//! default = ["lock-validation"]
//! lock-validation = ["instrumented-locks/validate"]
//! ```
//!
//! and `cargo build --release --no-default-features` (the compat crate has the same
//! `validate` feature). Or keep validation compiled in and switch it off at run time with
//! [`set_enabled`]`(false)` or `INSTRUMENTED_LOCKS_VALIDATE=0` ([`ENV_VAR`]): then a lock
//! operation costs one relaxed load over the raw lock.
//!
//! # What is checked
//!
//! - **Lock classes.** Locks constructed at one source line for one protected type are one
//!   class (lockdep's graph is over classes, so AB/BA between *any* two instances is found);
//!   reports name an unnamed lock by kind, type and site. Choose the class with
//!   `with_class(val, &KEY, name)` (a static [`LockClassKey`]) or `with_dynamic_key`; name
//!   it with `named`.
//! - **Before blocking.** Every blocking acquisition (lock, write, read, timed locks, condvar
//!   re-lock, upgrade, `unlocked` re-lock, `bump`) is validated *before* it can block, so
//!   relocking a held mutex is reported instead of hanging silently.
//! - **Modes.** `write`/`lock` are exclusive, `read` is a non-recursive reader,
//!   `read_recursive` a recursive reader, `upgradable_read` an upgradable reader (see
//!   [`generic::RwLock`]), so recursive and upgradable readers give no false positives.
//! - **try_lock** follows lockdep: a successful try-lock is held but nothing depends on it.
//! - **Same-class nesting** of two instances is fine in any fixed order (lockdep's default
//!   instance-order mode: two instances taken in both orders, by any threads, are a cycle);
//!   under `lockdep::set_nesting(Nesting::Strict)` it needs an annotation,
//!   `lock_nested(subclass)` or `lock_nest_lock(&outer_guard)`, as in the kernel.
//! - **Condvar waits** release the mutex and validate the re-lock with the locks held then.
//! - **Misuse.** A lock freed while held, a thread exiting with locks held, an unregistered
//!   dynamic key, and failed `assert_held()` / `assert_not_held()` are reported.
//!
//! # Threads
//!
//! Guards are `!Send` by this crate's own marker ([`GuardMarker`]), whatever other crates
//! enable in lock_api or parking_lot: a held lock belongs to the thread that took it.
//! [`thread::spawn`] models joins, so that joining, under lock `A`, a thread that takes `A` is
//! reported. With `send_guard`, guards are `Send`; a guard dropped on another thread unlocks
//! there with no report, and ownership moves in the validator ([`lockdep::release_from`]):
//! the entry leaves the acquiring thread's held stack exactly, before that thread's next lock
//! operation, so the locks it takes afterwards get no dependency from it, re-taking it is not
//! recursive locking, and the acquiring thread may exit first (lockdep is told that guards
//! are movable, so locks held at its exit are not reported: their guards may live on).
//!
//! **Blocking**: a blocking acquisition is validated first, then tries the raw lock; only if
//! that fails does it tell lockdep that the thread waits ([`lockdep::lock_contended`], then
//! [`lockdep::lock_acquired`]), so the all-threads dump ([`lockdep::all_held_locks`]), the
//! hung-lock watchdog ([`lockdep::start_watchdog`], `examples/watchdog.rs`) and lock_stat
//! ([`lockdep::set_lock_stat`]) see who waits for what. A condvar's re-lock inside its wait is
//! not announced. **Destroying a locked lock** (a forgotten guard) is reported for every
//! thread that holds it ([`lockdep::check_held_lock_freed`]); an unlocked lock's drop costs
//! one load of its state.
//!
//! # Async
//!
//! Two kinds of bug deadlock async code: lock-order inversions among `tokio::sync` locks (and
//! between async and blocking locks), and a blocking guard (this crate's, `parking_lot`'s,
//! `std`'s) held across an `.await`, which deadlocks a single-threaded executor as soon as
//! another task on that thread takes the lock. Both are found, the first time their pieces
//! are seen:
//!
//! ```ignore
//! use instrumented_locks::{task, tokio::Mutex};
//!
//! let accounts = Arc::new(Mutex::named(0, "accounts"));      // tokio::sync::Mutex, validated
//! task::spawn(async move {                                   // tokio::spawn, instrumented
//!     let a = accounts.lock().await;                         // validated before it can wait
//!     // ...
//! });
//! ```
//!
//! - **Validated tokio locks** (feature `tokio`): `tokio::Mutex` and
//!   `tokio::RwLock` (module `tokio`) wrap tokio's own locks, with tokio's API and
//!   guards (owned and mapped ones included), classes as for the other locks here, and
//!   validation at the lock future's first poll, before it can wait.
//! - **Held per task**: [`task::instrument`] (or `task::spawn`, `task::spawn_local` with the `tokio` feature)
//!   gives a future a held-lock context of its own, entered around each of its polls: the
//!   task's async locks go on the polling thread's held-lock stack for the poll and come off
//!   after it, so they move with the task between worker threads, and two tasks taking turns
//!   on one thread do not see each other's async locks. Async and blocking locks share one
//!   dependency graph (A async → B blocking → A is a cycle). Sound on the multi-thread
//!   runtime, the current-thread runtime and `LocalSet` (the context is the future's own,
//!   whoever polls it). A cancelled lock future, or a task dropped while holding an async
//!   lock, releases its entries.
//! - **Blocking guards held across `.await`**: when an instrumented future returns `Pending`
//!   holding a blocking guard it took in that poll, lockdep reports
//!   [`Report::HeldAcrossAwait`] with the guard's
//!   acquisition site and the task, once per site. Blocking locks stay per OS thread: another
//!   task polled on that thread that takes the same lock gets the recursive-locking report
//!   before the thread blocks.
//! - Reports made inside an instrumented poll name the task where the thread would be:
//!   `task 17 on tokio-runtime-worker/3`.
//!
//! A task spawned with plain `tokio::spawn` still has its async locks held per task: each
//! acquisition and release is made in a context of the task's own, found by
//! `tokio::task::try_id()`, so cycles among async locks are found without instrumenting
//! anything. Without its poll boundaries, though, the task's async locks are not seen while
//! it takes blocking locks (async → blocking orders), and a blocking guard held across its
//! awaits is not reported: instrument the tasks for those (the top-level future of
//! `block_on` too, which is no task: outside every task a tokio lock is validated against
//! what the thread holds and not held afterwards). tokio's per-poll runtime hooks would make
//! instrumenting automatic, but exist only under `--cfg tokio_unstable` and do not say
//! whether a poll returned `Pending`. With
//! `send_guard`, a blocking guard held across an await and dropped on another thread is not
//! reported at its drop (the guard type is declared movable), but its entry stays on the
//! acquiring thread's stack until that thread takes the lock again (see the limits below).
//!
//! # Configuring the validator
//!
//! One dependency is enough: where reports go ([`set_policy`], [`Policy`], [`Report`]), test
//! scopes ([`test_scope`], [`TestScope`]), suppressions ([`suppress`], [`Suppression`],
//! [`load_suppressions`]), the nesting rule ([`set_nesting`], [`Nesting`]), condvar tracking
//! ([`set_condvar_tracking`]), counters ([`stats`], [`summary`]), [`reset`], the run-time
//! switch ([`set_enabled`]), the class keys ([`LockClassKey`], [`DynamicKey`]) and the rest
//! of lockdep's API ([`lockdep`] itself is re-exported).
//!
//! # Generic lock_api code
//!
//! The types here are this crate's own (a [`LockMap`] next to lock_api's data wrapper), not
//! `lock_api::Mutex<raw::RawMutex, T>`: lock_api's `Mutex::new` gives the raw lock neither a
//! construction site nor the protected type, so a lock built as `lock_api::Mutex<R, T>` (also
//! `lock_api::Mutex<parking_lot::RawMutex, T>` under the patch) is **not validated**. For
//! validation, use this crate's types, or [`generic`]`::Mutex<R, T>` with your own raw lock.
//!
//! # Limits
//!
//! - A lock is identified by its address while held: moving an unlocked lock is fine, but
//!   `mem::forget` of a guard followed by moving the lock loses track of it (`into_inner`
//!   moves it too: the thread's forgotten entry is reported when the thread exits, not
//!   there). A lock that moves
//!   (a `Vec` of locks that grows, `mem::swap`) starts its instance order (two locks of one
//!   class, see lockdep's `Nesting`) afresh at its new address: an order its two locks were
//!   taken in before the move is not held against them after it, and a new lock that comes
//!   to sit at the old address does not inherit it.
//! - Locking through `raw()` is not seen. `force_unlock*` releases the entry a forgotten
//!   guard left, on this thread or on the thread that forgot it (for a lock several threads
//!   read, one of their entries); a lock that is not locked at all is reported as a bad
//!   unlock balance at the caller and left alone, as is a `ReentrantMutex` of which the
//!   calling thread owns no level (switched off too: no report then).
//! - With `send_guard`, a guard's lock stays on the acquiring thread's held stack while the
//!   guard is away (until it is dropped): the locks that thread takes meanwhile depend on it.
//!   A thread holding a guard that another thread acquired has no entry for it (lockdep does
//!   not know when a guard moves, only where it is dropped), and locks held at the exit of a
//!   thread are not reported once guards are movable (a leaked guard included). A guard
//!   downgraded or upgraded away from home changes its entry there by mail; its upgrade's
//!   wait is validated on the thread that waits.
//! - One thread's two guards of one rwlock in *different* modes each release and change
//!   their own entry. Two in the *same* mode (two `read_recursive` guards) are told apart
//!   only by place, as in the kernel: the topmost entry goes, whichever guard drops first.
//!   `force_unlock_read` takes the topmost read entry (plain or recursive) of the lock.
//! - A `ReentrantMutex` has one held-lock entry, made by its outermost guard, for as long as
//!   the thread holds a level of it: a nested guard that outlives the outermost one keeps it.
//!   `unlocked`, `unlocked_fair` and `bump` on a re-entrant guard release one level: lockdep
//!   hears of it only if it was the thread's last (above it the mutex stays owned, the entry
//!   stays, and the re-lock is not validated, as it cannot block). A re-entrant `bump` is a
//!   fair `unlocked` with nothing to run (lock_api's own does not tell whether it released).
//!   The entry goes with the thread's last level whichever guard releases it, also while
//!   validation is switched off, a *mapped* re-entrant guard (`ReentrantMutexGuard::map`)
//!   included: it holds its guard's level and releases it by the same rule (its drop,
//!   `unlock_fair`, a panic in the closure of `map` or `try_map`), so the outermost guard
//!   mapped and dropped while a nested one lives leaves the entry to the nested one, and a
//!   mapped nested guard that releases the last level takes the entry with it. The mapped
//!   guard is this crate's own (lock_api's does not tell whether the thread still owns the
//!   mutex): it asks the raw re-entrant mutex, as the unmapped guards do.
//! - If the closure of an `unlocked` unwinds, the guard owns the lock again and the stack
//!   says so: the re-lock is validated and recorded on the unwind too.
//! - An upgrade is validated as an acquisition that waits for the lock's readers; a cycle
//!   through another thread's exclusive holding of the lock, which cannot coexist with the
//!   upgrading thread's upgradable read, is still reported (an over-approximation).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod condvar;
pub mod deadlock;
mod dep;
pub mod generic;
pub mod raw;
pub mod std_sync;
mod switch;
pub mod task;
pub mod thread;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use dep::{GuardMarker, HeldGuard};
pub use lock_api;
pub use lockdep;
/// When a program hangs: every thread's held locks, the hung-lock watchdog, lock_stat.
pub use lockdep::{
    all_held_locks, deadlocks_now, dump_on_signal, lock_stat, reset_lock_stat, set_lock_stat,
    set_watchdog_handler, show_all_locks, start_watchdog, stop_watchdog, WATCHDOG_ENV,
};
pub use lockdep::{
    load_suppressions, reset, set_condvar_tracking, set_nesting, set_policy, stats, summary,
    suppress, test_scope, DynamicKey, LockClassKey, LockMap, Nesting, Policy, Report, Stats,
    Suppression, TestScope,
};
pub use raw::{Once, OnceState, RawFairMutex, RawMutex, RawRwLock, RawThreadId};
pub use switch::{is_enabled, set_enabled, ENV_VAR};

#[cfg(feature = "arc_lock")]
pub use generic::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

/// A validated mutex ([`generic::Mutex`] over [`RawMutex`]), parking_lot's `Mutex<T>`.
pub type Mutex<T> = generic::Mutex<RawMutex, T>;
/// The guard of a [`Mutex`].
pub type MutexGuard<'a, T> = generic::MutexGuard<'a, RawMutex, T>;
/// A projected [`MutexGuard`].
pub type MappedMutexGuard<'a, T> = generic::MappedMutexGuard<'a, RawMutex, T>;

/// A validated mutex whose every unlock is fair ([`generic::Mutex`] over [`RawFairMutex`]),
/// parking_lot's `FairMutex<T>`.
pub type FairMutex<T> = generic::Mutex<RawFairMutex, T>;
/// The guard of a [`FairMutex`].
pub type FairMutexGuard<'a, T> = generic::MutexGuard<'a, RawFairMutex, T>;
/// A projected [`FairMutexGuard`].
pub type MappedFairMutexGuard<'a, T> = generic::MappedMutexGuard<'a, RawFairMutex, T>;

/// A validated reader-writer lock ([`generic::RwLock`] over [`RawRwLock`]), parking_lot's
/// `RwLock<T>`.
pub type RwLock<T> = generic::RwLock<RawRwLock, T>;
/// Shared access to an [`RwLock`].
pub type RwLockReadGuard<'a, T> = generic::RwLockReadGuard<'a, RawRwLock, T>;
/// Exclusive access to an [`RwLock`].
pub type RwLockWriteGuard<'a, T> = generic::RwLockWriteGuard<'a, RawRwLock, T>;
/// Upgradable shared access to an [`RwLock`].
pub type RwLockUpgradableReadGuard<'a, T> = generic::RwLockUpgradableReadGuard<'a, RawRwLock, T>;
/// A projected [`RwLockReadGuard`].
pub type MappedRwLockReadGuard<'a, T> = generic::MappedRwLockReadGuard<'a, RawRwLock, T>;
/// A projected [`RwLockWriteGuard`].
pub type MappedRwLockWriteGuard<'a, T> = generic::MappedRwLockWriteGuard<'a, RawRwLock, T>;

/// A validated re-entrant mutex ([`generic::ReentrantMutex`] over [`RawMutex`] and
/// [`RawThreadId`]), parking_lot's `ReentrantMutex<T>`.
pub type ReentrantMutex<T> = generic::ReentrantMutex<RawMutex, RawThreadId, T>;
/// The guard of a [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> = generic::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A projected [`ReentrantMutexGuard`].
pub type MappedReentrantMutexGuard<'a, T> =
    generic::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A new [`Mutex`] (parking_lot's `const_mutex`); its class is the caller's location and
/// `T`. `const`.
#[inline]
#[track_caller]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::const_new(<RawMutex as lock_api::RawMutex>::INIT, val)
}

/// A new [`FairMutex`] (parking_lot's `const_fair_mutex`).
#[inline]
#[track_caller]
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::const_new(<RawFairMutex as lock_api::RawMutex>::INIT, val)
}

/// A new [`RwLock`] (parking_lot's `const_rwlock`).
#[inline]
#[track_caller]
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    RwLock::const_new(<RawRwLock as lock_api::RawRwLock>::INIT, val)
}

/// A new [`ReentrantMutex`] (parking_lot's `const_reentrant_mutex`).
#[inline]
#[track_caller]
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::const_new(
        <RawMutex as lock_api::RawMutex>::INIT,
        <RawThreadId as lock_api::GetThreadId>::INIT,
        val,
    )
}
