//! Writing reports to the process's standard error.
//!
//! A report is written to file descriptor 2 directly, with one `write_all` of its whole text
//! under a lock of our own:
//!
//! - not with `eprintln!`, whose output the test harness captures and shows only for failing
//!   tests, so that a report made in a passing test is still seen under plain `cargo test`;
//! - not through `std::io::stderr()`'s own lock either, which a thread of the parent may hold
//!   when another thread calls `fork()`, so that the child's first report would hang; our lock
//!   is taken around every fork ([`fork`](crate::fork));
//! - whole, so that reports of two threads never interleave (`eprintln!` from other code may
//!   still land between two reports, never inside one).

use std::any::Any;
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

/// Writes `text` to standard error in one piece. Errors (a closed descriptor, a full disk) are
/// ignored: a report must never fail the program it watches. Thread-safe; takes no other lock.
pub(crate) fn write_stderr(text: &str) {
    fork::join(Rank::Output, &FORK);
    let _serial = OUTPUT.lock().unwrap_or_else(PoisonError::into_inner);
    write_all(text.as_bytes());
}

#[cfg(unix)]
fn write_all(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid, initialized buffer of `bytes.len()` bytes for the whole
        // call; `write(2)` only reads it. Descriptor 2 is not owned by anything here: a closed
        // or invalid descriptor makes the call fail with EBADF, which is handled below.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
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
fn write_all(bytes: &[u8]) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(bytes);
}
