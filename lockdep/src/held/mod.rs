//! The held-lock stack of one thread (the kernel's `task_struct::held_locks[]` with
//! `lockdep_depth` and `curr_chain_key`), as plain data: no thread-local, no lock, no report.
//!
//! - [`entry`]: one held lock as a value, and the chain key it adds.
//! - [`slot`]: one held lock as it is stored (eight atomic words, one cache line, written by the owner only).
//! - [`stack`]: a thread's stack with the bookkeeping that must stay consistent with it (chain
//!   keys, pin and nest counts); every push, release and clear goes through it.
//! - [`record`]: the shared home of a stack's slots, which other threads read (the
//!   all-threads dump, the cross-thread checks, the watchdog), and the mailbox through which
//!   they ask its owner to drop entries. A thread without a record keeps the same slots in a
//!   private array.
//!
//! The thread-local that holds each thread's stack, and the operations that report (release,
//! freed memory, thread exit), are in [`thread`](crate::thread).

mod entry;
pub(crate) mod record;
pub(crate) mod slot;
mod stack;

pub(crate) use entry::{pair_key, HeldLock};
pub use record::Holder;
pub(crate) use slot::Find;
pub(crate) use stack::{FastTop, Left, Plain, ThreadState};
