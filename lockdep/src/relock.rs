//! Release-and-relock: taking a held lock again as it was taken.
//!
//! A condvar wait, lock_api's `unlocked` and `bump` release a held lock and take it again. The
//! re-acquisition must be validated as the first one was: with the same mode, subclass and
//! nest lock. The mode is usually the guard's own (its type says it), but the subclass
//! (`lock_nested`) and the nest lock (`lock_nest_lock`) are facts of the acquisition, which
//! this thread's held-lock entry of the lock already records. So a lock wrapper need not carry
//! them in every guard: before the release it asks for them ([`relock_of`]), and after it
//! gives them back ([`relock`]). A guard then stays one word, as a plain lock's guard is.
//!
//! The kernel has no such call: its sleeping waits (`schedule()` under a mutex) never release
//! the lock, and `lock_set_subclass()` re-acquires in place. This is the userspace condvar's
//! need, where the wait really unlocks.

use std::panic::Location;

use crate::held::Find;
use crate::lock_stat;
use crate::map::LockMap;
use crate::mode::Mode;
use crate::thread::with_state;
use crate::validate;

/// How a held lock was acquired beyond its mode: its subclass and its nest lock. What a
/// release-and-relock needs to validate the re-acquisition as the first one was.
///
/// From [`relock_of`] (this thread's entry), or [`Relock::new`] (a wrapper that kept the
/// facts itself: a guard that may move to another thread, whose entry is not on the stack of
/// the thread that relocks). The default is subclass 0 with no nest lock. `Copy`, two words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Relock {
    subclass: u8,
    /// The nest lock's instance address, or 0.
    nest: usize,
}

impl Relock {
    /// Subclass 0, no nest lock (the default, as a constant).
    pub const NONE: Relock = Relock {
        subclass: 0,
        nest: 0,
    };

    /// An acquisition as subclass `subclass`, under the nest lock `nest` if any.
    #[inline]
    pub fn new(subclass: u8, nest: Option<&LockMap>) -> Relock {
        Relock {
            subclass,
            nest: nest.map_or(0, LockMap::instance),
        }
    }

    /// The acquisition's subclass.
    #[inline]
    pub fn subclass(self) -> u8 {
        self.subclass
    }

    /// Whether the acquisition was made under a nest lock.
    #[inline]
    pub fn has_nest_lock(self) -> bool {
        self.nest != 0
    }
}

/// The subclass and nest lock of this thread's entry of `map` held in `mode` (the topmost
/// such, else the topmost entry of the lock, as [`release_mode`](crate::release_mode) finds
/// it). Call it before the release. If this thread holds no entry of `map`, the default (the
/// release that follows reports the bad unlock balance). Thread-local, no lock taken: a
/// search of this thread's held stack from the top.
pub fn relock_of(map: &LockMap, mode: Mode) -> Relock {
    let find = Find::in_mode(map.instance(), mode);
    // The usual case with no borrow of the state (a third of a zero-timeout condvar wait's
    // validation cost went to the borrow and the entry's whole copy).
    // SAFETY: used only here; `relock_facts` reads the stack and makes no call.
    if let Some(facts) = unsafe { crate::thread::state_fast() }.and_then(|st| st.relock_facts(find))
    {
        return facts.map_or(Relock::NONE, |(subclass, nest)| Relock { subclass, nest });
    }
    with_state(|st| {
        let i = st.find_release(find)?;
        let entry = st.entry(i);
        Some(Relock {
            subclass: entry.subclass,
            nest: entry.nest_lock,
        })
    })
    .flatten()
    .unwrap_or_default()
}

/// Validates this thread's re-acquisition of `map` in `mode`, as it was acquired before its
/// release ([`relock_of`]): [`acquire`](crate::acquire) of a blocking acquisition with that
/// subclass and nest lock. Call it before the real re-lock may block. A nest lock that is no
/// longer held is reported as for `acquire` (the report names it by its address only: the
/// name was not kept).
///
/// Thread-safe. Panics only if the policy is [`Policy::Panic`](crate::Policy) and there is a
/// report.
#[inline]
pub fn relock(map: &LockMap, mode: Mode, how: Relock, site: &'static Location<'static>) {
    if how.nest == 0 {
        crate::acquire(map, how.subclass, mode, false, None, site);
    } else {
        validate::acquire_with(map, how.subclass, mode, false, how.nest, None, site, false);
        if lock_stat::on() {
            lock_stat::acquire(map, how.subclass, mode);
        }
    }
}
