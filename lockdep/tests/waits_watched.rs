//! `waits_watched` turns true, for good, the first time something looks at blocked threads'
//! waits: here `deadlocks_now`. Its own process: the flag is process-wide and one-way.

#[test]
fn waits_are_watched_from_the_first_deadlock_check_on() {
    if std::env::var_os(lockdep::WATCHDOG_ENV).is_some() {
        // The environment asks for the watchdog: watched from the start.
        assert!(lockdep::waits_watched());
        return;
    }
    assert!(!lockdep::waits_watched(), "nothing looked at waits yet");
    assert!(lockdep::deadlocks_now().is_empty());
    assert!(lockdep::waits_watched());
    assert!(lockdep::waits_watched(), "and it stays so");
}
