//! The wait-for graph of one moment: from copies of every thread's record, which thread holds
//! the lock each blocked thread waits for, and where following those edges leads (a thread
//! that runs, or a cycle: a deadlock).

use crate::held::record::{Holder, Snapshot};

/// Where following the wait-for edges from one blocked thread leads. Indices into the copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Chain {
    /// `path[0]` waits for a lock `path[1]` holds, and so on; the last thread is not blocked
    /// (or holds nothing anyone tracks).
    Path(Vec<usize>),
    /// The threads `lead_in` wait into the cycle `cycle`, in which each thread waits for a
    /// lock the next one holds, and the last for one the first holds.
    Cycle {
        lead_in: Vec<usize>,
        cycle: Vec<usize>,
    },
}

/// The wait-for edges among copies of the records.
pub(crate) struct WaitFor<'a> {
    snaps: &'a [Snapshot],
    /// Per copy: the instances it holds (the one it waits for, or the mutex of the condvar
    /// wait it sleeps in, left out).
    held: Vec<Vec<usize>>,
}

impl<'a> WaitFor<'a> {
    pub(crate) fn new(snaps: &'a [Snapshot]) -> WaitFor<'a> {
        let held = snaps
            .iter()
            .map(|s| s.split().0.iter().map(|e| e.instance).collect())
            .collect();
        WaitFor { snaps, held }
    }

    /// The instance copy `i` waits for. Not the mutex of a condvar wait it sleeps in: that
    /// thread waits for a notification, not for the mutex's holder (an edge to the holder
    /// would be false, and one to the sleeper, from a thread that waits for the mutex, too:
    /// the sleeper's copy does not count the mutex among its held locks).
    pub(crate) fn waits_for(&self, i: usize) -> Option<usize> {
        self.snaps[i].wait.and_then(|w| w.lock())
    }

    /// The first other copy that holds `instance` (a shared lock may have several holders;
    /// one is enough to follow).
    pub(crate) fn holder_of(&self, instance: usize, except: usize) -> Option<usize> {
        (0..self.snaps.len()).find(|&j| j != except && self.held[j].contains(&instance))
    }

    /// Follows the edges from copy `start`.
    pub(crate) fn chain(&self, start: usize) -> Chain {
        let mut path = vec![start];
        let mut cur = start;
        loop {
            let Some(h) = self
                .waits_for(cur)
                .and_then(|inst| self.holder_of(inst, cur))
            else {
                return Chain::Path(path);
            };
            if let Some(pos) = path.iter().position(|&p| p == h) {
                let cycle = path.split_off(pos);
                return Chain::Cycle {
                    lead_in: path,
                    cycle,
                };
            }
            path.push(h);
            cur = h;
        }
    }

    /// Every distinct cycle, each once, each starting at its lowest index.
    pub(crate) fn cycles(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::new();
        for i in 0..self.snaps.len() {
            if let Chain::Cycle { cycle, .. } = self.chain(i) {
                let low = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
                let mut c = cycle.clone();
                c.rotate_left(low);
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The holding and lock-wait number of copy `i` (what stays the same while it stays
    /// blocked; no number while it sleeps in a condvar wait, which is not blocked on a lock).
    pub(crate) fn wait_id(&self, i: usize) -> (Holder, Option<u64>) {
        let s = &self.snaps[i];
        (
            s.holder,
            s.wait.filter(|w| w.lock().is_some()).map(|w| w.count),
        )
    }
}

/// True if every copy in `members` shows, in `again` (fresh copies), the same holding still
/// in the same wait: then they were all blocked at one moment, the latest of the first
/// copies, and a cycle among them is a deadlock (a blocked thread's stack does not change).
pub(crate) fn still_blocked(first: &WaitFor<'_>, members: &[usize], again: &[Snapshot]) -> bool {
    members.iter().all(|&m| {
        let (holder, count) = first.wait_id(m);
        count.is_some()
            && again
                .iter()
                .any(|s| s.holder == holder && s.wait.map(|w| w.count) == count)
    })
}
