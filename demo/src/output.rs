//! Output files named on the command line (`--json`, `--svg`): checked, opened and given
//! their space before a run, so a bad target fails in milliseconds instead of after the run,
//! and written at its end.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// One output file, open for writing. Its old contents stay until [`Output::write`].
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    flag: &'static str,
    file: File,
    regular: bool,
}

/// The path `p` names once symlinks and `.`/`..` are resolved, as far as it exists: two
/// spellings of one file resolve alike. A path whose directory does not exist resolves to
/// itself (opening it fails anyway).
fn resolve(p: &Path) -> PathBuf {
    if let Ok(c) = p.canonicalize() {
        return c;
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (dir.canonicalize(), p.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => p.to_path_buf(),
    }
}

/// Whether `err` says the target has no room (full device or file system, quota, size limit).
fn is_no_space(err: &std::io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
    )
}

/// Reserves `bytes` for a regular file without changing its size (Linux `fallocate` with
/// `FALLOC_FL_KEEP_SIZE`). A file system that cannot reserve space is not an error; one
/// that has no room is.
#[cfg(target_os = "linux")]
fn reserve(file: &File, bytes: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(bytes).unwrap_or(libc::off_t::MAX);
    // SAFETY: `file` owns an open descriptor for the duration of the call; fallocate only
    // reads its integer arguments.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if is_no_space(&err) {
        Err(err)
    } else {
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_file: &File, _bytes: u64) -> std::io::Result<()> {
    Ok(())
}

/// Opens every `(flag, path, bytes to reserve)` for writing, before any work is done.
///
/// # Errors
/// A message naming the flag and the path when two outputs name the same file (also through
/// different spellings or links), when a path cannot be opened for writing (missing
/// directory, a directory, no permission), or when it has no room for the reserved bytes
/// (a full file system; a device such as `/dev/full` that refuses writes). Files this call
/// created are removed again on error.
pub fn open_all(requests: &[(&'static str, &Path, u64)]) -> Result<Vec<Output>, String> {
    for (i, (flag_a, a, _)) in requests.iter().enumerate() {
        for (flag_b, b, _) in &requests[..i] {
            if resolve(a) == resolve(b) {
                return Err(format!(
                    "{flag_b} {} and {flag_a} {} name the same file; give each output its own file",
                    b.display(),
                    a.display()
                ));
            }
        }
    }
    let mut created: Vec<PathBuf> = Vec::new();
    let mut outputs = Vec::new();
    for &(flag, path, bytes) in requests {
        match open_one(flag, path, bytes, &mut created) {
            Ok(o) => outputs.push(o),
            Err(e) => {
                drop(outputs);
                for p in &created {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
        }
    }
    Ok(outputs)
}

fn open_one(
    flag: &'static str,
    path: &Path,
    bytes: u64,
    created: &mut Vec<PathBuf>,
) -> Result<Output, String> {
    let fail = |e: std::io::Error| format!("cannot write {} ({flag}): {e}", path.display());
    let existed = path.exists();
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(fail)?;
    if !existed {
        created.push(path.to_path_buf());
    }
    let regular = file.metadata().map_err(fail)?.is_file();
    if regular {
        reserve(&file, bytes).map_err(fail)?;
    } else {
        // A device or pipe: an empty write reaches its driver, which refuses it if it would
        // refuse the real one (`/dev/full` answers ENOSPC); it writes nothing.
        (&file).write(&[]).map_err(fail)?;
    }
    Ok(Output {
        path: path.to_path_buf(),
        flag,
        file,
        regular,
    })
}

impl Output {
    /// Replaces the file's contents with `text` and says so on stderr.
    ///
    /// # Errors
    /// A message naming the path when writing fails.
    pub fn write(mut self, text: &str) -> Result<(), String> {
        let fail = |e: std::io::Error| {
            format!("cannot write {} ({}): {e}", self.path.display(), self.flag)
        };
        if self.regular {
            self.file.seek(SeekFrom::Start(0)).map_err(fail)?;
        }
        self.file.write_all(text.as_bytes()).map_err(fail)?;
        if self.regular {
            self.file.set_len(text.len() as u64).map_err(fail)?;
        }
        self.file.flush().map_err(fail)?;
        eprintln!("wrote {}", self.path.display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("demo-output-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn two_spellings_of_one_file_collide() {
        let dir = scratch("collide");
        let a = dir.join("out.json");
        let b = dir.join("sub").join("..").join("out.json");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let err = open_all(&[("--json", &a, 10), ("--svg", &b, 10)]).unwrap_err();
        assert!(err.contains("name the same file"), "{err}");
        assert!(!a.exists(), "nothing is created when outputs collide");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rewrites_a_longer_old_file_and_cleans_up_on_error() {
        let dir = scratch("rewrite");
        let a = dir.join("a.json");
        std::fs::write(&a, "old contents, longer than the new ones").unwrap();
        let outs = open_all(&[("--json", &a, 1 << 16)]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&a).unwrap().len(),
            38,
            "kept until written"
        );
        outs.into_iter().next().unwrap().write("new").unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new");
        // The second output fails (its directory is missing): the first, created by this
        // call, is removed again.
        let b = dir.join("b.svg");
        let missing = dir.join("no-such-dir").join("c.svg");
        let err = open_all(&[("--json", &b, 10), ("--svg", &missing, 10)]).unwrap_err();
        assert!(err.contains("--svg") && err.contains("c.svg"), "{err}");
        assert!(!b.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_device_is_refused_up_front() {
        let err = open_all(&[("--svg", Path::new("/dev/full"), 10)]).unwrap_err();
        assert!(err.contains("No space left"), "{err}");
    }
}
