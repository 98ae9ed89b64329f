//! The state word of [`RawRwLock`](super::RawRwLock) and what each kind of waiter wants.
//!
//! # State word (`usize`)
//!
//! | bits  | name            | meaning                                                      |
//! | ----- | --------------- | ------------------------------------------------------------ |
//! | 0     | `PARKED`        | threads may be parked on the **queue key** (the lock's address) |
//! | 1     | `WRITER_PARKED` | the `WRITER` owner is parked on the **writer key** (address + 1), waiting for readers to leave |
//! | 2     | `UPGRADABLE`    | an upgradable reader holds the lock (it is also counted in `READERS`) |
//! | 3     | `WRITER`        | a writer owns the lock, or has claimed it and waits for the readers still inside |
//! | 4..   | `READERS`       | number of shared holders, upgradable one included, in units of `READER` |
//!
//! Who may enter, as a function of the word ([`Want::blocked_by`]):
//!
//! - plain reader: not while `WRITER` is set. This is the writer preference: once a writer
//!   has claimed `WRITER` (it does so as soon as no writer or upgradable holds the lock, even
//!   with readers inside), new readers queue behind it, so a stream of readers cannot starve
//!   it.
//! - recursive reader: also while `WRITER` is set, as long as readers are still inside (the
//!   writer is then only waiting for them): a thread that already holds a read lock and reads
//!   again must not wait for a writer that waits for it.
//! - upgradable reader and writer: not while `WRITER` or `UPGRADABLE` is set; so at most one
//!   upgradable holder, and it coexists with plain readers only.
//!
//! A writer therefore acquires in two phases: (1) claim `WRITER` (queueing on the queue key
//! like everybody else), (2) wait until `READERS` drops to zero, parked alone on the writer key
//! with `WRITER_PARKED` set; the last reader out sees `READER | WRITER_PARKED` in the value its
//! `fetch_sub` returned and wakes it. An upgrade swaps its `READER | UPGRADABLE` for `WRITER`
//! in one `fetch_add` and runs phase (2). There is at most one thread on the writer key,
//! since only the `WRITER` owner parks there.
//!
//! # Park tokens
//!
//! A thread parked on the queue key carries as its `ParkToken` the bits it would add to the
//! word if handed the lock ([`Want::grant`]): `READER`, `READER | UPGRADABLE` or `WRITER`. An
//! unlocker walks the queue in FIFO order with `unpark_filter` and wakes every reader, at most
//! one upgradable reader or writer, and nothing after a writer; for a fair unlock it adds the
//! sum of the woken tokens to the word in its callback and sends `TOKEN_HANDOFF`, so the woken
//! threads own the lock on return (a writer woken so still runs phase 2).

use parking_lot_core::ParkToken;

pub(super) const PARKED: usize = 0b0001;
pub(super) const WRITER_PARKED: usize = 0b0010;
pub(super) const UPGRADABLE: usize = 0b0100;
pub(super) const WRITER: usize = 0b1000;
pub(super) const READER: usize = 0b1_0000;
pub(super) const READERS: usize = !(READER - 1);

/// What a thread asks of the lock.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Want {
    /// `lock_shared`: a plain reader.
    Shared,
    /// `lock_shared_recursive`: a reader that may already hold a read lock.
    SharedRecursive,
    /// `lock_upgradable`.
    Upgradable,
    /// `lock_exclusive` (phase 1: claiming `WRITER`).
    Exclusive,
}

impl Want {
    /// Whether the word `state` forbids this kind of thread to enter now.
    #[inline]
    pub(super) fn blocked_by(self, state: usize) -> bool {
        match self {
            Want::Shared => state & WRITER != 0,
            Want::SharedRecursive => state & WRITER != 0 && state & READERS == 0,
            Want::Upgradable | Want::Exclusive => state & (WRITER | UPGRADABLE) != 0,
        }
    }

    /// The bits this kind adds to the word when it enters.
    #[inline]
    pub(super) fn grant(self) -> usize {
        match self {
            Want::Shared | Want::SharedRecursive => READER,
            Want::Upgradable => READER | UPGRADABLE,
            Want::Exclusive => WRITER,
        }
    }

    /// The token it parks with on the queue key: its grant.
    #[inline]
    pub(super) fn token(self) -> ParkToken {
        ParkToken(self.grant())
    }
}

/// Reports a reader count that would overflow the word (only possible by leaking read guards).
#[cold]
#[inline(never)]
pub(super) fn reader_overflow() -> ! {
    panic!("RawRwLock reader count overflow (more shared holders than the state word counts)")
}
