//! Reports: what they say ([`types`]), their kernel-style text ([`text`]), how they are built
//! from the validator's state ([`build`]), and where they go: [`delivery`] takes each one
//! through the declared suppressions ([`suppress`](mod@suppress)), the test scope ([`scope`]),
//! deduplication ([`dedup`], with capacity [`episode`]s rate limited) and the policy
//! ([`policy`]), and writes to standard error with [`output`]; [`summary`](mod@summary) counts
//! what deduplication and suppressions kept back, [`replay`] counts a batch of repeats again
//! without making it again, and [`exit_line`] tells the report file what a process validated.
//!
//! A report is built while the validator holds what it reads and delivered after it has let
//! go of everything, before the lock operation that caused it takes effect.

mod at_exit;
pub(crate) mod build;
mod dedup;
mod delivery;
pub(crate) mod episode;
mod exit_line;
mod output;
mod policy;
pub(crate) mod recent;
mod replay;
mod scope;
mod summary;
mod suppress;
mod text;
mod types;

pub(crate) use dedup::clear as forget_delivered;
pub(crate) use delivery::{deliver, deliver_no_unwind, deliver_replayable, dropped};
pub(crate) use exit_line::arm as arm_exit_line;
pub(crate) use output::write_stderr;
pub use output::REPORT_FILE_ENV;
pub use policy::{set_policy, Handler, Policy};
pub(crate) use replay::Replay;
pub use scope::{test_scope, EnteredScope, ScopeHandle, TestScope};
pub(crate) use summary::made;
pub use summary::{print_summary, summary, Summary};
pub(crate) use suppress::{
    hits_by_id as suppression_hits_by_id, register_key as register_key_suppressions,
};
pub use suppress::{
    load_suppressions, stale_suppressions, suppress, suppressions, ClassRef, LoadedSuppressions,
    Suppression, SuppressionError, SuppressionFileError, SuppressionId, SuppressionInfo,
    SuppressionOrigin, SUPPRESSIONS_ENV,
};
pub(crate) use text::banner;
pub use types::{
    AssertKind, Capacity, CircularDependency, CondvarWait, Dependency, KeyMisuse, LockDesc,
    LockInstance, MisuseSubject, Report, ReportKind, SameClass, TaskLocks, ThreadDesc, ThreadLocks,
    WaitingFor,
};
