//! Suppression files: [`load_suppressions`], and the file named by
//! [`SUPPRESSIONS_ENV`], read once, before the first report is checked; with it, the stale
//! suppressions are listed at process exit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::listing::{
    LoadedSuppressions, SuppressionFileError, SuppressionInfo, SuppressionOrigin,
};
use super::parse;
use super::registry::{self, Registry};
use crate::report::{at_exit, output};

/// The environment variable that names a suppression file, read once, before the first report
/// (or the first call of a suppression function): `LOCKDEP_SUPPRESSIONS=lockdep.supp`. A
/// relative path is relative to the working directory. Unset or empty: no file. Its bad lines
/// are printed to standard error, once, and skipped; with it set, the suppressions that never
/// matched are listed at process exit.
pub const SUPPRESSIONS_ENV: &str = "LOCKDEP_SUPPRESSIONS";

/// The file was read (or there is none).
static LOADED: AtomicBool = AtomicBool::new(false);

/// Declares the good lines of `text`, the file `path`, and returns what it did.
fn declare(reg: &mut Registry, path: &Path, text: &str) -> LoadedSuppressions {
    let mut out = LoadedSuppressions::default();
    for line in parse::parse(text) {
        match line.parsed {
            Ok(rule) => {
                let origin = SuppressionOrigin::File {
                    path: path.to_owned(),
                    line: line.number,
                };
                out.added.push(reg.add(rule, origin));
            }
            Err(message) => out.errors.push(SuppressionFileError {
                path: path.to_owned(),
                line: line.number,
                text: line.text.to_owned(),
                message,
            }),
        }
    }
    out
}

/// Reads the suppression file `path` and declares each of its good lines (see the crate
/// docs, "Suppressions", for the format); the bad ones are returned, with their line
/// numbers, and skipped. Thread-safe.
///
/// # Errors
///
/// The file cannot be read (then nothing is declared).
pub fn load_suppressions(path: impl AsRef<Path>) -> std::io::Result<LoadedSuppressions> {
    env_once();
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)?;
    Ok(registry::with(|reg| declare(reg, path, &text)))
}

/// Reads the file named by [`SUPPRESSIONS_ENV`] if that was not done yet. Called before a
/// report is checked and by every suppression function. The registry lock is held while the
/// file is read, so a report on another thread waits for it, and a `fork()` (whose handlers
/// take that lock) never copies a half-read file.
pub(crate) fn env_once() {
    // Acquire: pairs with the Release store below, so a thread that skips the load also sees
    // the entry count the loader stored (the entries themselves are read under the lock).
    if LOADED.load(Ordering::Acquire) {
        return;
    }
    let messages = registry::with(|reg| {
        if std::mem::replace(&mut reg.env_loaded, true) {
            return Vec::new();
        }
        let Some(path) = std::env::var_os(SUPPRESSIONS_ENV).filter(|p| !p.is_empty()) else {
            return Vec::new();
        };
        let path = PathBuf::from(path);
        at_exit::run_at_exit(print_stale);
        match std::fs::read_to_string(&path) {
            Ok(text) => declare(reg, &path, &text)
                .errors
                .iter()
                .map(|e| format!("lockdep: bad suppression (line skipped): {e}\n"))
                .collect(),
            Err(e) => vec![format!(
                "lockdep: cannot read the suppression file {} ({SUPPRESSIONS_ENV}): {e}\n",
                path.display()
            )],
        }
    });
    // Release: see the Acquire load above.
    LOADED.store(true, Ordering::Release);
    if !messages.is_empty() {
        output::write_stderr(&messages.concat());
    }
}

/// The lines that list stale suppressions: `lockdep: 1 suppression never matched: line 3 of
/// lockdep.supp: circular: a -> b`, or a count and one indented line each. Empty if none.
pub(crate) fn stale_text(stale: &[SuppressionInfo]) -> String {
    let line = |s: &SuppressionInfo| format!("{}: {}", s.origin, s.text);
    match stale {
        [] => String::new(),
        [one] => format!("lockdep: 1 suppression never matched: {}\n", line(one)),
        many => {
            let mut text = format!("lockdep: {} suppressions never matched:\n", many.len());
            for s in many {
                text.push_str(&format!("  {}\n", line(s)));
            }
            text
        }
    }
}

/// Prints the suppressions that never matched, if any (run at exit).
fn print_stale() {
    if let Some(all) = registry::try_list() {
        let stale: Vec<SuppressionInfo> = all.into_iter().filter(|s| s.hits == 0).collect();
        let text = stale_text(&stale);
        if !text.is_empty() {
            output::write_stderr(&text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::suppress::listing::SuppressionId;

    fn info(line: usize, text: &str) -> SuppressionInfo {
        SuppressionInfo {
            id: SuppressionId(line as u64),
            text: text.to_owned(),
            kind: None,
            reason: None,
            origin: SuppressionOrigin::File {
                path: "lockdep.supp".into(),
                line,
            },
            hits: 0,
        }
    }

    #[test]
    fn stale_lines_read_as_documented() {
        assert_eq!(stale_text(&[]), "");
        assert_eq!(
            stale_text(&[info(3, "circular: a -> b")]),
            "lockdep: 1 suppression never matched: line 3 of lockdep.supp: circular: a -> b\n"
        );
        assert_eq!(
            stale_text(&[info(3, "circular: a -> b"), info(7, "recursive: c")]),
            "lockdep: 2 suppressions never matched:\n  line 3 of lockdep.supp: circular: a -> \
             b\n  line 7 of lockdep.supp: recursive: c\n"
        );
    }
}
