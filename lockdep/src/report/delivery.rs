//! Delivering reports: each one through the declared suppressions
//! ([`suppress`](mod@super::suppress); a matched report is only counted), the test scope
//! ([`scope`]), deduplication ([`dedup`]) and the policy
//! ([`policy`]), with no validator lock held, and never from inside another
//! delivery on the same thread.
//!
//! **Re-entrancy.** A report handler is user code: it may lock (instrumented locks too),
//! allocate, log, call back into lockdep or panic. A lock operation it makes is tracked and
//! validated like any other, so the held stack stays exact; a report that operation makes is
//! not delivered from inside the handler (which would call the handler again, without end,
//! when the handler takes a lock its thread already holds) but queued on the thread, and the
//! outermost delivery hands it to the handler after the handler returned. It is also printed
//! at once, so that a handler that goes on to block on that lock does not hide the report
//! that explains the hang. Deduplication ends the loops of a handler that causes the same
//! report again; [`MAX_NESTED_REPORTS`] ends the others.
//!
//! **Panics.** A handler that panics is caught, the rest of the batch and the queued reports
//! are delivered, and then its panic is resumed, on the thread that made the report, before
//! the lock operation takes effect. A report that must panic the thread (`Policy::Panic`, or a
//! thread in a test scope) panics the same way, after the batch. The "delivering" mark is a
//! thread-local cleared by a drop guard, so a panic never leaves it set.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use super::policy::{self, Policy};
use super::replay::{Fate, Replay};
use super::types::Report;
use super::{dedup, output, scope, summary, suppress};
use crate::limits::MAX_NESTED_REPORTS;

/// Reports made by handlers' lock operations that were not handed to the handler.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// A report on its way, with what was decided about it when it was made.
struct Pending {
    report: Report,
    /// Print it or hand it to the callback (its first occurrence, or repeats are on).
    deliver: bool,
    /// The thread is in a test scope, which recorded it.
    in_scope: bool,
    /// Already written to standard error (a report made inside a handler).
    printed: bool,
}

/// This thread's delivery state.
struct Delivery {
    /// A delivery is running on this thread (a handler may be running).
    active: Cell<bool>,
    /// Reports made while it runs, to deliver after the handler returned.
    queue: RefCell<VecDeque<Pending>>,
}

thread_local! {
    static DELIVERY: Delivery = const {
        Delivery {
            active: Cell::new(false),
            queue: RefCell::new(VecDeque::new()),
        }
    };
}

/// Whether the caller may unwind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unwind {
    Allowed,
    /// A thread-local destructor, or a thread that is already panicking.
    Forbidden,
}

/// The number of reports that handlers' lock operations made and that were not handed to the
/// handler (more than [`MAX_NESTED_REPORTS`] in one delivery).
pub(crate) fn dropped() -> u64 {
    // Relaxed: a statistic.
    DROPPED.load(Ordering::Relaxed)
}

/// Delivers a batch of reports according to the policy; may panic (see the module docs). Must
/// be called with no validator lock held and no borrow of the thread state.
pub(crate) fn deliver(reports: Vec<Report>) {
    let _ = deliver_batch(reports, Unwind::Allowed);
}

/// Delivers one report from a context that cannot unwind (a thread-local destructor).
pub(crate) fn deliver_no_unwind(r: Report) {
    let _ = deliver_batch(vec![r], Unwind::Forbidden);
}

/// Records `r` in the test scope and decides whether it is delivered; `None` if a declared
/// suppression matched it (it was counted there and goes no further). Also what happened to
/// it, if a [`Replay`] can count it again: `None` for a report delivered, recorded in a test
/// scope, or rate limited as a capacity episode.
fn classify(report: Report) -> (Option<Pending>, Option<Fate>) {
    summary::count_made(1);
    let kind = report.kind().index();
    if let Some(places) = suppress::suppressed(&report) {
        summary::print_at_exit();
        let fate = Fate {
            kind,
            suppressed_by: Some(places),
        };
        return (None, Some(fate));
    }
    let in_scope = scope::record(&report);
    let verdict = dedup::should_deliver(&report);
    let deliver = verdict == dedup::Verdict::Deliver;
    if deliver {
        super::recent::keep(&report);
    } else {
        summary::print_at_exit();
    }
    let fate = (verdict == dedup::Verdict::Repeat && !in_scope).then_some(Fate {
        kind,
        suppressed_by: None,
    });
    let pending = Pending {
        report,
        deliver,
        in_scope,
        printed: false,
    };
    (Some(pending), fate)
}

/// Clears this thread's "delivering" mark when the outermost delivery ends, also by a panic.
struct Active(bool);

impl Drop for Active {
    fn drop(&mut self) {
        if self.0 {
            let _ = DELIVERY.try_with(|d| {
                d.active.set(false);
                if std::thread::panicking() {
                    d.queue.borrow_mut().clear();
                }
            });
        }
    }
}

/// [`deliver`], and what the batch came to if it can be counted again without being made
/// again ([`Replay`]): every report of it a repeat or suppressed, none delivered, none in a
/// test scope, the policy not `Policy::Panic`, and not inside a handler.
pub(crate) fn deliver_replayable(reports: Vec<Report>) -> Option<Replay> {
    let stamp = Replay::stamp();
    deliver_batch(reports, Unwind::Allowed).map(|fates| Replay::new(fates, stamp))
}

fn deliver_batch(reports: Vec<Report>, unwind: Unwind) -> Option<Vec<Fate>> {
    let unwind = if std::thread::panicking() {
        Unwind::Forbidden
    } else {
        unwind
    };
    let mut fates = Some(Vec::with_capacity(reports.len()));
    let mut classified = |r| {
        let (pending, fate) = classify(r);
        match (&mut fates, fate) {
            (Some(all), Some(f)) => all.push(f),
            _ => fates = None,
        }
        pending
    };
    // Ok(true): the outermost delivery; Ok(false): inside one; Err: the thread-local is gone
    // (thread exit), where no handler can be running above us.
    let outermost = DELIVERY.try_with(|d| !d.active.replace(true));
    if outermost == Ok(false) {
        for p in reports.into_iter().filter_map(&mut classified) {
            queue(p);
        }
        return None;
    }
    let active = Active(outermost.is_ok());
    let mut outcome = Outcome::default();
    for p in reports.into_iter().filter_map(&mut classified) {
        act(p, unwind, &mut outcome);
    }
    let mut handed = 0;
    while let Some(p) = DELIVERY
        .try_with(|d| d.queue.borrow_mut().pop_front())
        .ok()
        .flatten()
    {
        if handed == MAX_NESTED_REPORTS {
            let left = 1 + DELIVERY
                .try_with(|d| std::mem::take(&mut *d.queue.borrow_mut()).len())
                .unwrap_or(0);
            // Relaxed: a statistic.
            DROPPED.fetch_add(left as u64, Ordering::Relaxed);
            let (reports, were) = if left == 1 {
                ("report", "was")
            } else {
                ("reports", "were")
            };
            output::write_stderr(&format!(
                "lockdep: {left} {reports} caused by a report handler's lock operations {were} \
                 not handed to it (more than {MAX_NESTED_REPORTS} in one delivery)\n"
            ));
            break;
        }
        handed += 1;
        act(p, unwind, &mut outcome);
    }
    drop(active);
    let replayable = outcome.panics.is_empty() && !policy::panics();
    outcome.finish();
    fates.filter(|f| replayable && !f.is_empty() && outermost.is_ok())
}

/// A report made inside a handler: printed now if it is to be delivered, queued for the
/// handler.
fn queue(mut p: Pending) {
    if p.deliver {
        output::write_stderr(&format!(
            "lockdep: a report made while a report handler ran (the handler gets it when it \
             returns):{}\n",
            p.report
        ));
        p.printed = true;
    }
    if p.deliver || p.in_scope {
        let _ = DELIVERY.try_with(|d| d.queue.borrow_mut().push_back(p));
    }
}

/// What the batch must do once every report of it was delivered.
#[derive(Default)]
struct Outcome {
    /// The first handler panic, resumed at the end.
    handler_panic: Option<Box<dyn Any + Send>>,
    /// Reports the thread must panic with.
    panics: Vec<Report>,
}

impl Outcome {
    fn finish(self) {
        if let Some(p) = self.handler_panic {
            resume_unwind(p);
        }
        if let Some(first) = self.panics.first() {
            // The first line names the kind and the caller's line, which the panic's own
            // location (this line) does not.
            let head = match first.site() {
                Some(site) if !crate::is_guard_drop(site) => format!("{} at {site}", first.kind()),
                _ => first.kind().to_string(),
            };
            let text: Vec<String> = self.panics.iter().map(Report::to_string).collect();
            panic!("lockdep: {head}\n{}", text.join("\n"));
        }
    }
}

fn act(p: Pending, unwind: Unwind, out: &mut Outcome) {
    let policy = policy::current();
    let panics = unwind == Unwind::Allowed && (p.in_scope || matches!(policy, Policy::Panic));
    let print = p.deliver && !p.printed;
    match policy {
        // A report the thread panics with (in a test scope) is in the panic's message: not
        // printed before it as well.
        Policy::Stderr => {
            if print && !panics {
                output::write_stderr(&format!("{}\n", p.report));
            }
        }
        // Where it cannot unwind, the report is printed instead.
        Policy::Panic => {
            if print && !panics {
                output::write_stderr(&format!("{}\n", p.report));
            }
        }
        Policy::Callback(h) => {
            if p.deliver {
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| h(&p.report))) {
                    if unwind == Unwind::Allowed {
                        out.handler_panic.get_or_insert(payload);
                    } else if print {
                        // The handler could not finish (and its panic cannot propagate here).
                        output::write_stderr(&format!("{}\n", p.report));
                    }
                }
            }
        }
    }
    if panics {
        out.panics.push(p.report);
    }
}
