//! The shared scan's waiter record, and the intrusive lists of them.
//!
//! Each `synchronize` caller that waits in the shared scan has one [`Waiter`] on its own
//! stack for the whole wait (no allocation). A waiter is in exactly one list at a time:
//! the open batch, then a closed batch (owned by its combiner), then, if the combiner's
//! sweep found it blocked, the blocked list (owned by the poller while it polls), until
//! it is served.
//!
//! Access protocol (what makes the cells below race-free):
//! * `next` and `outcome` belong to whoever owns the list the waiter is in: the batch lock
//!   holder for the open batch and the blocked list, the combiner for its closed batch,
//!   the poller for the waiters it took out of the blocked list. Ownership passes under
//!   the batch lock.
//! * `state` is accessed under the batch lock only. Once it is `Served` and the lock is
//!   released, nobody touches the record again, so the waiter may return and its stack
//!   frame may go.

use std::ptr;

use crate::primitive::{Condvar, UnsafeCell};
use crate::scan::Cursor;
use crate::slot::Observation;

/// Where a waiter is in its wait (under the batch lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// In the open batch, or in a closed batch that its combiner is sweeping.
    Queued,
    /// The sweep found a slot blocking its address: in the blocked list, or being polled.
    Blocked,
    /// Its wait is over: no slot that protected its address still does.
    Served,
}

/// Where the scan for one waiter stands.
#[derive(Clone, Copy)]
pub(crate) enum Outcome<'d> {
    /// No slot blocks the waiter (also the state before the sweep).
    Clear,
    /// The first slot, in scan order, that still blocks the waiter after its batch's flip
    /// of `generation`, and how it was seen.
    Blocked {
        generation: usize,
        at: Cursor<'d>,
        seen: Observation,
    },
}

/// One waiting `synchronize` caller (see the module docs for the access protocol).
pub(crate) struct Waiter<'d> {
    pub(crate) addr: usize,
    next: UnsafeCell<*const Waiter<'d>>,
    outcome: UnsafeCell<Outcome<'d>>,
    state: UnsafeCell<State>,
    /// This waiter's own wake-up, used with the batch lock: it was served, elected to
    /// combine the open batch, or elected to poll the blocked list.
    pub(crate) wake: Condvar,
}

/// Proof that the batch lock is held (the lock's guarded state hands it out).
pub(crate) struct Locked<'a>(pub(crate) std::marker::PhantomData<&'a mut ()>);

impl<'d> Waiter<'d> {
    pub(crate) fn new(addr: usize) -> Self {
        Waiter {
            addr,
            next: UnsafeCell::new(ptr::null()),
            outcome: UnsafeCell::new(Outcome::Clear),
            state: UnsafeCell::new(State::Queued),
            wake: Condvar::new(),
        }
    }

    /// Protocol: the owner of the list this waiter is in.
    pub(crate) fn outcome(&self) -> Outcome<'d> {
        // SAFETY: only the owner of the waiter's list reads or writes `outcome`, and the
        // waiter itself only after it was served (module docs): never concurrent.
        self.outcome.with(|p| unsafe { *p })
    }

    /// Protocol: the owner of the list this waiter is in.
    pub(crate) fn set_outcome(&self, outcome: Outcome<'d>) {
        // SAFETY: as in `outcome`.
        self.outcome.with_mut(|p| unsafe { *p = outcome })
    }

    /// Protocol: under the batch lock.
    pub(crate) fn state(&self, _locked: &Locked<'_>) -> State {
        // SAFETY: `state` is accessed under the batch lock only, which `_locked` proves.
        self.state.with(|p| unsafe { *p })
    }

    /// Protocol: under the batch lock.
    pub(crate) fn set_state(&self, state: State, _locked: &Locked<'_>) {
        // SAFETY: as in `state`.
        self.state.with_mut(|p| unsafe { *p = state })
    }
}

/// An intrusive stack of waiters linked through `Waiter::next`. Lifetime-erased: every
/// waiter of one domain borrows the same domain, whose registry every cursor points into.
pub(crate) struct List {
    head: *const Waiter<'static>,
    pub(crate) len: usize,
}

// SAFETY: the pointers name `Waiter` records of threads blocked in `SharedScan::wait`, each
// valid until it is served, and a `List` is only used by the owner of its waiters (module
// docs).
unsafe impl Send for List {}

impl List {
    pub(crate) const fn new() -> Self {
        List {
            head: ptr::null(),
            len: 0,
        }
    }

    /// Push `w` (owned by the caller from now on, per the module docs).
    pub(crate) fn push(&mut self, w: &Waiter<'_>) {
        let head = self.head;
        // SAFETY: the caller owns `w` (it is in no other list), so nobody else reads or
        // writes its link.
        w.next.with_mut(|p| unsafe { *p = head.cast() });
        self.head = ptr::from_ref(w).cast();
        self.len += 1;
    }

    /// Take every waiter out, leaving the list empty.
    pub(crate) fn take(&mut self) -> List {
        std::mem::replace(self, List::new())
    }

    /// Move every waiter of `other` here.
    pub(crate) fn append(&mut self, other: List) {
        for w in other.drain() {
            self.push(w);
        }
    }

    /// The newest waiter.
    pub(crate) fn first<'l, 'd: 'l>(&'l self) -> Option<&'l Waiter<'d>> {
        // SAFETY: waiters in a list are alive until served, which removes them first.
        unsafe { self.head.cast::<Waiter<'d>>().as_ref() }
    }

    /// Every waiter, newest first.
    pub(crate) fn iter<'l, 'd: 'l>(&'l self) -> impl Iterator<Item = &'l Waiter<'d>> + 'l {
        std::iter::successors(self.first(), |w| {
            // SAFETY: the list's owner reads links (module docs).
            let next = w.next.with(|p| unsafe { *p });
            // SAFETY: as in `first`, for every later waiter of the list.
            unsafe { next.as_ref() }
        })
    }

    /// Take the waiters out one by one (each is then owned by the caller alone).
    pub(crate) fn drain<'l, 'd: 'l>(self) -> impl Iterator<Item = &'l Waiter<'d>> {
        let mut head = self.head;
        std::iter::from_fn(move || {
            // SAFETY: as in `first`; the waiter stays alive until it is served, which the
            // caller does only after this iterator handed it out.
            let w: &'l Waiter<'d> = unsafe { head.cast::<Waiter<'d>>().as_ref()? };
            // SAFETY: the list's owner reads links (module docs).
            head = w.next.with(|p| unsafe { *p }).cast();
            Some(w)
        })
    }

    /// Remove `w` if it is in the list.
    pub(crate) fn remove(&mut self, w: &Waiter<'_>) -> bool {
        let target: *const Waiter<'static> = ptr::from_ref(w).cast();
        let mut kept = List::new();
        let mut found = false;
        for x in self.take().drain() {
            if ptr::eq(ptr::from_ref(x).cast(), target) {
                found = true;
            } else {
                kept.push(x);
            }
        }
        *self = kept;
        found
    }
}

#[cfg(test)]
mod tests {
    use super::{List, Waiter};

    fn addrs(list: &List) -> Vec<usize> {
        list.iter().map(|w| w.addr).collect()
    }

    #[test]
    fn a_list_is_a_stack_that_can_take_append_and_remove() {
        let ws: Vec<Waiter<'static>> = (1..=4).map(|i| Waiter::new(i * 16)).collect();
        let mut a = List::new();
        ws[..2].iter().for_each(|w| a.push(w));
        assert_eq!((addrs(&a), a.len), (vec![32, 16], 2));
        assert_eq!(a.first().map(|w| w.addr), Some(32));
        let mut b = List::new();
        ws[2..].iter().for_each(|w| b.push(w));
        a.append(b.take());
        assert_eq!((b.len, b.first().is_none()), (0, true));
        let mut got = addrs(&a);
        got.sort_unstable();
        assert_eq!((got, a.len), (vec![16, 32, 48, 64], 4));
        assert!(a.remove(&ws[1]));
        assert!(!a.remove(&ws[1]), "removed twice");
        let mut got = addrs(&a);
        got.sort_unstable();
        assert_eq!((got, a.len), (vec![16, 48, 64], 3));
        let drained: Vec<usize> = a.take().drain().map(|w| w.addr).collect();
        assert_eq!(drained.len(), 3);
        assert_eq!(a.len, 0);
    }
}
