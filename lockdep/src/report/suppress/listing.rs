//! What [`suppressions`](crate::suppressions) and
//! [`load_suppressions`](crate::load_suppressions) tell: each suppression with where it was
//! declared and how often it matched, and the bad lines of a file.

use std::fmt;
use std::panic::Location;
use std::path::PathBuf;

use crate::report::types::ReportKind;

/// The number of a declared suppression, unique in the process (never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SuppressionId(pub(crate) u64);

impl fmt::Display for SuppressionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Where a suppression was declared.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuppressionOrigin {
    /// A call of [`suppress`](crate::suppress), at this site.
    Code(&'static Location<'static>),
    /// A line of a suppression file ([`load_suppressions`](crate::load_suppressions), or the
    /// file named by [`SUPPRESSIONS_ENV`](crate::SUPPRESSIONS_ENV)); `line` counts from 1.
    File {
        /// The file's path, as it was given.
        path: PathBuf,
        /// The line.
        line: usize,
    },
    /// A mark on a static [`LockClassKey`](crate::LockClassKey)
    /// ([`suppress_recursive`](crate::LockClassKey::suppress_recursive) and friends), seen
    /// when its first class, named `class`, was created.
    Key {
        /// The name of the key's first class.
        class: String,
    },
}

/// `line 3 of lockdep.supp`, `lockdep::suppress at src/main.rs:10:5`, `the static key of
/// class "tree"`.
impl fmt::Display for SuppressionOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuppressionOrigin::Code(site) => write!(f, "lockdep::suppress at {site}"),
            SuppressionOrigin::File { path, line } => {
                write!(f, "line {line} of {}", path.display())
            }
            SuppressionOrigin::Key { class } => write!(f, "the static key of class \"{class}\""),
        }
    }
}

/// One declared suppression, from [`suppressions`](crate::suppressions).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuppressionInfo {
    /// Its number.
    pub id: SuppressionId,
    /// The suppression as a line of a suppression file (`circular: accounts -> ledger`; a
    /// class named by key reads `<static key 0x…>`).
    pub text: String,
    /// The kind it is restricted to, if any.
    pub kind: Option<ReportKind>,
    /// Why it is safe, as declared.
    pub reason: Option<String>,
    /// Where it was declared.
    pub origin: SuppressionOrigin,
    /// The reports it matched (and so kept from being delivered), repeats included, since it
    /// was declared. 0 means it is stale, or its code never ran.
    pub hits: u64,
}

/// A line of a suppression file that is not a suppression; the file's other lines still
/// count.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuppressionFileError {
    /// The file, as it was given.
    pub path: PathBuf,
    /// The line, from 1.
    pub line: usize,
    /// The line's text (trimmed).
    pub text: String,
    /// What is wrong with it.
    pub message: String,
}

/// `lockdep.supp:3: unknown report kind `circ` ...: `circ: a -> b``.
impl fmt::Display for SuppressionFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: `{}`",
            self.path.display(),
            self.line,
            self.message,
            self.text
        )
    }
}

impl std::error::Error for SuppressionFileError {}

/// What [`load_suppressions`](crate::load_suppressions) did with a file.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadedSuppressions {
    /// The suppressions declared, one per good line, in file order.
    pub added: Vec<SuppressionId>,
    /// The bad lines, in file order (skipped).
    pub errors: Vec<SuppressionFileError>,
}
