//! The all-threads dump on a signal: opt-in, through signal-hook's iterator on a thread of
//! its own; a signal that cannot be caught is an error, not a crash.

#[test]
fn the_dump_signal_is_caught_and_a_forbidden_one_is_an_error() {
    assert!(lockdep::dump_on_signal(libc::SIGKILL).is_err());
    lockdep::dump_on_signal(libc::SIGUSR1).expect("SIGUSR1 can be caught");
    // SAFETY: `raise` has no preconditions; the handler installed above replaces the default
    // action of SIGUSR1 (ending the process).
    assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
    // The dump thread writes to standard error; the process is still alive, and a second
    // signal is caught too (added to the same iterator).
    lockdep::dump_on_signal(libc::SIGUSR2).expect("SIGUSR2 can be caught");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
}
