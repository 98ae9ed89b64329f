//! How the dynamic-key table waits for lookups: a small strategy hook, so that benchmarks can
//! compare hazard pointers with other read-side protection on the very same table.
//!
//! The default, [`KeyTableSync::Hazptr`], is what [`lookup`](super::lookup) describes: a
//! lookup protects its bucket head with a hazard pointer, and unregister calls
//! `hazptr::Domain::synchronize` (shared scan) on that one bucket.
//! [`KeyTableSync::HazptrDirect`] keeps the same readers but waits with
//! `synchronize_direct` (self-scan only). [`KeyTableSync::External`] hands both sides to an
//! object implementing [`KeySyncStrategy`] (e.g. a sharded reader-writer lock, or userspace
//! RCU). In every mode a read section covers exactly one bucket walk.
//!
//! Switching is safe at any time: [`set_key_table_sync`] excludes unregisters while it
//! switches, publishes the new strategy, and then waits for every lookup that may still be
//! inside a read section of the old strategy (the old strategy's wait over all buckets).
//! A lookup re-checks the strategy after entering its read section and retries if it changed,
//! so no walk runs under a strategy that nobody waits for.

use std::any::Any;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use crossbeam_utils::CachePadded;
use hazptr::Domain;

use super::table::bucket_head;
use crate::fork::{self, Participant, Rank};
use crate::limits::KEY_BUCKETS;

/// Read-side protection and grace-period wait for the dynamic-key table, supplied by the user
/// through [`KeyTableSync::External`].
///
/// Contract: after `synchronize(bucket)` returns, every read section of `bucket` that was
/// entered (`read_enter` returned) before `synchronize` began has exited (`read_exit` was
/// called). Sections of other buckets need not be waited for. A `read_enter` that returns
/// after `synchronize` began must observe every store made before `synchronize` began
/// (acquire ordering), as an RCU read section or a reader lock does.
///
/// Read sections never nest within one thread and never contain a `synchronize` call.
pub trait KeySyncStrategy: Send + Sync {
    /// Enters a read section that covers one walk of bucket `bucket` (0..[`KEY_BUCKETS`]);
    /// the returned token is passed to [`read_exit`](Self::read_exit) on the same thread.
    fn read_enter(&self, bucket: usize) -> usize;
    /// Leaves the read section that `read_enter` opened.
    fn read_exit(&self, token: usize);
    /// Waits for the read sections of `bucket` in progress when the call began (a grace
    /// period for that bucket).
    fn synchronize(&self, bucket: usize);
    /// Waits for every read section in progress when the call began, in any bucket. The
    /// default calls [`synchronize`](Self::synchronize) on each bucket; a strategy with a
    /// global grace period should override it with one wait.
    fn synchronize_all(&self) {
        for b in 0..KEY_BUCKETS {
            self.synchronize(b);
        }
    }
}

/// How the dynamic-key table protects lookups and how unregister waits for them.
#[derive(Clone, Copy)]
pub enum KeyTableSync {
    /// Hazard pointer on the bucket head; unregister waits with `hazptr::Domain::synchronize`
    /// (self-scan, then the shared scan). The default.
    Hazptr,
    /// Hazard pointer on the bucket head; unregister waits with
    /// `hazptr::Domain::synchronize_direct` (self-scan only, no batching).
    HazptrDirect,
    /// A user strategy for both sides. It must live for the rest of the process (leak a
    /// `Box` to get one), because lookups that started before a switch may still use it.
    External(&'static dyn KeySyncStrategy),
}

impl std::fmt::Debug for KeyTableSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyTableSync::Hazptr => f.write_str("Hazptr"),
            KeyTableSync::HazptrDirect => f.write_str("HazptrDirect"),
            KeyTableSync::External(_) => f.write_str("External(..)"),
        }
    }
}

/// The external strategy in force, or null for the two hazard-pointer modes. Points at a
/// leaked `&'static dyn KeySyncStrategy` (a thin pointer to a fat one), never freed.
static EXTERNAL: AtomicPtr<&'static dyn KeySyncStrategy> = AtomicPtr::new(ptr::null_mut());
/// With `EXTERNAL` null: unregister waits with `synchronize_direct` instead of `synchronize`.
static DIRECT: AtomicBool = AtomicBool::new(false);
/// Unregisters hold it shared from unlink to the end of their wait; a switch holds it
/// exclusively, so no unregister ever straddles two strategies. It guards no data, so
/// poisoning (a user strategy that panicked) is ignored.
///
/// On cache lines of its own: every unregister writes its lock word twice, and every key
/// lookup of every thread reads `EXTERNAL`. Sharing a line with it, each unregister took two
/// cache misses on a line the lookups had just read (measured: a quarter of the unregister's
/// own time with one traffic thread, see BENCHMARKS.md, "The main job").
static SWITCH: CachePadded<RwLock<()>> = CachePadded::new(RwLock::new(()));

/// Around `fork()`: no unregister (and so no grace-period wait of ours) is in progress while
/// the child is made, and the child forgets the hazard pointers of lookups that were running
/// on threads it does not have, so that its own unregisters do not wait for them forever.
static FORK: Participant = Participant {
    prepare: fork_prepare,
    child: fork_child,
};

fn fork_prepare() -> Box<dyn Any> {
    // Created now if it was not, so that no thread is inside its one-time initialization.
    let _ = Domain::global();
    Box::new(SWITCH.write().unwrap_or_else(PoisonError::into_inner))
}

fn fork_child() {
    Domain::global().after_fork_in_child();
}

/// The hazard-pointer domain of the key table, the process-wide one. Every use of it by the
/// validator goes through here, so that the fork participant above is registered before the
/// domain's one-time initialization can begin: a fork then never copies a half-made domain
/// into the child (the prepare handler waits for the initialization to end).
pub(crate) fn domain() -> &'static Domain {
    fork::join(Rank::KeySwitch, &FORK);
    Domain::global()
}

fn switch_read() -> RwLockReadGuard<'static, ()> {
    fork::join(Rank::KeySwitch, &FORK);
    SWITCH.read().unwrap_or_else(PoisonError::into_inner)
}

/// The strategy in force now.
pub fn key_table_sync() -> KeyTableSync {
    let _switch = switch_read();
    current()
}

fn current() -> KeyTableSync {
    // Relaxed: the caller holds SWITCH, which orders these loads after the last switch.
    let ext = EXTERNAL.load(Ordering::Relaxed);
    if ext.is_null() {
        // Relaxed: as above.
        if DIRECT.load(Ordering::Relaxed) {
            KeyTableSync::HazptrDirect
        } else {
            KeyTableSync::Hazptr
        }
    } else {
        // SAFETY: non-null values of EXTERNAL come from `Box::leak` and are never freed.
        KeyTableSync::External(unsafe { *ext })
    }
}

/// Chooses how the dynamic-key table protects lookups and waits in unregister; returns the
/// previous choice. Thread-safe at any time: it waits for unregisters in progress, switches,
/// and then waits until no lookup can still be inside a read section of the old strategy
/// (for the hazard-pointer modes: a `synchronize` on each of the [`KEY_BUCKETS`] bucket
/// heads). For benchmarks; the default ([`KeyTableSync::Hazptr`]) is what production code
/// should use.
///
/// Each switch to an `External` strategy keeps one pointer-sized box for the rest of the
/// process: lookups compare the published box's address to detect a switch, so addresses
/// must never be reused.
pub fn set_key_table_sync(sync: KeyTableSync) -> KeyTableSync {
    fork::join(Rank::KeySwitch, &FORK);
    let _switch = SWITCH.write().unwrap_or_else(PoisonError::into_inner);
    let old = current();
    let new_ext = match sync {
        KeyTableSync::External(s) => Box::into_raw(Box::new(s)),
        _ => ptr::null_mut(),
    };
    // Relaxed: only read under SWITCH (by unregister), which orders it.
    DIRECT.store(
        matches!(sync, KeyTableSync::HazptrDirect),
        Ordering::Relaxed,
    );
    // SeqCst: store-buffering with the lookups' SeqCst re-check after they entered a read
    // section; together with the old strategy's wait below (hazptr: its heavy barrier), either
    // the wait sees the lookup's section or the lookup sees the new strategy and retries.
    EXTERNAL.store(new_ext, Ordering::SeqCst);
    match old {
        // Same readers on both sides of the switch (hazard pointers): nothing to wait for.
        KeyTableSync::Hazptr | KeyTableSync::HazptrDirect if new_ext.is_null() => {}
        KeyTableSync::Hazptr | KeyTableSync::HazptrDirect => {
            for b in 0..KEY_BUCKETS {
                let r = domain().synchronize(bucket_head(b));
                assert!(
                    r.is_ok(),
                    "lockdep: set_key_table_sync called inside a key lookup"
                );
            }
        }
        KeyTableSync::External(s) => s.synchronize_all(),
    }
    old
}

/// Runs `f` (one walk of bucket `index`) inside a read section of the strategy in force.
pub(crate) fn read_section<R>(index: usize, f: impl FnOnce() -> R) -> R {
    // A fork while this thread is in the section must clear its hazard pointer in the child.
    fork::join(Rank::KeySwitch, &FORK);
    let head = bucket_head(index);
    loop {
        // SeqCst: see the re-checks below.
        let ext = EXTERNAL.load(Ordering::SeqCst);
        if ext.is_null() {
            let guard = domain().protect_addr(head);
            // SeqCst, after the hazard pointer's publication and fence: store buffering with
            // the switch's SeqCst store followed by its synchronize (see set_key_table_sync).
            if EXTERNAL.load(Ordering::SeqCst).is_null() {
                let r = f();
                drop(guard);
                return r;
            }
        } else {
            // SAFETY: non-null values of EXTERNAL come from `Box::leak` and are never freed.
            let s: &'static dyn KeySyncStrategy = unsafe { *ext };
            let section = ExternalSection {
                strategy: s,
                token: s.read_enter(index),
            };
            // SeqCst: the strategy's read_enter has acquire semantics against its wait
            // (contract of KeySyncStrategy); a section the switch's wait missed began after
            // that wait began, so it sees the new EXTERNAL and retries.
            if EXTERNAL.load(Ordering::SeqCst) == ext {
                return f();
            }
            drop(section);
        }
    }
}

/// Leaves an external read section on drop (also if the walk panics).
struct ExternalSection {
    strategy: &'static dyn KeySyncStrategy,
    token: usize,
}

impl Drop for ExternalSection {
    fn drop(&mut self) {
        self.strategy.read_exit(self.token);
    }
}

/// Runs `unlink` and then, if it returned true, waits with the strategy in force for the
/// lookups in bucket `index` that may still be on the unlinked node (a grace period of the
/// bucket). No strategy switch can happen in between.
pub(crate) fn unlink_and_wait(index: usize, unlink: impl FnOnce() -> bool) {
    let head = bucket_head(index);
    let _switch = switch_read();
    if !unlink() {
        return;
    }
    match current() {
        KeyTableSync::Hazptr => {
            let r = domain().synchronize(head);
            // We never hold a hazard pointer here, so `SelfProtected` is a validator bug.
            assert!(
                r.is_ok(),
                "lockdep: unregister inside a key lookup (validator bug)"
            );
        }
        KeyTableSync::HazptrDirect => {
            let r = domain().synchronize_direct(head);
            assert!(
                r.is_ok(),
                "lockdep: unregister inside a key lookup (validator bug)"
            );
        }
        KeyTableSync::External(s) => s.synchronize(index),
    }
}
