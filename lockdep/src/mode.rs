//! How a lock is held ([`Mode`]), which holdings block which acquisitions ([`blocks`]), and
//! the kind of dependency two holdings make ([`Kind`] inside the graph, [`DepKind`] in reports).

use std::fmt;

/// How a lock is being acquired (and then held).
///
/// The first three are the kernel's `read` argument of `lock_acquire()`: 0 = exclusive,
/// 1 = non-recursive read, 2 = recursive read. [`Mode::Upgradable`] is parking_lot's
/// upgradable read, which the kernel does not have.
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
    /// parking_lot's `upgradable_read`. Held, it is shared with plain and recursive readers
    /// and exclusive with writers and other upgradable holders (no writer can even queue
    /// while it is held). Acquired, it is blocked by writers, by upgradable holders and,
    /// through a waiting writer, by readers. [`upgrade`](crate::upgrade) turns it into
    /// [`Mode::Exclusive`].
    Upgradable,
}

impl Mode {
    /// True for every shared holding: both kinds of reader and the upgradable read.
    pub fn is_read(self) -> bool {
        !matches!(self, Mode::Exclusive)
    }

    /// A small integer for hashing and bit sets (the kernel's `read` value; 3 for
    /// upgradable), below 4: also the mode bits of a held slot's first word and `meta`.
    #[inline(always)]
    pub(crate) const fn code(self) -> u64 {
        match self {
            Mode::Exclusive => 0,
            Mode::Read => 1,
            Mode::RecursiveRead => 2,
            Mode::Upgradable => 3,
        }
    }

    /// The mode of [`code`](Self::code) `code`'s two low bits (the rest ignored).
    #[inline(always)]
    pub(crate) const fn from_code(code: u64) -> Mode {
        match code & 3 {
            0 => Mode::Exclusive,
            1 => Mode::Read,
            2 => Mode::RecursiveRead,
            _ => Mode::Upgradable,
        }
    }

    /// The verb the kernel prints in the unsafe-scenario block (`lock(`, `rlock(`; `ulock(`
    /// for an upgradable read).
    pub(crate) fn verb(self) -> &'static str {
        match self {
            Mode::Exclusive => "lock",
            Mode::Read | Mode::RecursiveRead => "rlock",
            Mode::Upgradable => "ulock",
        }
    }
}

/// Can an acquisition in mode `acquirer` wait for a thread that holds the same lock in mode
/// `holder`? The one rule every same-lock check and the strong-path search are built on.
///
/// | acquirer \ holder | Exclusive | Read, RecursiveRead | Upgradable |
/// |---|---|---|---|
/// | Exclusive, Upgradable | waits | waits | waits |
/// | Read | waits | waits (behind a writer queued after the holder) | no: no writer can queue while an upgradable read is held |
/// | RecursiveRead | waits | no | no |
///
/// For the kernel's three modes this is the recursive-read model of
/// `Documentation/locking/lockdep-design.rst`; the upgradable row and column follow
/// parking_lot's `RawRwLock` (`lock_upgradable` fails while a writer or an upgradable holder
/// has the lock; a writer cannot queue while an upgradable read is held).
#[inline]
pub(crate) fn blocks(acquirer: Mode, holder: Mode) -> bool {
    match acquirer {
        Mode::Exclusive | Mode::Upgradable => true,
        Mode::Read => holder != Mode::Upgradable,
        Mode::RecursiveRead => holder == Mode::Exclusive,
    }
}

/// How the holder of a dependency's first lock held it: the part of a [`Mode`] that decides
/// which acquisitions it blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Hold {
    /// Exclusive.
    E,
    /// A plain or recursive reader.
    S,
    /// An upgradable reader.
    U,
}

impl Hold {
    pub(crate) fn of(m: Mode) -> Hold {
        match m {
            Mode::Exclusive => Hold::E,
            Mode::Read | Mode::RecursiveRead => Hold::S,
            Mode::Upgradable => Hold::U,
        }
    }

    /// A mode that holds like this.
    fn mode(self) -> Mode {
        match self {
            Hold::E => Mode::Exclusive,
            Hold::S => Mode::Read,
            Hold::U => Mode::Upgradable,
        }
    }

    fn index(self) -> usize {
        match self {
            Hold::E => 0,
            Hold::S => 1,
            Hold::U => 2,
        }
    }
}

/// The exact kind of one recorded dependency `prev -> next`: how `prev` was held and the mode
/// `next` was acquired in. Public reports show its [`DepKind`], which folds writers and plain
/// readers together as the kernel does; the graph keeps them apart, because an upgradable
/// holder blocks a writer but not a plain reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Kind {
    pub holder: Hold,
    pub acquirer: Mode,
}

impl Kind {
    /// The number of kinds (3 holds × 4 acquire modes): the width of a kind bit set.
    pub(crate) const COUNT: usize = 12;

    /// The kind made by acquiring `next` while `prev` is held in mode `prev`.
    pub(crate) fn of(prev: Mode, next: Mode) -> Kind {
        Kind {
            holder: Hold::of(prev),
            acquirer: next,
        }
    }

    /// 0..[`Kind::COUNT`].
    pub(crate) fn index(self) -> usize {
        self.holder.index() * 4 + self.acquirer.code() as usize
    }

    /// The inverse of [`index`](Self::index).
    pub(crate) fn from_index(i: usize) -> Kind {
        let holder = [Hold::E, Hold::S, Hold::U][i / 4];
        let acquirer = [
            Mode::Exclusive,
            Mode::Read,
            Mode::RecursiveRead,
            Mode::Upgradable,
        ][i % 4];
        Kind { holder, acquirer }
    }

    /// One bit per kind.
    pub(crate) fn bit(self) -> u16 {
        1 << self.index()
    }

    /// The kinds present in a bit set, in index order.
    pub(crate) fn kinds_in(bits: u16) -> impl Iterator<Item = Kind> {
        (0..Kind::COUNT)
            .filter(move |i| bits & (1 << i) != 0)
            .map(Kind::from_index)
    }

    /// May this dependency directly follow one that ended with an acquisition in mode
    /// `acquired` (of the lock this one starts from) in a deadlock cycle: can that acquisition
    /// wait for the holding that starts `self`? The generalized strong-path rule.
    #[inline]
    pub(crate) fn may_follow(self, acquired: Mode) -> bool {
        blocks(acquired, self.holder.mode())
    }

    /// The kind shown in reports.
    pub(crate) fn public(self) -> DepKind {
        DepKind::of(self.holder.mode(), self.acquirer)
    }
}

/// The kind of one dependency `prev -> next`, after lockdep's recursive-read model
/// (Boqun Feng, 2020; `Documentation/locking/lockdep-design.rst`), extended with upgradable
/// reads.
///
/// The first letter says how `prev` was held (**E**xclusive, **S**hared, i.e. a plain or
/// recursive reader, or **U**pgradable); the second how `next` was taken (**N**on-recursive:
/// a writer or a plain reader; **R**ecursive reader; **U**pgradable read, or an upgrade). The
/// kernel's four kinds (EN, SN, ER, SR) keep their names and meaning. A cycle is a deadlock
/// only if it is *strong*: along it, the acquisition that ends each dependency can wait for
/// the holding that starts the next one (see the table of `Mode`'s blocking rule in the crate
/// docs); for the kernel's kinds this is "no edge ending in R directly followed by an edge
/// starting with S".
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
    /// prev held as an upgradable reader, next taken non-recursively.
    UN,
    /// prev held as an upgradable reader, next taken as a recursive reader.
    UR,
    /// prev held exclusively, next taken as an upgradable reader (or upgraded).
    EU,
    /// prev held as a reader, next taken as an upgradable reader.
    SU,
    /// prev held as an upgradable reader, next taken as an upgradable reader.
    UU,
}

impl DepKind {
    /// All kinds: the kernel's four first.
    pub const ALL: [DepKind; 9] = [
        DepKind::EN,
        DepKind::SN,
        DepKind::ER,
        DepKind::SR,
        DepKind::UN,
        DepKind::UR,
        DepKind::EU,
        DepKind::SU,
        DepKind::UU,
    ];

    /// The kind of the dependency created by taking `next` in mode `next` while `prev` is
    /// held in mode `prev`.
    pub fn of(prev: Mode, next: Mode) -> DepKind {
        use Mode::*;
        match (Hold::of(prev), next) {
            (Hold::E, Exclusive | Read) => DepKind::EN,
            (Hold::S, Exclusive | Read) => DepKind::SN,
            (Hold::U, Exclusive | Read) => DepKind::UN,
            (Hold::E, RecursiveRead) => DepKind::ER,
            (Hold::S, RecursiveRead) => DepKind::SR,
            (Hold::U, RecursiveRead) => DepKind::UR,
            (Hold::E, Upgradable) => DepKind::EU,
            (Hold::S, Upgradable) => DepKind::SU,
            (Hold::U, Upgradable) => DepKind::UU,
        }
    }

    /// True if `prev` was held as a plain or recursive reader (first letter S).
    pub fn starts_shared(self) -> bool {
        matches!(self, DepKind::SN | DepKind::SR | DepKind::SU)
    }

    /// True if `prev` was held as an upgradable reader (first letter U).
    pub fn starts_upgradable(self) -> bool {
        matches!(self, DepKind::UN | DepKind::UR | DepKind::UU)
    }

    /// True if `next` was taken as a recursive reader (second letter R).
    pub fn ends_recursive(self) -> bool {
        matches!(self, DepKind::ER | DepKind::SR | DepKind::UR)
    }

    /// True if `next` was taken as an upgradable reader (second letter U).
    pub fn ends_upgradable(self) -> bool {
        matches!(self, DepKind::EU | DepKind::SU | DepKind::UU)
    }
}

impl fmt::Display for DepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Mode::*;

    const MODES: [Mode; 4] = [Exclusive, Read, RecursiveRead, Upgradable];

    #[test]
    fn the_kernel_modes_follow_the_recursive_read_rule() {
        // Only a recursive reader after a reader (or, here, after an upgradable reader) does
        // not wait; for the kernel's modes that is "no -(*R)-> before -(S*)->".
        for a in [Exclusive, Read, RecursiveRead] {
            for h in [Exclusive, Read, RecursiveRead] {
                let k = DepKind::of(h, a);
                assert_eq!(
                    blocks(a, h),
                    !(a == RecursiveRead && h.is_read()),
                    "{a:?} after {h:?} ({k})"
                );
            }
        }
    }

    #[test]
    fn upgradable_holders_block_only_writers_and_upgradables() {
        assert!(blocks(Exclusive, Upgradable));
        assert!(blocks(Upgradable, Upgradable));
        assert!(!blocks(Read, Upgradable));
        assert!(!blocks(RecursiveRead, Upgradable));
        // An upgradable acquisition waits for every holder (a writer queued behind a reader).
        for h in MODES {
            assert!(blocks(Upgradable, h), "{h:?}");
        }
    }

    #[test]
    fn kind_indexes_round_trip_and_project_to_the_public_kinds() {
        for p in MODES {
            for n in MODES {
                let k = Kind::of(p, n);
                assert_eq!(Kind::from_index(k.index()), k);
                assert_eq!(k.public(), DepKind::of(p, n));
            }
        }
        assert_eq!(Kind::of(Read, RecursiveRead).public(), DepKind::SR);
        assert_eq!(Kind::of(Exclusive, Read).public(), DepKind::EN);
        assert_eq!(Kind::of(Upgradable, Exclusive).public(), DepKind::UN);
        assert_eq!(Kind::of(Read, Upgradable).public(), DepKind::SU);
        assert_eq!(DepKind::UU.to_string(), "UU");
    }

    #[test]
    fn may_follow_distinguishes_writers_from_plain_readers_before_an_upgradable_holder() {
        let u_out = Kind::of(Upgradable, Exclusive); // the lock held upgradable
        assert!(u_out.may_follow(Exclusive));
        assert!(!u_out.may_follow(Read));
        assert!(!Kind::of(Read, Exclusive).may_follow(RecursiveRead));
        assert!(Kind::of(Exclusive, Read).may_follow(RecursiveRead));
    }
}
