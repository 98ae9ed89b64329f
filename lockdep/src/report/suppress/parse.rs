//! The suppression file format: one suppression per line, `#` comments, blank lines.
//!
//! ```text
//! <kind>: <class> [-> <class> ...]  [# reason]
//! <kind>  := circular | recursive | nesting | await | any
//! <class> := <name> | "<name>" | @<file>:<line>   followed by an optional  at <file>:<line>
//! ```
//!
//! A name is a class name as reports print it; quotes (with `\"` and `\\`) are needed only
//! for names containing white space, `->`, `#`, a quote or a backslash, or starting with `@`.
//! (An unquoted name with a space is an error rather than a name, because it is far more
//! often a missing arrow: `circular: a b` for `circular: a -> b`.) `@file:line` is every class of locks constructed there. The reason is the
//! line's trailing comment, or else the comment lines directly above it. A bad line gives an
//! error with its number and is skipped; the other lines still count.

use super::rule::{ClassRef, Designator, Suppression, ANY, SUPPRESSIBLE};
use super::site::SiteSpec;

/// One suppression line of a file: its number (from 1), its text, and the suppression or why
/// it is not one.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    pub(crate) number: usize,
    pub(crate) text: &'a str,
    pub(crate) parsed: Result<Suppression, String>,
}

/// Every line of `text` that is neither blank nor only a comment.
pub(crate) fn parse(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    // The comment lines directly above the current line.
    let mut block: Vec<&str> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let (code, comment) = match split_comment(raw) {
            Ok(parts) => parts,
            Err(e) => {
                out.push(Line {
                    number: i + 1,
                    text: raw.trim(),
                    parsed: Err(e),
                });
                block.clear();
                continue;
            }
        };
        let code = code.trim();
        if code.is_empty() {
            match comment {
                Some(c) if !c.is_empty() => block.push(c),
                Some(_) => {}
                None => block.clear(),
            }
            continue;
        }
        let reason = match comment.filter(|c| !c.is_empty()) {
            Some(c) => Some(c.to_owned()),
            None if !block.is_empty() => Some(block.join(" ")),
            None => None,
        };
        block.clear();
        let parsed = line(code).and_then(|s| {
            s.check().map_err(|e| e.to_string())?;
            Ok(Suppression { reason, ..s })
        });
        out.push(Line {
            number: i + 1,
            text: raw.trim(),
            parsed,
        });
    }
    out
}

/// The places in `s` outside double quotes (a `\` inside quotes escapes the next character):
/// calls `f(byte index, char)` for each; an error for an unterminated quote.
fn outside_quotes(s: &str, mut f: impl FnMut(usize, char) -> bool) -> Result<(), String> {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in s.char_indices() {
        if quoted {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
        } else if c == '"' {
            quoted = true;
        } else if !f(i, c) {
            return Ok(());
        }
    }
    if quoted {
        return Err("unterminated quote".to_owned());
    }
    Ok(())
}

/// The code of a line and its comment (after the first `#` outside quotes), trimmed.
fn split_comment(raw: &str) -> Result<(&str, Option<&str>), String> {
    let mut hash = None;
    outside_quotes(raw, |i, c| {
        if c == '#' {
            hash = Some(i);
        }
        hash.is_none()
    })?;
    Ok(match hash {
        Some(i) => (&raw[..i], Some(raw[i + 1..].trim())),
        None => (raw, None),
    })
}

/// `<kind>: <class> -> ...`, without its comment.
fn line(code: &str) -> Result<Suppression, String> {
    let (word, rest) = code.split_once(':').ok_or_else(|| {
        "expected `<kind>: <class> -> <class>`, e.g. `circular: accounts -> ledger`".to_owned()
    })?;
    let word = word.trim();
    let kind = if word == ANY {
        None
    } else {
        let known = SUPPRESSIBLE.iter().find(|k| k.1 == word).ok_or_else(|| {
            format!(
                "unknown report kind `{word}`: a line starts with `circular:`, `recursive:`, \
                 `nesting:`, `await:` or `any:`"
            )
        })?;
        Some(known.0)
    };
    let mut arrows = Vec::new();
    outside_quotes(rest, |i, _| {
        if rest[i..].starts_with("->") {
            arrows.push(i);
        }
        true
    })?;
    let mut classes = Vec::new();
    let mut start = 0;
    for end in arrows.into_iter().chain([rest.len()]) {
        classes.push(class(rest[start..end].trim())?);
        start = end + 2;
    }
    Ok(Suppression {
        classes,
        kind,
        reason: None,
    })
}

/// `<designator> [at <site>]`.
fn class(text: &str) -> Result<ClassRef, String> {
    if text.is_empty() {
        return Err("empty class: expected a class between the arrows".to_owned());
    }
    let mut at = None;
    outside_quotes(text, |i, _| {
        if text[i..].starts_with(" at ") {
            at = Some(i);
        }
        true
    })?;
    let (designator, at) = match at {
        Some(i) => (
            text[..i].trim(),
            Some(SiteSpec::parse(text[i + 4..].trim())?),
        ),
        None => (text, None),
    };
    let class = if let Some(quoted) = designator.strip_prefix('"') {
        Designator::Name(unquote(quoted)?)
    } else if let Some(site) = designator.strip_prefix('@') {
        Designator::Constructed(SiteSpec::parse(site)?)
    } else if designator.contains(char::is_whitespace) {
        return Err(format!(
            "`{designator}`: a class name with a space must be quoted (\"{designator}\"); \
             for a dependency between two classes write `->` between them"
        ));
    } else {
        Designator::Name(designator.to_owned())
    };
    Ok(ClassRef { class, at })
}

/// The name in `rest`, the text after an opening quote, which must end at its closing quote.
fn unquote(rest: &str) -> Result<String, String> {
    let mut name = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.extend(chars.next()),
            '"' if chars.as_str().trim().is_empty() => return Ok(name),
            '"' => return Err(format!("text after the quoted name \"{name}\"")),
            c => name.push(c),
        }
    }
    Err("unterminated quote".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::types::ReportKind;

    const FILE: &str = "\
# Accounts and the ledger: the audit path holds the audit lock
# around both, so the two orders never run at once.
circular: accounts -> ledger

recursive: Mutex<Node>@src/tree.rs:12   # re-entered through try_lock only
circ: a -> b
nesting: \"fn() -> u8\" at src/x.rs:4 -> \"fn() -> u8\" at src/x.rs:5
any: @src/pool.rs:7 -> registry at src/reg.rs:30:9
circular: *
# not a reason for the next line: a blank line separates them

any: alone
circular: a ->
";

    #[test]
    fn every_line_parses_or_says_why_with_its_number() {
        let lines = parse(FILE);
        let numbers: Vec<usize> = lines.iter().map(|l| l.number).collect();
        assert_eq!(numbers, [3, 5, 6, 7, 8, 9, 12, 13]);
        let ok = |i: usize| lines[i].parsed.as_ref().expect("a good line");
        let err = |i: usize| lines[i].parsed.as_ref().expect_err("a bad line").clone();

        assert_eq!(ok(0).to_string(), "circular: accounts -> ledger");
        assert_eq!(
            ok(0).reason.as_deref(),
            Some(
                "Accounts and the ledger: the audit path holds the audit lock around both, so \
                 the two orders never run at once."
            )
        );
        assert_eq!(ok(1).kind, Some(ReportKind::RecursiveLocking));
        assert_eq!(
            ok(1).classes,
            [ClassRef::name("Mutex<Node>@src/tree.rs:12")]
        );
        assert_eq!(
            ok(1).reason.as_deref(),
            Some("re-entered through try_lock only")
        );
        assert!(err(2).contains("unknown report kind `circ`"), "{}", err(2));
        assert_eq!(
            ok(3).classes,
            [
                ClassRef::name("fn() -> u8").acquired_at("src/x.rs", 4),
                ClassRef::name("fn() -> u8").acquired_at("src/x.rs", 5)
            ]
        );
        assert_eq!(ok(3).reason, None);
        assert_eq!(ok(4).kind, None);
        let site = ok(4).classes[1].at.clone().expect("a site");
        assert_eq!((site.line, site.column), (30, Some(9)));
        assert_eq!(ok(4).classes[0], ClassRef::constructed_at("src/pool.rs", 7));
        assert!(err(5).contains("no wildcards"), "{}", err(5));
        assert!(err(6).contains("one class"), "{}", err(6));
        assert!(err(7).contains("empty class"), "{}", err(7));
    }

    #[test]
    fn the_text_of_a_suppression_reads_back_as_itself() {
        for line in [
            "circular: accounts at src/bank.rs:40 -> ledger",
            "nesting: \"a \\\"quoted\\\" # name\" at x.rs:1:2 -> \"a \\\"quoted\\\" # name\"",
            "any: @src/pool.rs:7 -> \"@not a site\" -> \" padded \"",
            "recursive: \"back\\\\slash\"",
            "await: @src/pool.rs:7 at src/pool.rs:9",
        ] {
            let parsed = parse(line);
            let s = parsed[0].parsed.as_ref().expect(line);
            assert_eq!(s.to_string(), line);
        }
    }

    /// The sample of the crate docs ("Suppressions").
    #[test]
    fn the_documented_sample_parses() {
        let sample = "\
# accounts and the ledger: ledger -> accounts runs only in the start-up audit, before any
# worker thread exists (the reason is this comment block, or a comment after the line).
circular: accounts -> ledger
nesting: Mutex<Node>@src/tree.rs:12 at src/tree.rs:40   # parent before child
circular: @src/pool.rs:20 at src/pool.rs:57 -> registry
any: \"fn() -> u8\" -> stats
await: config at src/config.rs:31   # read once at start-up, on a current-thread runtime
";
        let lines = parse(sample);
        assert_eq!(lines.len(), 5);
        for l in &lines {
            let s = l.parsed.as_ref().expect(l.text);
            assert_eq!(s.to_string(), l.text.split(" #").next().unwrap().trim_end());
        }
        assert_eq!(
            lines[1].parsed.as_ref().unwrap().reason.as_deref(),
            Some("parent before child")
        );
    }

    #[test]
    fn malformed_quotes_and_sites_are_errors() {
        for bad in [
            "circular: \"open -> b",
            "circular: \"a\" b -> c",
            "circular: a at nowhere -> b",
            "circular: @src/x.rs -> b",
            "accounts -> ledger",
            "circular: A B",
            "awaits: a",
            "await: a -> b",
        ] {
            let lines = parse(bad);
            assert_eq!(lines.len(), 1, "{bad}");
            assert!(lines[0].parsed.is_err(), "{bad}: {:?}", lines[0].parsed);
        }
    }
}
