//! The calling thread's validator state and the operations on it that may report: the
//! thread-local itself (and its check at thread exit), release, freed memory, and the
//! held-lock queries, and the checks that read other threads' held locks.
//!
//! The stack itself, as data, is [`held`](crate::held); the reports are built by
//! [`report::build`](crate::report::build).

mod freed;
mod local;
mod orphans;
mod others;
mod query;
mod release;

pub(crate) use freed::check_no_locks_freed;
pub(crate) use local::{current_thread, state_fast, with_state};
pub(crate) use orphans::set_movable;
pub(crate) use others::{
    check_freed_elsewhere, current_holder, forget_own_chains, key_holders, post_mode_change,
    post_release, snapshots,
};
pub(crate) use query::holds_key;
pub(crate) use release::{release, release_below, release_fast, report_release, Release};
