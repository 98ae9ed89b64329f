//! Whether cycle reports carry stacks: the setting, and the environment variable that sets it
//! without a code change.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::report;

/// Neither [`BACKTRACE_ENV`] was read nor [`set_capture_backtraces`] called yet.
const UNDECIDED: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// [`UNDECIDED`], [`OFF`] or [`ON`]. No `Once`: nothing here ever blocks, so a `fork()` in the
/// middle of the first read leaves nothing half-done in the child.
static CAPTURE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// Whether a full stack trace (`std::backtrace::Backtrace::force_capture`) is captured when
/// an acquisition records a *new* dependency, stored with it, and shown in cycle reports
/// (default `false`: only the two `Location`s of each dependency are kept, which costs
/// nothing). A capture walks the whole stack, far more work than an acquisition (symbols are
/// resolved only when a report prints it), but it is paid only when a dependency is new (once
/// per acquisition), never on a chain-cache hit. Thread-safe.
///
/// Until the first call, [`BACKTRACE_ENV`] decides (read at the first new dependency); a call
/// overrides it from then on.
pub fn set_capture_backtraces(on: bool) {
    // Relaxed: an independent setting; a later first read of the variable finds it decided.
    CAPTURE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

/// The environment variable that switches backtrace capture on for a run without a code
/// change (a crate patched with the compat parking_lot, whose report sites are inside a
/// wrapper of its own): `LOCKDEP_BACKTRACE=1` is [`set_capture_backtraces`]`(true)` (so are
/// `true`, `on`, `yes`, and `full` or `short` as `RUST_BACKTRACE` takes them: the capture is
/// always full), `0` (or empty) leaves it off. Any other value leaves it off and says so on
/// standard error.
pub const BACKTRACE_ENV: &str = "LOCKDEP_BACKTRACE";

/// What a value of [`BACKTRACE_ENV`] asks for: `Some(on)`, or `None` if it is not a switch.
fn backtrace_switch(v: &OsStr) -> Option<bool> {
    match v.to_str().map(str::trim) {
        Some("1" | "true" | "on" | "yes" | "full" | "short") => Some(true),
        Some("" | "0" | "false" | "off" | "no") => Some(false),
        _ => None,
    }
}

/// What [`BACKTRACE_ENV`] decides, stored unless a call decided first; the first caller to
/// decide says so if the value is not a switch (concurrent first readers may both read the
/// variable, only one stores).
#[cold]
fn decide_from_env() -> u8 {
    let v = std::env::var_os(BACKTRACE_ENV);
    let switch = v.as_deref().map(backtrace_switch);
    let decided = if switch == Some(Some(true)) { ON } else { OFF };
    // Relaxed (both): an independent setting, no data is read through it.
    match CAPTURE.compare_exchange(UNDECIDED, decided, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {
            if switch == Some(None) {
                report::write_stderr(&format!(
                    "lockdep: {BACKTRACE_ENV}={v:?} is not 1 or 0; backtraces stay off\n",
                    v = v.unwrap_or_default()
                ));
            }
            decided
        }
        Err(now) => now,
    }
}

/// Read on the slow path only: when a dependency is new.
pub(crate) fn capture_backtraces() -> bool {
    // Relaxed: an independent setting.
    let mut state = CAPTURE.load(Ordering::Relaxed);
    if state == UNDECIDED {
        state = decide_from_env();
    }
    state == ON
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backtrace_env_values() {
        for on in ["1", "true", " on ", "yes", "full"] {
            assert_eq!(backtrace_switch(OsStr::new(on)), Some(true), "{on:?}");
        }
        for off in ["", "0", "false", "off", "no"] {
            assert_eq!(backtrace_switch(OsStr::new(off)), Some(false), "{off:?}");
        }
        for bad in ["2", "maybe"] {
            assert_eq!(backtrace_switch(OsStr::new(bad)), None, "{bad:?}");
        }
    }
}
