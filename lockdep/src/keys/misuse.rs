//! Reporting misuse of a dynamic key (or of a subclass): the kernel's "key has not been
//! registered!" and friends.

use std::panic::Location;

use crate::report::{self, build, KeyMisuse, Report, ThreadLocks};
use crate::thread;

type Site = &'static Location<'static>;

/// Reports `kind` for the key (or lock map) `name` at `site`, now (its repeats are counted,
/// not printed, by the delivery). Call with no validator lock held and no borrow of the
/// thread state.
pub(crate) fn report(kind: KeyMisuse, name: &str, site: Site) {
    report::deliver(vec![build::key_misuse(
        thread::current_thread(),
        kind,
        name,
        site,
    )]);
}

/// Reports that the key `name` is unregistered at `site` while the threads `holders` hold
/// locks of it (each with those locks).
pub(crate) fn report_held(name: &str, site: Site, holders: Vec<ThreadLocks>) {
    let mut r = build::key_misuse(
        thread::current_thread(),
        KeyMisuse::UnregisterWhileHeld,
        name,
        site,
    );
    if let Report::KeyMisuse { held_by, .. } = &mut r {
        *held_by = holders;
    }
    report::deliver(vec![r]);
}
