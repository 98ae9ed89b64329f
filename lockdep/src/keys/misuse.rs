//! Reporting misuse of a dynamic key (or of a subclass): the kernel's "key has not been
//! registered!" and friends.

use std::panic::Location;

use crate::report::{self, build, KeyMisuse, MisuseSubject, Report, ThreadLocks};
use crate::thread;

type Site = &'static Location<'static>;

/// Reports `kind` for the key `name` (registered at `registered_at`, if known) at `site`, now
/// (its repeats are counted, not printed, by the delivery). Call with no validator lock held
/// and no borrow of the thread state.
pub(crate) fn report_key(kind: KeyMisuse, name: &str, site: Site, registered_at: Option<Site>) {
    report::deliver(vec![build::key_misuse(
        thread::current_thread(),
        kind,
        name,
        MisuseSubject::Key,
        site,
        registered_at,
    )]);
}

/// Reports `kind` for a use of the lock map `name` at `site` (its key is not registered, or
/// its subclass is invalid). Same calling rules as [`report_key`].
pub(crate) fn report_lock(kind: KeyMisuse, name: &str, site: Site) {
    report::deliver(vec![build::key_misuse(
        thread::current_thread(),
        kind,
        name,
        MisuseSubject::Lock,
        site,
        None,
    )]);
}

/// Reports that the key `name` (registered at `registered_at`, if known) is unregistered at
/// `site` while the threads `holders` hold locks of it (each with those locks).
pub(crate) fn report_held(
    name: &str,
    site: Site,
    registered_at: Option<Site>,
    holders: Vec<ThreadLocks>,
) {
    let mut r = build::key_misuse(
        thread::current_thread(),
        KeyMisuse::UnregisterWhileHeld,
        name,
        MisuseSubject::Key,
        site,
        registered_at,
    );
    if let Report::KeyMisuse { held_by, .. } = &mut r {
        *held_by = holders;
    }
    report::deliver(vec![r]);
}
