//! What a report is about, as suppressions see it, and whether a suppression matches it.
//!
//! A report's *ends* are the (class, acquisition site) pairs it names: for a cycle, both ends
//! of every dependency on it (the held class where it was acquired, the class taken after it
//! where that was acquired); for recursive locking and a missing nesting annotation, the held
//! lock and the one being acquired; for a blocking lock held across an `.await`, that lock
//! where it was acquired. A suppression matches when its kind (if any) is the
//! report's, every end's class is one of the suppression's classes, and each of the
//! suppression's classes is an end (at its site, if it names one). So the suppression names
//! *exactly* the report's classes: a cycle through one more class, or a nesting at another
//! site, is not matched.

use std::panic::Location;

use super::rule::{ClassRef, Designator, Suppression};
use crate::class::KeyRef;
use crate::report::types::{LockDesc, Report, ReportKind};

/// One (class, site) pair a report names.
pub(crate) struct End<'a> {
    class: &'a str,
    key: Option<KeyRef>,
    site: &'static Location<'static>,
}

/// What a report is about: its kind and its ends.
pub(crate) struct Subject<'a> {
    kind: ReportKind,
    ends: Vec<End<'a>>,
}

fn end(l: &LockDesc) -> End<'_> {
    End {
        class: &l.class_name,
        key: l.key,
        site: l.site,
    }
}

/// The subject of `r`; `None` for the kinds no suppression can match.
pub(crate) fn of(r: &Report) -> Option<Subject<'_>> {
    let ends = match r {
        Report::CircularDependency(c) => c
            .cycle
            .iter()
            .flat_map(|d| {
                [
                    End {
                        class: &d.from,
                        key: d.from_key,
                        site: d.from_site,
                    },
                    End {
                        class: &d.to,
                        key: d.to_key,
                        site: d.to_site,
                    },
                ]
            })
            .collect(),
        Report::RecursiveLocking(s) | Report::MissingNestingAnnotation(s) => {
            vec![end(&s.holding), end(&s.acquiring)]
        }
        Report::HeldAcrossAwait { lock, .. } => vec![end(lock)],
        _ => return None,
    };
    Some(Subject {
        kind: r.kind(),
        ends,
    })
}

/// Whether `c` names the class of `e` (whatever the site).
fn names(c: &ClassRef, e: &End<'_>) -> bool {
    match &c.class {
        Designator::Name(n) => n == e.class,
        Designator::Key(k) => e.key == Some(*k),
        Designator::Constructed(s) => match e.key {
            Some(KeyRef::Site(site) | KeyRef::SiteType { site, .. }) => s.matches(site),
            _ => false,
        },
    }
}

/// Whether `s` matches the report `subject` (see the module docs).
pub(crate) fn matches(s: &Suppression, subject: &Subject<'_>) -> bool {
    if s.kind.is_some_and(|k| k != subject.kind) {
        return false;
    }
    let ends = &subject.ends;
    !ends.is_empty()
        && ends.iter().all(|e| s.classes.iter().any(|c| names(c, e)))
        && s.classes.iter().all(|c| {
            ends.iter()
                .any(|e| names(c, e) && c.at.as_ref().is_none_or(|at| at.matches(e.site)))
        })
}
