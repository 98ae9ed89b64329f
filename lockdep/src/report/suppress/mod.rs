//! Suppressions: narrow, declared exceptions for reports proven safe (see the crate docs,
//! "Suppressions").
//!
//! - [`rule`]: what a suppression names (lock classes by name, key or construction site,
//!   optionally where they were acquired, and a report kind) and the rules that keep it
//!   narrow; its text is the file syntax.
//! - [`site`]: `file:line` as a suppression names it, and how it matches a recorded site.
//! - [`parse`]: the file syntax, line by line, with the reason comments.
//! - [`subject`]: what a report is about, and whether a suppression matches it.
//! - [`registry`]: the declared suppressions and their hit counts.
//! - [`load`]: suppression files, the environment variable, the stale list at exit.
//! - [`listing`]: what the listing functions return.
//!
//! A report is checked here first (`report::delivery`): a matched report is counted per
//! suppression and goes no further, neither to deduplication (it is not a distinct report)
//! nor to a test scope or the policy.

mod listing;
mod load;
mod parse;
mod registry;
mod rule;
mod site;
mod subject;

use std::panic::Location;

pub use listing::{
    LoadedSuppressions, SuppressionFileError, SuppressionId, SuppressionInfo, SuppressionOrigin,
};
pub use load::{load_suppressions, SUPPRESSIONS_ENV};
pub(crate) use registry::{hits_by_id, register_key, total_hits};

pub use rule::{ClassRef, Suppression, SuppressionError};

use super::types::Report;

/// Declares the suppression `s` (see the crate docs, "Suppressions"): from now on, a report
/// it matches is counted ([`suppressions`], [`Stats`](crate::Stats)) but neither printed,
/// handed to the callback, deduplicated, recorded in a test scope nor panicked with.
/// Suppressions are process-wide, stay in force for the life of the process
/// ([`reset`](crate::reset) keeps them) and are listed with the call site.
///
/// ```
/// use lockdep::{ReportKind, Suppression};
/// lockdep::suppress(
///     Suppression::pair("accounts", "ledger")
///         .kind(ReportKind::CircularDependency)
///         .reason("ledger -> accounts only runs before the worker threads start"),
/// )
/// .expect("a narrow suppression");
/// ```
///
/// # Errors
///
/// `s` breaks a rule that keeps suppressions narrow ([`SuppressionError`]): no class, a `*`,
/// one class without a kind, a kind that cannot be suppressed. Then nothing is declared.
///
/// Thread-safe; takes a leaf lock.
#[track_caller]
pub fn suppress(s: Suppression) -> Result<SuppressionId, SuppressionError> {
    load::env_once();
    s.check()?;
    let origin = SuppressionOrigin::Code(Location::caller());
    Ok(registry::with(|reg| reg.add(s, origin)))
}

/// Every declared suppression (in code, in files, on static keys), in declaration order,
/// with the reports each matched so far. Thread-safe.
pub fn suppressions() -> Vec<SuppressionInfo> {
    load::env_once();
    registry::list()
}

/// The suppressions that matched no report so far: stale ones, whose code was fixed or
/// whose classes were renamed, are how suppression files rot. With [`SUPPRESSIONS_ENV`]
/// set, this list is printed at process exit. Thread-safe.
pub fn stale_suppressions() -> Vec<SuppressionInfo> {
    suppressions().into_iter().filter(|s| s.hits == 0).collect()
}

/// The declared suppressions that match `r` (each counted), by their place in declaration
/// order; `None` if none does. Reads the file named by [`SUPPRESSIONS_ENV`] first, once.
pub(crate) fn suppressed(r: &Report) -> Option<Box<[u32]>> {
    load::env_once();
    registry::matched(r)
}

pub(crate) use registry::{count_again as count_suppressed_again, declared};
