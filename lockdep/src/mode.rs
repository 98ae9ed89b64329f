//! How a lock is held ([`Mode`]) and the kind of dependency two holdings make ([`DepKind`]).

use std::fmt;

/// How a lock is being acquired.
///
/// This is the kernel's `read` argument of `lock_acquire()`: 0 = exclusive, 1 = non-recursive
/// read, 2 = recursive read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A writer or a plain mutex (`Mutex::lock`, `RwLock::write`).
    Exclusive,
    /// A shared acquire that can block behind a *waiting* writer (`RwLock::read` on a fair
    /// lock, `down_read` in the kernel). Two of these on one class in one thread may deadlock.
    Read,
    /// A shared acquire that blocks only behind a writer that *holds* the lock
    /// (parking_lot `read_recursive`, the kernel's `read_lock` under `force_read_lock_recursive`).
    RecursiveRead,
}

impl Mode {
    /// True for both kinds of reader.
    pub fn is_read(self) -> bool {
        !matches!(self, Mode::Exclusive)
    }

    /// A small integer for hashing (the kernel's `read` value).
    pub(crate) fn code(self) -> u64 {
        match self {
            Mode::Exclusive => 0,
            Mode::Read => 1,
            Mode::RecursiveRead => 2,
        }
    }

    /// The verb the kernel prints in the unsafe-scenario block (`lock(` or `rlock(`).
    pub(crate) fn verb(self) -> &'static str {
        if self.is_read() {
            "rlock"
        } else {
            "lock"
        }
    }
}

/// The kind of one dependency `prev -> next`, after lockdep's recursive-read model
/// (Boqun Feng, 2020; `Documentation/locking/lockdep-design.rst`).
///
/// The first letter says how `prev` was held (**E**xclusive or **S**hared, i.e. any reader);
/// the second how `next` was taken (**R**ecursive reader or **N**on-recursive: a writer or a
/// non-recursive reader). A cycle is a deadlock only if it is *strong*: no edge ending in R
/// is directly followed by an edge starting with S.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DepKind {
    /// prev held exclusively, next taken non-recursively.
    EN,
    /// prev held as a reader, next taken non-recursively.
    SN,
    /// prev held exclusively, next taken as a recursive reader.
    ER,
    /// prev held as a reader, next taken as a recursive reader.
    SR,
}

impl DepKind {
    /// All four kinds, in bit order.
    pub const ALL: [DepKind; 4] = [DepKind::EN, DepKind::SN, DepKind::ER, DepKind::SR];

    /// The kind of the dependency created by taking `next` in mode `next` while `prev` is
    /// held in mode `prev`.
    pub fn of(prev: Mode, next: Mode) -> DepKind {
        match (prev.is_read(), next == Mode::RecursiveRead) {
            (false, false) => DepKind::EN,
            (true, false) => DepKind::SN,
            (false, true) => DepKind::ER,
            (true, true) => DepKind::SR,
        }
    }

    /// One bit per kind, for a kind set stored as a `u8`.
    pub(crate) fn bit(self) -> u8 {
        match self {
            DepKind::EN => 1,
            DepKind::SN => 2,
            DepKind::ER => 4,
            DepKind::SR => 8,
        }
    }

    pub(crate) fn index(self) -> usize {
        self.bit().trailing_zeros() as usize
    }

    /// True if `prev` was held as a reader (first letter S).
    pub fn starts_shared(self) -> bool {
        matches!(self, DepKind::SN | DepKind::SR)
    }

    /// True if `next` was taken as a recursive reader (second letter R).
    pub fn ends_recursive(self) -> bool {
        matches!(self, DepKind::ER | DepKind::SR)
    }

    /// The kinds present in a bit set.
    pub(crate) fn kinds_in(bits: u8) -> impl Iterator<Item = DepKind> {
        DepKind::ALL
            .into_iter()
            .filter(move |k| bits & k.bit() != 0)
    }
}

impl fmt::Display for DepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            DepKind::EN => "EN",
            DepKind::SN => "SN",
            DepKind::ER => "ER",
            DepKind::SR => "SR",
        };
        f.write_str(s)
    }
}
