//! Reporting misuse of a dynamic key (or of a subclass): the kernel's "key has not been
//! registered!" and friends.

use std::panic::Location;

use crate::report::{self, build, KeyMisuse};
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
