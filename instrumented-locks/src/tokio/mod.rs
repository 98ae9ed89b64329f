//! Validated `tokio::sync` locks (the `tokio` feature): [`Mutex`] and [`RwLock`], with
//! tokio's API and guards, over tokio's own locks.
//!
//! - **Classes** as for this crate's other locks: the construction site and the protected
//!   type (`tokio::Mutex<u64>@src/bank.rs:12`), or [`Mutex::named`], or a static key
//!   ([`Mutex::with_class`]).
//! - **Validated before waiting**: `lock().await` is validated at the future's first poll,
//!   before tokio's lock future can wait, so a lock-order inversion is reported even when it
//!   does not deadlock this time, and a self-deadlock is reported instead of hanging.
//! - **Held per task**: inside an [instrumented](crate::task) task, the lock is held by the
//!   task wherever it is polled; async and blocking locks share one dependency graph. A lock
//!   future dropped while waiting (cancellation) releases its entry.
//! - **Tasks that are not instrumented** (plain `tokio::spawn`): each acquisition and release
//!   is made in a context of the task's own, found by `tokio::task::try_id()`, so orders
//!   among their async locks are learned and cycles reported wherever the tasks run; without
//!   the poll boundaries, async → blocking orders and blocking guards held across an await
//!   are not seen. Outside any task (the future of `block_on` itself), an acquisition is
//!   validated against what the thread holds and not held afterwards. See [`crate::task`].
//! - `blocking_lock` / `blocking_read` / `blocking_write` block the OS thread, so their
//!   locks are held by the thread, as a blocking lock is.
//! - Guards are `Send`, as tokio's; one dropped by another task or thread releases its
//!   owner task's entry.

mod auto;
mod held;
mod mutex;
mod rwlock;
mod rwlock_guard;
mod rwlock_owned;

pub use mutex::{MappedMutexGuard, Mutex, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard};
pub use rwlock::RwLock;
pub use rwlock_guard::{RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard};
pub use rwlock_owned::{OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard};
pub use tokio::sync::TryLockError;
