//! The held-lock stack of one thread (the kernel's `task_struct::held_locks[]` with
//! `lockdep_depth` and `curr_chain_key`), as plain data: no thread-local, no lock, no report.
//!
//! - [`entry`]: one held lock, and the chain key it adds.
//! - [`stack`]: a thread's stack with the bookkeeping that must stay consistent with it (chain
//!   keys, pin and nest counts); every push, release and clear goes through it.
//!
//! The thread-local that holds each thread's stack, and the operations that report (release,
//! freed memory, thread exit), are in [`thread`](crate::thread).

mod entry;
mod stack;

pub(crate) use entry::HeldLock;
pub(crate) use stack::{Left, ThreadState};
