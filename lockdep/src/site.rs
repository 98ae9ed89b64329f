//! The placeholder site of a release by guard drop.
//!
//! A guard's `Drop::drop` cannot be `#[track_caller]`, so a lock wrapper does not know where
//! its guard went out of scope. Rather than the wrapper's own line, it passes this placeholder
//! ([`release_guard`](crate::release_guard)), and reports show "(guard drop)" and, where the
//! lock was held, the site that acquired it.

use std::panic::Location;

/// The placeholder: a location in this file, recognised by value.
pub(crate) fn guard_drop() -> &'static Location<'static> {
    Location::caller()
}

/// True if `site` is the placeholder of a release by guard drop (see
/// [`release_guard`](crate::release_guard)): a report handler that shows sites itself should
/// show "(guard drop)" for it. Cheap: compares the file, line and column.
pub fn is_guard_drop(site: &Location<'_>) -> bool {
    *site == *guard_drop()
}
