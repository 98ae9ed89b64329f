//! The all-threads dump on a signal: opt-in, through signal-hook's iterator on a thread of
//! its own; a signal that cannot be caught is an error, not a crash. Without the crate
//! feature `signal`, an error that names the feature (CI runs this file both ways).

#[cfg(not(feature = "signal"))]
#[test]
fn without_the_feature_the_dump_signal_is_an_error_that_names_it() {
    let e = lockdep::dump_on_signal(libc::SIGUSR1).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    assert!(e.to_string().contains("`signal`"), "{e}");
}

#[cfg(feature = "signal")]
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
