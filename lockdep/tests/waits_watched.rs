//! `waits_watched` turns true, for good, the first time something looks at blocked threads'
//! waits: here `deadlocks_now`. Its own process: the flag is process-wide and one-way.

#[test]
fn waits_are_watched_from_the_first_deadlock_check_on() {
    let env = std::env::var(lockdep::WATCHDOG_ENV).ok();
    if env.is_some_and(|v| v.trim().parse::<u64>().is_ok_and(|ms| ms > 0)) {
        // The environment asks for the watchdog: watched from the start.
        assert!(lockdep::waits_watched());
        return;
    }
    assert!(!lockdep::waits_watched(), "nothing looked at waits yet");
    assert!(lockdep::deadlocks_now().is_empty());
    assert!(lockdep::waits_watched());
    assert!(lockdep::waits_watched(), "and it stays so");
}
