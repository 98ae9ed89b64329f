//! The placeholder sites of a release by guard drop and of an unregister by key drop.
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

/// The placeholder of an unregister by a [`DynamicKey`](crate::DynamicKey)'s drop, whose site
/// is unknown for the same reason: another location in this file.
pub(crate) fn key_drop() -> &'static Location<'static> {
    Location::caller()
}

/// True if `site` is the placeholder of an unregister by a [`DynamicKey`](crate::DynamicKey)'s
/// drop: reports show "(key drop)" for it (and the key's registration site where known). A
/// report handler that shows sites itself should do the same. Cheap: compares the file, line
/// and column.
pub fn is_key_drop(site: &Location<'_>) -> bool {
    *site == *key_drop()
}
