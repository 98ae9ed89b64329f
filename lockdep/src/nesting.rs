//! How two instances of one lock class may nest: the [`Nesting`] setting, and the epoch of
//! the instance-order pairs that threads cache.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// What the validator says when a thread takes a lock of a class it already holds through
/// *another* instance (two account locks, two nodes of a tree, two shards), with no subclass or
/// nest_lock annotation. The same instance taken again is always reported
/// ([`Report::RecursiveLocking`](crate::Report::RecursiveLocking)).
///
/// Set globally with [`set_nesting`], or per key with
/// [`LockClassKey::with_nesting`](crate::LockClassKey::with_nesting) and
/// [`DynamicKey::with_nesting`](crate::DynamicKey::with_nesting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Nesting {
    /// The default: nesting instances of one class is fine as long as they are always taken
    /// in one order (parent before child, lower address before higher, any fixed order). The
    /// validator remembers which instance was taken while which was held ("instance pairs")
    /// and reports a [`Report::CircularDependency`](crate::Report::CircularDependency) when
    /// instances of one class are ever taken in a cycle (A then B somewhere, B then A
    /// somewhere else, by any threads, at any time), naming the instances and every site.
    /// A freed lock forgets its pairs.
    ///
    /// Why it is the default: the kernel's rule (below) needs an annotation at every nesting,
    /// which nobody can add to third-party code; a generic adapter that constructs every lock
    /// of a library on one line makes all of them one class, so the strict rule reports every
    /// fixed-order nesting of two of them.
    #[default]
    InstanceOrder,
    /// The kernel's rule: taking a second instance of a held class is reported
    /// ([`Report::MissingNestingAnnotation`](crate::Report::MissingNestingAnnotation)) unless
    /// the acquisition names a subclass (`lock_nested`) or a held nest_lock.
    Strict,
}

static NESTING: AtomicU8 = AtomicU8::new(0);

/// Sets the process-wide [`Nesting`] rule for classes whose key does not fix one, and returns
/// the previous one. Thread-safe; takes effect for acquisitions validated after the call
/// (cached checks of instance pairs are dropped).
pub fn set_nesting(nesting: Nesting) -> Nesting {
    let code = match nesting {
        Nesting::InstanceOrder => 0,
        Nesting::Strict => 1,
    };
    // Relaxed: an independent setting; the pair caches are invalidated by the epoch bump.
    let old = NESTING.swap(code, Ordering::Relaxed);
    bump_pair_epoch();
    if old == 0 {
        Nesting::InstanceOrder
    } else {
        Nesting::Strict
    }
}

/// The process-wide rule.
pub fn nesting() -> Nesting {
    // Relaxed: an independent setting.
    if NESTING.load(Ordering::Relaxed) == 0 {
        Nesting::InstanceOrder
    } else {
        Nesting::Strict
    }
}

/// Bumped whenever instance pairs that a thread may have cached as checked stop being valid:
/// a lock that had pairs is freed (a new lock at its address must not inherit them), the rule
/// changes, or the validator is reset.
static PAIR_EPOCH: AtomicU64 = AtomicU64::new(1);

/// The current pair epoch.
#[inline]
pub(crate) fn pair_epoch() -> u64 {
    // Acquire: pairs with the Release bump, so a thread that sees the new epoch also sees
    // the graph state that made it (not strictly needed: the pair cache only ever says
    // "go to the slow path", which re-reads everything under the graph lock).
    PAIR_EPOCH.load(Ordering::Acquire)
}

/// Invalidates every thread's cache of checked instance pairs.
pub(crate) fn bump_pair_epoch() {
    // Release: see `pair_epoch`. A thread that can reach a new lock at a freed lock's address
    // got it through synchronization that follows this bump (it precedes the free), so its
    // next load of the epoch sees the new value.
    PAIR_EPOCH.fetch_add(1, Ordering::Release);
}
