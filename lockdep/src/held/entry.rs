//! One entry of a thread's held-lock stack (the kernel's `struct held_lock`), as a value: what
//! a push is made of and what a report reads. The stack stores it as a
//! [`Slot`](super::slot::Slot).

use std::panic::Location;

use crate::chain;
use crate::class::ClassId;
use crate::mode::Mode;

/// The key of lock instance `instance` with pair tag `tag` in the instance-order pairs (see
/// `LockMap::pair_key`): the tag in the address's top 16 bits, which user-space addresses
/// leave 0 on the usual 64-bit targets (an address that uses them still gives a key, only
/// not one that shows the address).
#[inline(always)]
pub(crate) const fn pair_key(instance: usize, tag: u16) -> usize {
    instance ^ ((tag as usize) << 48)
}

/// One held lock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeldLock {
    pub class: ClassId,
    /// Address of the lock map: the lock instance.
    pub instance: usize,
    /// The map's name, or its kind if it has none.
    pub name: &'static str,
    /// Whether `name` is a name (else a kind).
    pub named: bool,
    pub mode: Mode,
    pub trylock: bool,
    pub subclass: u8,
    /// Instance address of the nest_lock this acquisition was made under, or 0.
    pub nest_lock: usize,
    pub site: &'static Location<'static>,
    /// Chain key of the stack up to and including this entry; set by the stack when the entry
    /// is pushed (see [`ThreadState::next`](super::ThreadState::next)).
    pub chain_key: u64,
    /// `lockdep_pin_lock()` count; releasing a pinned lock is reported. 16 bits (pins past
    /// 65,535 on one lock saturate), so that it shares a word of the slot.
    pub pin_count: u16,
    /// Set once an instance pair *from* this lock was checked: its map must learn, when the
    /// lock is released, that it has pairs to forget when it is freed.
    pub paired: bool,
    /// Set only on the entry an upgrade validates (an upgradable read becoming exclusive):
    /// its dependencies are an acquisition's that waits for the lock's readers only (see
    /// [`acquired_as`](Self::acquired_as)), and its chain key is apart from a plain write's.
    /// Never stored: an entry read back from its slot has it clear.
    pub upgrade: bool,
    /// The lock map's pair tag (see `LockMap::pair_key`): with `instance`, the lock's key in
    /// the instance-order pairs.
    pub tag: u16,
}

impl HeldLock {
    /// The lock's key in the instance-order pairs: its instance with its map's pair tag (see
    /// `LockMap::pair_key`).
    #[inline]
    pub fn pair_key(&self) -> usize {
        pair_key(self.instance, self.tag)
    }

    /// The mode the acquisition's dependencies are recorded in: its own, but for an upgrade,
    /// which is validated as a plain read. An upgrade waits only for the lock's readers (no
    /// other thread can hold it upgradable or exclusively while this one holds it
    /// upgradable); a plain read waits for readers (behind a queued writer) and for writers,
    /// never for an upgradable holder. So the upgrade gets a read's verdicts: none for a
    /// cycle through another thread's upgradable holding of the lock (which cannot exist),
    /// and still one for a cycle through an exclusive holding (an over-approximation, never
    /// a miss).
    #[inline]
    pub fn acquired_as(&self) -> Mode {
        HeldLock::mode_acquired_as(self.mode, self.upgrade)
    }

    /// [`acquired_as`](Self::acquired_as) of an acquisition in `mode`, an upgrade's if
    /// `upgrade`, before its entry is made.
    #[inline(always)]
    pub fn mode_acquired_as(mode: Mode, upgrade: bool) -> Mode {
        if upgrade {
            Mode::Read
        } else {
            mode
        }
    }

    /// The name, if the lock has one.
    pub fn name_if_any(&self) -> Option<&'static str> {
        self.named.then_some(self.name)
    }

    /// The chain key of a stack whose top key is `below` with this entry pushed on it. The one
    /// place that decides which fields make a chain distinct: the class, the mode, the trylock
    /// flag, and whether a nest_lock covers the entry.
    #[inline]
    pub fn chain_key_on(&self, below: u64) -> u64 {
        let key =
            HeldLock::chain_key_of(below, self.class, self.mode, self.trylock, self.nest_lock);
        if self.upgrade {
            chain::upgrade_key(key)
        } else {
            key
        }
    }

    /// [`chain_key_on`](Self::chain_key_on) of an entry with these fields, before the entry
    /// is made (the fast path checks the chain cache first, and gathers the rest of the entry
    /// only for a hit).
    #[inline]
    pub fn chain_key_of(
        below: u64,
        class: ClassId,
        mode: Mode,
        trylock: bool,
        nest_lock: usize,
    ) -> u64 {
        chain::extend(below, class, mode, trylock, nest_lock != 0)
    }
}

#[cfg(test)]
impl HeldLock {
    /// A plain exclusive entry of `instance` (its class's slot: the instance, modulo the
    /// class limit), chain key 0, for unit tests.
    pub(crate) fn for_test(instance: usize) -> HeldLock {
        HeldLock {
            class: ClassId::new((instance % crate::limits::MAX_CLASSES) as u32, 1),
            instance,
            name: "L",
            named: true,
            mode: Mode::Exclusive,
            trylock: false,
            subclass: 0,
            nest_lock: 0,
            site: Location::caller(),
            chain_key: 0,
            pin_count: 0,
            paired: false,
            upgrade: false,
            tag: 0,
        }
    }
}
