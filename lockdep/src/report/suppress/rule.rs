//! What a suppression is: the lock classes it names (each by name, key or construction site,
//! optionally with the site where it was acquired), an optional report kind and a reason; the
//! rules that keep it narrow ([`Suppression::check`]); and its text, which is the file syntax.

use std::fmt;

use super::site::SiteSpec;
use crate::class::{KeyRef, LockClassKey, StaticKey};
use crate::report::types::ReportKind;

/// The report kinds a suppression can silence, with their keyword in a suppression file.
/// Every other kind is a misuse of the locking API or a limit, never a proven-safe order.
pub(crate) const SUPPRESSIBLE: [(ReportKind, &str); 4] = [
    (ReportKind::CircularDependency, "circular"),
    (ReportKind::RecursiveLocking, "recursive"),
    (ReportKind::MissingNestingAnnotation, "nesting"),
    (ReportKind::HeldAcrossAwait, "await"),
];

/// The keyword of a line that names no kind (any suppressible kind about its classes).
pub(crate) const ANY: &str = "any";

/// The keyword of `kind` in a suppression file, if it can be suppressed.
pub(crate) fn keyword(kind: ReportKind) -> Option<&'static str> {
    SUPPRESSIBLE.iter().find(|k| k.0 == kind).map(|k| k.1)
}

/// `Ok` for a site with a non-empty file and a line (and column) from 1.
fn valid(s: &SiteSpec) -> Result<(), SuppressionError> {
    if s.is_valid() {
        Ok(())
    } else {
        Err(SuppressionError::BadSite(s.to_string()))
    }
}

/// How a [`ClassRef`] names its class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Designator {
    /// The class name exactly as reports print it (`accounts`, `Mutex<u64>@src/bank.rs:12`,
    /// `tree/1` for subclass 1).
    Name(String),
    /// Every class made from this static or dynamic key (any subclass).
    Key(KeyRef),
    /// Every class of locks constructed at this site (any type, any subclass), whether named
    /// or not; classes made from keys have no construction site.
    Constructed(SiteSpec),
}

/// One lock class named by a [`Suppression`]: by its name, its key or its construction site,
/// optionally only where it was acquired at a given site.
///
/// `From<&str>` and `From<String>` name a class by name, `From<&'static LockClassKey>` and
/// `From<&DynamicKey>` by key, so `Suppression::cycle(["accounts", "ledger"])` works. A
/// [`DynamicKey`](crate::DynamicKey) is matched by its identity: once it is dropped, a
/// suppression by it matches nothing (a new key at the same address is another key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassRef {
    pub(crate) class: Designator,
    /// Only where the class was acquired at this site.
    pub(crate) at: Option<SiteSpec>,
}

impl ClassRef {
    /// The class named `name`, exactly as reports print it (see the crate docs, "Names"): a
    /// named lock's name, or an unnamed one's `kind<type>@file:line`; `name/1` for subclass 1.
    /// No pattern: `*` is not a wildcard but an error when the suppression is declared.
    pub fn name(name: impl Into<String>) -> ClassRef {
        ClassRef {
            class: Designator::Name(name.into()),
            at: None,
        }
    }

    /// Every class made from the static key `key` (one per subclass).
    pub fn key(key: &'static LockClassKey) -> ClassRef {
        ClassRef {
            class: Designator::Key(KeyRef::Static(StaticKey(key))),
            at: None,
        }
    }

    /// Every class of locks constructed at `file:line` (any protected type, any subclass):
    /// the site a [`LockMap::of_type`](crate::LockMap::of_type) or
    /// [`LockMap::new`](crate::LockMap::new) map was built at, as in an unnamed class's name.
    /// `file` matches a recorded path that is equal or ends with `/file`.
    pub fn constructed_at(file: impl Into<String>, line: u32) -> ClassRef {
        ClassRef {
            class: Designator::Constructed(SiteSpec {
                file: file.into(),
                line,
                column: None,
            }),
            at: None,
        }
    }

    /// Only where this class was acquired at `file:line` (a site a report shows for it, any
    /// column): see the crate docs, "Suppressions", for which sites of a report count.
    pub fn acquired_at(self, file: impl Into<String>, line: u32) -> ClassRef {
        ClassRef {
            at: Some(SiteSpec {
                file: file.into(),
                line,
                column: None,
            }),
            ..self
        }
    }

    /// Built from a key by the key's own module (dynamic keys live above reports).
    pub(crate) fn from_key(key: KeyRef) -> ClassRef {
        ClassRef {
            class: Designator::Key(key),
            at: None,
        }
    }
}

impl From<&str> for ClassRef {
    fn from(name: &str) -> ClassRef {
        ClassRef::name(name)
    }
}

impl From<String> for ClassRef {
    fn from(name: String) -> ClassRef {
        ClassRef::name(name)
    }
}

impl From<&'static LockClassKey> for ClassRef {
    fn from(key: &'static LockClassKey) -> ClassRef {
        ClassRef::key(key)
    }
}

/// Whether a class name must be quoted in a suppression file to read back as itself.
fn needs_quotes(name: &str) -> bool {
    name.is_empty()
        || name.trim() != name
        || name.starts_with('@')
        || name.contains(char::is_whitespace)
        || ["->", " at ", "#", "\"", "\\"]
            .iter()
            .any(|s| name.contains(s))
}

impl fmt::Display for ClassRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.class {
            Designator::Name(n) if needs_quotes(n) => {
                write!(f, "\"{}\"", n.replace('\\', "\\\\").replace('"', "\\\""))?
            }
            Designator::Name(n) => f.write_str(n)?,
            Designator::Key(KeyRef::Static(k)) => {
                write!(f, "<static key {:p}>", k.0 as *const LockClassKey)?
            }
            Designator::Key(KeyRef::Dynamic { addr, serial }) => {
                write!(f, "<dynamic key {addr:#x} #{serial}>")?
            }
            Designator::Key(k) => write!(f, "<key {k:?}>")?,
            Designator::Constructed(s) => write!(f, "@{s}")?,
        }
        match &self.at {
            Some(s) => write!(f, " at {s}"),
            None => Ok(()),
        }
    }
}

/// A narrow suppression: reports about exactly these lock classes, optionally of one kind,
/// are not delivered (see the crate docs, "Suppressions"). Declare it with
/// [`suppress`](crate::suppress).
///
/// ```
/// use lockdep::{ReportKind, Suppression};
/// let s = Suppression::pair("accounts", "ledger")
///     .kind(ReportKind::CircularDependency)
///     .reason("ledger -> accounts only runs before the threads start");
/// assert_eq!(s.to_string(), "circular: accounts -> ledger");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suppression {
    pub(crate) classes: Vec<ClassRef>,
    pub(crate) kind: Option<ReportKind>,
    pub(crate) reason: Option<String>,
}

impl Suppression {
    /// Reports about exactly these classes: for a cycle, its set of classes (the order is
    /// for reading; reports are deduplicated by the same set).
    pub fn cycle<C: Into<ClassRef>>(classes: impl IntoIterator<Item = C>) -> Suppression {
        Suppression {
            classes: classes.into_iter().map(Into::into).collect(),
            kind: None,
            reason: None,
        }
    }

    /// Reports about exactly the two classes `a` and `b`: a two-class cycle.
    pub fn pair(a: impl Into<ClassRef>, b: impl Into<ClassRef>) -> Suppression {
        Suppression::cycle([a.into(), b.into()])
    }

    /// Reports about the one class `class` only; needs a [`kind`](Self::kind) (recursive
    /// locking, a missing nesting annotation, a cycle among the class's instances, or a
    /// blocking lock of the class held across an `.await`).
    pub fn class(class: impl Into<ClassRef>) -> Suppression {
        Suppression::cycle([class.into()])
    }

    /// Only reports of this kind: [`ReportKind::CircularDependency`],
    /// [`ReportKind::RecursiveLocking`], [`ReportKind::MissingNestingAnnotation`] or
    /// [`ReportKind::HeldAcrossAwait`] (the others cannot be suppressed).
    pub fn kind(self, kind: ReportKind) -> Suppression {
        Suppression {
            kind: Some(kind),
            ..self
        }
    }

    /// Why the suppressed reports are safe; listed by [`suppressions`](crate::suppressions).
    pub fn reason(self, reason: impl Into<String>) -> Suppression {
        Suppression {
            reason: Some(reason.into()),
            ..self
        }
    }

    /// Checks the rules that keep a suppression narrow (see [`SuppressionError`]).
    pub(crate) fn check(&self) -> Result<(), SuppressionError> {
        if self.classes.is_empty() {
            return Err(SuppressionError::NoClasses);
        }
        for c in &self.classes {
            match &c.class {
                Designator::Name(n) if n.trim() == "*" => return Err(SuppressionError::Wildcard),
                Designator::Name(n) if n.trim().is_empty() => {
                    return Err(SuppressionError::EmptyName)
                }
                Designator::Constructed(s) => valid(s)?,
                _ => {}
            }
            if let Some(s) = &c.at {
                valid(s)?;
            }
        }
        let mut distinct: Vec<&Designator> = Vec::new();
        for c in &self.classes {
            if !distinct.contains(&&c.class) {
                distinct.push(&c.class);
            }
        }
        match self.kind {
            None if distinct.len() < 2 => Err(SuppressionError::OneClassNeedsKind(
                self.classes[0].to_string(),
            )),
            None => Ok(()),
            Some(k) if keyword(k).is_none() => Err(SuppressionError::NotSuppressible(k)),
            Some(k @ (ReportKind::RecursiveLocking | ReportKind::MissingNestingAnnotation))
                if distinct.len() > 1 || self.classes.len() > 2 =>
            {
                Err(SuppressionError::SameClassKind(k))
            }
            Some(ReportKind::HeldAcrossAwait) if self.classes.len() > 1 => {
                Err(SuppressionError::OneLockKind(ReportKind::HeldAcrossAwait))
            }
            Some(_) => Ok(()),
        }
    }
}

/// The suppression as a line of a suppression file (without its reason).
impl fmt::Display for Suppression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.and_then(keyword).unwrap_or(ANY))?;
        f.write_str(":")?;
        for (i, c) in self.classes.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { " -> " })?;
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Why a suppression was refused: each rule keeps suppressions narrow, so that one never
/// hides reports nobody looked at.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuppressionError {
    /// It names no class (it would match every report).
    NoClasses,
    /// A class named `*`: there are no wildcards; name each class.
    Wildcard,
    /// An empty (or blank) class name.
    EmptyName,
    /// It names one class (shown) and no report kind: one class alone is too broad (every
    /// recursive locking, nesting and cycle report on it); say which kind.
    OneClassNeedsKind(String),
    /// This kind of report cannot be suppressed (it is a misuse of the locking API or a
    /// limit, not a lock order): fix the cause, or use the annotations (`detach`,
    /// `LockMap::novalidate`, subclasses).
    NotSuppressible(ReportKind),
    /// A recursive-locking or missing-nesting report is about one class: name it once, or
    /// twice as `held -> acquired` to give both sites.
    SameClassKind(ReportKind),
    /// A report about one held lock (a blocking lock held across an `.await`): name its class
    /// once, optionally with the site where it was acquired.
    OneLockKind(ReportKind),
    /// A site that is not `file:line` with a non-empty file and a line (and column) from 1.
    BadSite(String),
}

impl fmt::Display for SuppressionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuppressionError::NoClasses => f.write_str("a suppression must name its lock classes"),
            SuppressionError::Wildcard => f.write_str(
                "`*` is not a class: there are no wildcards, a suppression names each class",
            ),
            SuppressionError::EmptyName => f.write_str("empty class name"),
            SuppressionError::OneClassNeedsKind(c) => write!(
                f,
                "`{c}` is one class: a suppression of one class must name its report kind \
                 (recursive, nesting, circular or await)"
            ),
            SuppressionError::NotSuppressible(k) => write!(
                f,
                "reports of kind \"{k}\" cannot be suppressed (only circular, recursive, \
                 nesting and await)"
            ),
            SuppressionError::SameClassKind(k) => write!(
                f,
                "a \"{k}\" report is about one class: name it once, or twice as \
                 `held -> acquired` with sites"
            ),
            SuppressionError::OneLockKind(k) => write!(
                f,
                "a \"{k}\" report is about one lock: name its class once, optionally with \
                 `at <site>`"
            ),
            SuppressionError::BadSite(s) => {
                write!(f, "bad site `{s}`: expected file:line or file:line:column")
            }
        }
    }
}

impl std::error::Error for SuppressionError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_rules() {
        use ReportKind::*;
        let check = |s: Suppression| s.check();
        assert_eq!(
            check(Suppression::cycle(Vec::<ClassRef>::new())),
            Err(SuppressionError::NoClasses)
        );
        assert_eq!(
            check(Suppression::pair("*", "b")),
            Err(SuppressionError::Wildcard)
        );
        assert_eq!(
            check(Suppression::pair(" ", "b")),
            Err(SuppressionError::EmptyName)
        );
        assert!(matches!(
            check(Suppression::class("a")),
            Err(SuppressionError::OneClassNeedsKind(_))
        ));
        assert!(matches!(
            check(Suppression::pair("a", "a")),
            Err(SuppressionError::OneClassNeedsKind(_))
        ));
        assert_eq!(
            check(Suppression::pair("a", "b").kind(KeyMisuse)),
            Err(SuppressionError::NotSuppressible(KeyMisuse))
        );
        assert_eq!(
            check(Suppression::pair("a", "b").kind(RecursiveLocking)),
            Err(SuppressionError::SameClassKind(RecursiveLocking))
        );
        assert!(matches!(
            check(Suppression::pair(
                "a",
                ClassRef::name("b").acquired_at("x.rs", 0)
            )),
            Err(SuppressionError::BadSite(_))
        ));
        assert_eq!(check(Suppression::pair("a", "b")), Ok(()));
        assert_eq!(
            check(Suppression::class("a").kind(RecursiveLocking)),
            Ok(())
        );
        assert_eq!(
            check(Suppression::class("a").kind(CircularDependency)),
            Ok(())
        );
        assert_eq!(check(Suppression::class("a").kind(HeldAcrossAwait)), Ok(()));
        assert_eq!(
            check(Suppression::pair("a", "a").kind(HeldAcrossAwait)),
            Err(SuppressionError::OneLockKind(HeldAcrossAwait)),
            "one lock: named once"
        );
        let held_then_acquired = Suppression::pair(
            ClassRef::name("a").acquired_at("x.rs", 1),
            ClassRef::name("a").acquired_at("x.rs", 2),
        );
        assert_eq!(
            check(held_then_acquired.kind(MissingNestingAnnotation)),
            Ok(())
        );
    }

    #[test]
    fn text_is_the_file_syntax() {
        let s = Suppression::cycle([
            ClassRef::name("accounts").acquired_at("src/bank.rs", 40),
            ClassRef::name("Mutex<u64>@src/bank.rs:12"),
            ClassRef::constructed_at("src/pool.rs", 7),
            ClassRef::name("fn() -> u8"),
        ])
        .kind(ReportKind::CircularDependency);
        assert_eq!(
            s.to_string(),
            "circular: accounts at src/bank.rs:40 -> Mutex<u64>@src/bank.rs:12 -> \
             @src/pool.rs:7 -> \"fn() -> u8\""
        );
        assert_eq!(
            Suppression::pair("a", "b").to_string(),
            "any: a -> b",
            "no kind"
        );
        assert_eq!(
            Suppression::class(ClassRef::name("a").acquired_at("x.rs", 3))
                .kind(ReportKind::HeldAcrossAwait)
                .to_string(),
            "await: a at x.rs:3"
        );
    }
}
