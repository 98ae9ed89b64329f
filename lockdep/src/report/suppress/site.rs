//! Source locations as suppressions name them, and how they match a recorded site.

use std::fmt;
use std::panic::Location;

/// A source location as a suppression names it: `file:line` or `file:line:column`.
///
/// A location matches if its line (and column, if given) are equal and its file is `file` or
/// ends with `/file` (or `\file`): `src/bank.rs` matches `app/src/bank.rs` as the compiler
/// records it, and `tokio-1.54.1/src/x.rs` (as reports shorten registry paths) matches the
/// full path under `~/.cargo/registry`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SiteSpec {
    pub(crate) file: String,
    pub(crate) line: u32,
    pub(crate) column: Option<u32>,
}

impl SiteSpec {
    /// Parses `file:line` or `file:line:column` (from the right, so a file may contain `:`).
    pub(crate) fn parse(text: &str) -> Result<SiteSpec, String> {
        let bad = || format!("bad site `{text}`: expected file:line or file:line:column");
        let number = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
        let (rest, last) = text.rsplit_once(':').ok_or_else(bad)?;
        let last = number(last).ok_or_else(bad)?;
        let spec = match rest.rsplit_once(':') {
            Some((file, line)) if number(line).is_some() && !file.is_empty() => SiteSpec {
                file: file.to_owned(),
                line: number(line).unwrap_or(0),
                column: Some(last),
            },
            _ => SiteSpec {
                file: rest.to_owned(),
                line: last,
                column: None,
            },
        };
        if !spec.is_valid() {
            return Err(bad());
        }
        Ok(spec)
    }

    /// A non-empty file, and a line (and column) from 1.
    pub(crate) fn is_valid(&self) -> bool {
        !self.file.trim().is_empty() && self.line > 0 && self.column != Some(0)
    }

    /// Whether `site` is this location (see the type's docs).
    pub(crate) fn matches(&self, site: &Location<'_>) -> bool {
        if site.line() != self.line || self.column.is_some_and(|c| c != site.column()) {
            return false;
        }
        let file = site.file();
        match file.strip_suffix(self.file.as_str()) {
            Some("") => true,
            Some(head) => head.ends_with('/') || head.ends_with('\\'),
            None => false,
        }
    }
}

impl fmt::Display for SiteSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        match self.column {
            Some(c) => write!(f, ":{c}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_match_by_path_suffix_at_a_separator() {
        let here = Location::caller();
        let s = |file: &str, column| SiteSpec {
            file: file.to_owned(),
            line: here.line(),
            column,
        };
        assert!(s(here.file(), None).matches(here));
        assert!(s("suppress/site.rs", None).matches(here));
        assert!(s("site.rs", Some(here.column())).matches(here));
        assert!(!s("ite.rs", None).matches(here), "not inside a file name");
        assert!(!s("site.rs", Some(here.column() + 1)).matches(here));
        let other = SiteSpec {
            line: here.line() + 1,
            ..s("site.rs", None)
        };
        assert!(!other.matches(here));
    }

    #[test]
    fn sites_parse_from_the_right() {
        let p = |t: &str| SiteSpec::parse(t).map(|s| (s.file, s.line, s.column));
        assert_eq!(p("src/x.rs:12"), Ok(("src/x.rs".into(), 12, None)));
        assert_eq!(p("src/x.rs:12:5"), Ok(("src/x.rs".into(), 12, Some(5))));
        assert_eq!(p("C:\\a\\x.rs:3"), Ok(("C:\\a\\x.rs".into(), 3, None)));
        for bad in [
            "src/x.rs",
            ":12",
            "src/x.rs:0",
            "src/x.rs:x",
            "src/x.rs:12:0",
            "",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}
