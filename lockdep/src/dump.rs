//! The all-threads dump: every thread's held locks and the lock it waits for, from any thread
//! (the kernel's `debug_show_all_locks()`, SysRq-d), as a value, as text, and on a signal.

use std::fmt;
use std::io;

use crate::graph_lock::graph_lock;
use crate::report::{self, build, TaskLocks, ThreadLocks};
use crate::thread;

/// Every thread that held or waited for a lock when the dump was taken, and every
/// instrumented task that held async locks between polls ([`all_held_locks`]). Its `Display`
/// is the kernel's layout (tasks after the threads):
///
/// ```text
/// Showing all locks held in the system:
/// 2 locks held by worker/3:
///  #0: 0x55d0c1a0 (accounts), at: src/bank.rs:40:9
///  #1: 0x55d0c1f0 (ledger), at: src/bank.rs:41:9
/// 1 lock held by auditor/4:
///  #0: 0x55d0c2a0 (audit log), at: src/audit.rs:12:5
///  blocked for 2.001s on: 0x55d0c1a0 (accounts), at: src/audit.rs:13:5
/// no locks held by pool-worker/5.
///  sleeping for 9.250s on condvar 0x55d0c400, to re-lock: 0x55d0c3c0 (jobs), at: src/pool.rs:30:16
///
/// =============================================
/// ```
///
/// A thread asleep in a condvar wait released the wait's mutex: it is not among the mutex's
/// holders, and its [`ThreadLocks::condvar`] names the condvar and the mutex (the site is the
/// wait's call) instead.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllLocks {
    /// One entry per thread that held or waited for a lock, in no particular order. Threads
    /// that hold nothing are left out.
    pub threads: Vec<ThreadLocks>,
    /// One entry per instrumented async task that holds async locks between two of its polls
    /// (no thread runs it, so no thread's entry shows them), in no particular order.
    pub tasks: Vec<TaskLocks>,
}

impl AllLocks {
    /// The threads that hold the lock instance `instance` (its [`LockDesc::instance`]); not
    /// the threads asleep in a condvar wait that will re-lock it.
    ///
    /// [`LockDesc::instance`]: crate::LockDesc::instance
    pub fn holders_of(&self, instance: usize) -> Vec<&ThreadLocks> {
        self.threads
            .iter()
            .filter(|t| t.held.iter().any(|l| l.instance == instance))
            .collect()
    }

    /// The tasks that hold the async lock instance `instance` between polls.
    pub fn tasks_holding(&self, instance: usize) -> Vec<&TaskLocks> {
        self.tasks
            .iter()
            .filter(|t| t.held.iter().any(|l| l.instance == instance))
            .collect()
    }
}

impl fmt::Display for AllLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "\nShowing all locks held in the system:")?;
        for t in &self.threads {
            write!(f, "{t}")?;
        }
        for t in &self.tasks {
            write!(f, "{t}")?;
        }
        writeln!(f, "\n=============================================")
    }
}

/// Every thread's held locks (class, instance, mode and acquisition site) and the lock each
/// one is blocked on (or the condvar wait it sleeps in), read from any thread (the kernel's
/// `debug_show_all_locks()`), and the async locks of every instrumented task that holds some
/// between polls.
///
/// Each thread's part is consistent (copied while its owner did not change it; the copy
/// retries otherwise), but the threads are copied one after the other, and the tasks after
/// the threads, so a lock that changes hands during the dump may show twice or not at all,
/// and so may the locks of a task whose poll starts or ends meanwhile (during a poll they are
/// on the polling thread's stack, between polls in the task list): take it while the threads
/// and tasks of interest are blocked or waiting. Takes the graph lock once, for class names. Thread-safe; allocates; never
/// blocks on a lock the threads being dumped can hold.
pub fn all_held_locks() -> AllLocks {
    let snaps = thread::snapshots();
    let between_polls = crate::task::held_between_polls();
    if snaps.is_empty() && between_polls.is_empty() {
        return AllLocks {
            threads: Vec::new(),
            tasks: Vec::new(),
        };
    }
    let g = graph_lock();
    AllLocks {
        threads: build::all_threads(&g.graph, &snaps),
        tasks: between_polls
            .iter()
            .map(|t| TaskLocks {
                task: t.task,
                held: t.held.iter().map(|h| build::lock(&g.graph, h)).collect(),
                waiting: t.waiting.as_ref().map(|h| build::lock(&g.graph, h)),
            })
            .collect(),
    }
}

/// Writes [`all_held_locks`] to standard error (one write).
pub fn show_all_locks() {
    report::write_stderr(&all_held_locks().to_string());
}

/// From now on, the signal `signal` (for example `libc::SIGQUIT` or `libc::SIGUSR1`) writes
/// [`show_all_locks`] to standard error. Opt-in: the first call starts one thread that waits
/// for the signals through `signal-hook`'s iterator (a signal handler may neither allocate
/// nor lock, so the dump is made on that thread). Replaces the signal's default action (for
/// `SIGQUIT`, ending the process).
///
/// Needs the crate feature `signal`: on by default here, but `instrumented-locks` (and so the
/// parking_lot compat crates) depend on lockdep without it, so that a patched program's
/// dependency graph gets no `signal-hook`, whose registry crate can conflict with an older
/// one the program's lockfile pins (Cargo then keeps the real parking_lot, unpatched). Turn
/// it on with `instrumented-locks`' feature `signal`, or with a dependency of the program's
/// own on `lockdep` with `features = ["signal"]` (Cargo unifies features).
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] for a signal that must not be caught (`SIGKILL`,
/// `SIGSTOP`, and the ones a fault raises, `signal_hook::consts::FORBIDDEN`); the error of
/// `signal-hook` registering the handler, or of spawning the thread;
/// [`io::ErrorKind::Unsupported`] in a build without the feature `signal`.
#[cfg(not(feature = "signal"))]
pub fn dump_on_signal(signal: i32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "lockdep::dump_on_signal({signal}): built without lockdep's feature `signal` \
             (enable `lockdep/signal` or `instrumented-locks/signal`)"
        ),
    ))
}

/// See the other definition (a build without the feature `signal`).
#[cfg(feature = "signal")]
pub fn dump_on_signal(signal: i32) -> io::Result<()> {
    use signal_hook::iterator::Signals;
    use std::sync::Mutex;
    if signal_hook::consts::FORBIDDEN.contains(&signal) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("signal {signal} cannot be caught (or must not be, as a fault's)"),
        ));
    }
    static HANDLE: Mutex<Option<signal_hook::iterator::Handle>> = Mutex::new(None);
    let mut handle = HANDLE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = handle.as_ref() {
        return h.add_signal(signal);
    }
    let mut signals = Signals::new([signal])?;
    *handle = Some(signals.handle());
    std::thread::Builder::new()
        .name("lockdep-dump".to_owned())
        .spawn(move || {
            for _ in signals.forever() {
                show_all_locks();
            }
        })?;
    Ok(())
}
