//! What the watchdog reports, and its text.

use std::fmt;
use std::time::Duration;

use crate::report::{banner, Report, ThreadLocks};

/// A report of the hung-lock watchdog ([`start_watchdog`](crate::start_watchdog)).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchdogReport {
    /// Threads blocked on each other's locks: a deadlock happening now.
    Deadlock(Deadlock),
    /// A thread blocked longer than the threshold behind a chain of holders that made no
    /// progress, without a cycle (the kernel's hung-task warning, for a lock).
    Hung(HungWait),
}

/// A deadlock that is happening: a cycle of threads, each blocked on a lock the next one
/// holds. Also what [`deadlocks_now`](crate::deadlocks_now) returns.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The threads of the cycle: each waits for a lock the next one holds, the last for one
    /// the first holds. Each with every lock it holds and the one it waits for.
    pub threads: Vec<ThreadLocks>,
    /// Threads blocked behind the cycle (waiting for a lock a thread of it holds, directly or
    /// through others), in the order of their chain.
    pub blocked_behind: Vec<ThreadLocks>,
    /// The potential deadlock the validator reported earlier whose classes are all among this
    /// deadlock's locks: the order it warned about, now happening. `None` if it reported none
    /// (a cycle through a lock it cannot see the order of, or a report that was suppressed).
    pub earlier: Option<Box<Report>>,
}

/// A thread blocked for longer than the threshold on a chain that made no progress.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HungWait {
    /// The blocked thread first; each waits for a lock the next one holds. The last one is
    /// not blocked on a tracked lock (it may compute, sleep, sleep in a condvar wait, see its
    /// [`condvar`](crate::ThreadLocks::condvar), or wait for something else).
    pub chain: Vec<ThreadLocks>,
    /// How long the chain had made no progress (no thread of it took, released or waited for
    /// a lock anew) when it was reported.
    pub stalled_for: Duration,
}

/// `a/3 is blocked on 0x.. (class), at: site, held by b/4`, one line per edge.
fn edges(f: &mut fmt::Formatter<'_>, threads: &[ThreadLocks], closed: bool) -> fmt::Result {
    for (i, t) in threads.iter().enumerate() {
        let Some(w) = &t.waiting else { continue };
        let next = if i + 1 < threads.len() {
            threads.get(i + 1)
        } else if closed {
            threads.first()
        } else {
            None
        };
        write!(
            f,
            "{}/{} is blocked on {:#x} ({}), at: {}",
            t.thread.name, t.thread.id, w.lock.instance, w.lock.class_name, w.lock.site
        )?;
        match next {
            Some(n) => writeln!(f, ", held by {}/{}", n.thread.name, n.thread.id)?,
            None => writeln!(f)?,
        }
    }
    Ok(())
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        banner(f, "WARNING: deadlock happening now!")?;
        writeln!(
            f,
            "{} threads are blocked on each other's locks, forever:",
            self.threads.len()
        )?;
        edges(f, &self.threads, true)?;
        if !self.blocked_behind.is_empty() {
            writeln!(f, "and blocked behind them:")?;
            edges(f, &self.blocked_behind, false)?;
        }
        for t in self.threads.iter().chain(&self.blocked_behind) {
            writeln!(f)?;
            write!(f, "{t}")?;
        }
        writeln!(f)?;
        match &self.earlier {
            Some(r) => {
                writeln!(
                    f,
                    "lockdep reported this order as a possible deadlock before:"
                )?;
                write!(f, "{r}")
            }
            None => writeln!(
                f,
                "lockdep had not reported this order before (a lock it does not validate, or a \
                 suppressed report)."
            ),
        }
    }
}

impl fmt::Display for HungWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        banner(f, "INFO: thread blocked on a lock for too long!")?;
        if let Some(t) = self.chain.first() {
            writeln!(
                f,
                "{}/{} has been blocked for {:.3}s; its wait-for chain made no progress for \
                 {:.3}s:",
                t.thread.name,
                t.thread.id,
                t.waiting.as_ref().map_or(0.0, |w| w.waited.as_secs_f64()),
                self.stalled_for.as_secs_f64()
            )?;
        }
        edges(f, &self.chain, false)?;
        if let Some(last) = self.chain.last().filter(|_| self.chain.len() > 1) {
            match &last.condvar {
                Some(c) => {
                    write!(
                        f,
                        "{}/{} sleeps in a condvar wait on {:#x} ({}",
                        last.thread.name, last.thread.id, c.condvar, c.name
                    )?;
                    if let Some(site) = c.site {
                        write!(f, ", made at {site}")?;
                    }
                    writeln!(f, "; it waits for a notification).")?;
                }
                None => writeln!(
                    f,
                    "{}/{} is not blocked on a tracked lock.",
                    last.thread.name, last.thread.id
                )?,
            }
        }
        for t in &self.chain {
            writeln!(f)?;
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl fmt::Display for WatchdogReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchdogReport::Deadlock(d) => d.fmt(f),
            WatchdogReport::Hung(h) => h.fmt(f),
        }
    }
}
