//! Cross-crate integration and torture tests.
//!
//! [`torture`] is the analogue of the kernel's `hazptrtorture`: bounded stress runs of
//! `hazptr` (and of lockdep's dynamic keys on top of it) that check invariants: the pipe
//! count of every element a reader protects, poisoned memory, and objects freed exactly
//! once. The `hazptr-torture` binary and `scripts/torture.sh` run it by configuration.

pub mod torture;
