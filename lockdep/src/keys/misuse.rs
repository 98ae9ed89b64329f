//! Reporting misuse of a dynamic key (or of a subclass): the kernel's "key has not been
//! registered!" and friends.

use std::panic::Location;

use crate::graph_lock::graph_lock;
use crate::report::{self, build, KeyMisuse};
use crate::thread;

type Site = &'static Location<'static>;

/// Reports `kind` for the key (or lock map) `name` at `site`, now. Call with no validator lock
/// held and no borrow of the thread state.
pub(crate) fn report(kind: KeyMisuse, name: &str, site: Site) {
    report::deliver(vec![build::key_misuse(
        thread::current_thread(),
        kind,
        name,
        site,
    )]);
}

/// Like [`report()`], once per key (by serial number) and kind.
pub(crate) fn report_once(serial: u64, kind: KeyMisuse, name: &str, site: Site) {
    let first = graph_lock().reported_misuse.insert((serial, kind));
    if first {
        report(kind, name, site);
    }
}
