//! Writing reports to the process's standard error.
//!
//! A report is written to file descriptor 2 directly, with one `write_all` of its whole text
//! under a lock of our own:
//!
//! - not with `eprintln!`, whose output the test harness captures and shows only for failing
//!   tests, so that a report made in a passing test is still seen under plain `cargo test`;
//! - not through `std::io::stderr()`'s own lock either, which a thread of the parent may hold
//!   when another thread calls `fork()`, so that the child's first report would hang; our lock
//!   is taken around every fork ([`fork`]);
//! - whole, so that reports of two threads never interleave (`eprintln!` from other code may
//!   still land between two reports, never inside one).
//!
//! With [`REPORT_FILE_ENV`] set, the same text is also appended to that file, in one
//! `write(2)` per text on a descriptor opened with `O_APPEND`: the processes of one test run
//! (doc tests, whose standard error rustdoc keeps unless they fail, or a suite's child
//! processes) can share one file without tearing each other's reports.

use std::any::Any;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::fork::{self, Participant, Rank};

/// Serializes our writes to standard error. Guards no data, so poisoning is ignored.
static OUTPUT: Mutex<()> = Mutex::new(());

static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork::nothing,
};

fn fork_prepare() -> Box<dyn Any> {
    Box::new(OUTPUT.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The environment variable naming a file that everything lockdep writes to standard error
/// (reports, the exit summary, dumps) is also appended to: `LOCKDEP_REPORT_FILE=/tmp/ld.txt
/// cargo test` collects the reports of every process of the run, passing doc tests included.
/// Each process that validated any lock also appends, at a normal exit, one line to the file
/// alone: `lockdep: exit of pid 4242 (prog): 16 lock classes, 14 dependencies, 0 reports`, so
/// a clean run is told from one that validated nothing (no such line).
/// The file is created if needed (mode 0644 before the umask) and opened at the first write;
/// a file that cannot be opened gets one line on standard error, and reports go on to standard
/// error alone. Read once per process (a forked child keeps the parent's descriptor). Unix
/// only; elsewhere the variable is ignored.
pub const REPORT_FILE_ENV: &str = "LOCKDEP_REPORT_FILE";

/// [`REPORT_FILE_ENV`]'s descriptor: [`UNREAD`] until the first write looks, [`NO_FILE`] when
/// there is none (unset, empty, or not opened), else the descriptor. Written only under
/// `OUTPUT`.
static REPORT_FILE: AtomicI32 = AtomicI32::new(UNREAD);
const UNREAD: i32 = -2;
const NO_FILE: i32 = -1;

/// Writes `text` to standard error in one piece, and to [`REPORT_FILE_ENV`]'s file if one is
/// set. Errors (a closed descriptor, a full disk) are ignored: a report must never fail the
/// program it watches. Thread-safe; takes no other lock.
pub(crate) fn write_stderr(text: &str) {
    fork::join(Rank::Output, &FORK);
    let _serial = OUTPUT.lock().unwrap_or_else(PoisonError::into_inner);
    write_all(2, text.as_bytes());
    let file = report_file();
    if file >= 0 {
        write_all(file, text.as_bytes());
    }
}

/// Appends `text` to [`REPORT_FILE_ENV`]'s file alone (nothing if none is set), in one write,
/// as [`write_stderr`] does. Thread-safe.
pub(crate) fn write_report_file_only(text: &str) {
    fork::join(Rank::Output, &FORK);
    let _serial = OUTPUT.lock().unwrap_or_else(PoisonError::into_inner);
    let file = report_file();
    if file >= 0 {
        write_all(file, text.as_bytes());
    }
}

/// The report file's descriptor, opened at the first call ([`NO_FILE`] if none). The caller
/// holds `OUTPUT`.
fn report_file() -> i32 {
    // Relaxed: written and read under OUTPUT, which orders them.
    let fd = REPORT_FILE.load(Ordering::Relaxed);
    if fd != UNREAD {
        return fd;
    }
    let fd = open_report_file();
    // Relaxed: as above.
    REPORT_FILE.store(fd, Ordering::Relaxed);
    fd
}

#[cfg(unix)]
fn open_report_file() -> i32 {
    use std::os::unix::ffi::OsStrExt;
    let Some(path) = std::env::var_os(REPORT_FILE_ENV).filter(|p| !p.is_empty()) else {
        return NO_FILE;
    };
    let Ok(c_path) = std::ffi::CString::new(path.as_bytes()) else {
        write_all(
            2,
            format!(
                "lockdep: {REPORT_FILE_ENV} holds a NUL byte; reports go to standard error only\n"
            )
            .as_bytes(),
        );
        return NO_FILE;
    };
    // SAFETY: `c_path` is a NUL-terminated string that lives across the call; `open(2)` only
    // reads it, and the mode is passed as the variadic third argument it expects with O_CREAT.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        write_all(
            2,
            format!(
                "lockdep: {REPORT_FILE_ENV}={}: {err}; reports go to standard error only\n",
                path.to_string_lossy()
            )
            .as_bytes(),
        );
        return NO_FILE;
    }
    fd
}

#[cfg(not(unix))]
fn open_report_file() -> i32 {
    NO_FILE
}

#[cfg(unix)]
fn write_all(fd: i32, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid, initialized buffer of `bytes.len()` bytes for the whole
        // call; `write(2)` only reads it. The descriptor (2, or the report file's, which is
        // never closed) is not owned by anything here: a closed or invalid descriptor makes
        // the call fail with EBADF, which is handled below.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            return;
        }
    }
}

#[cfg(not(unix))]
fn write_all(_fd: i32, bytes: &[u8]) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(bytes);
}
