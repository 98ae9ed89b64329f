//! [`RawRwLock`]: a writer-preferring reader-writer lock with upgradable reads, one word of
//! state; the fast paths live here, the slow paths in
//! [`rwlock_slow`](super::rwlock_slow), the state word in
//! [`rwlock_state`](super::rwlock_state).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::rwlock_slow::{acquire, try_claim, wait_for_readers, wake_queue, wake_writer};
use super::rwlock_state::{Want, PARKED, READER, READERS, UPGRADABLE, WRITER, WRITER_PARKED};
use super::{deadline_after, deadlock_acquire, deadlock_release};

/// Bits that mean someone is inside (or a writer has claimed the lock).
const HELD: usize = WRITER | UPGRADABLE | READERS;

/// A raw reader-writer lock for [`lock_api::RwLock`], with parking_lot 0.12's `RawRwLock`
/// semantics:
///
/// - **Writer-preferring.** Once a writer waits, a plain
///   [`lock_shared`](lock_api::RawRwLock::lock_shared) waits behind it;
///   [`lock_shared_recursive`](lock_api::RawRwLockRecursive::lock_shared_recursive) does not
///   while the lock is read-held (so a thread may re-read what it already reads).
/// - **Upgradable reads.** At most one upgradable holder at a time; it shares the lock with
///   plain readers and excludes writers. [`upgrade`](lock_api::RawRwLockUpgrade::upgrade)
///   blocks new readers at once and waits for the readers inside to leave.
/// - **Downgrades** write → read, upgradable → read, write → upgradable, waking whoever
///   the new state admits.
/// - **Fair unlocks** hand the lock to the queued threads (every queued reader up to the
///   first writer, plus at most one upgradable reader or that writer); plain unlocks wake
///   them to compete, and parking_lot_core turns one unlock in roughly every 0.5 ms per
///   queue into a fair one.
/// - **Timed** variants take a `Duration` or an `Instant`; a deadline that cannot be
///   represented means no deadline.
///
/// # State and parking
///
/// One `usize`: bit 0 `PARKED` (threads queued on the lock's address), bit 1
/// `WRITER_PARKED` (the writer sleeps on address + 1 until the readers leave), bit 2
/// `UPGRADABLE`, bit 3 `WRITER` (held by a writer, or claimed by one that waits for the
/// readers inside), bits 4.. the reader count (the upgradable holder included).
///
/// - A writer first claims `WRITER` (from then on plain readers queue behind it), then waits
///   for the count to reach zero; the last reader out sees `WRITER_PARKED` in the value its
///   `fetch_sub` returns and wakes it. An upgrade trades its reader and `UPGRADABLE` for
///   `WRITER` in one `fetch_add` and waits the same way.
/// - Queued threads carry as `ParkToken` the bits they would add to the word (`READER`,
///   `READER | UPGRADABLE`, `WRITER`); an unlocker scans the queue with `unpark_filter`, and
///   a fair one adds the woken threads' tokens to the word for them.
///
/// Uncontended read and write locks are one CAS each, unlocks one atomic each.
///
/// # Panics
///
/// Taking a shared or upgradable lock panics if the reader count would overflow, which only
/// leaked guards can cause.
///
/// `Send + Sync`; guards are `!Send` unless the `send_guard` feature is on
/// ([`GuardMarker`](crate::GuardMarker)).
pub struct RawRwLock {
    state: AtomicUsize,
}

impl RawRwLock {
    /// Tells the deadlock detector that this thread holds the lock (in any mode), under both
    /// park keys (the queue's and the phase-2 writer's), as parking_lot does.
    #[inline(always)]
    fn deadlock_acquired(&self, locked: bool) -> bool {
        if locked {
            let key = self as *const RawRwLock as usize;
            deadlock_acquire(key);
            deadlock_acquire(key + 1);
        }
        locked
    }

    /// Tells the deadlock detector that this thread is about to release the lock.
    #[inline(always)]
    fn deadlock_releasing(&self) {
        let key = self as *const RawRwLock as usize;
        deadlock_release(key);
        deadlock_release(key + 1);
    }

    /// A bump of an exclusive or upgradable holding: if anyone is parked, `unlock` (fair) and
    /// `lock` again.
    ///
    /// # Safety
    ///
    /// The caller holds the lock in the mode `unlock` releases and `lock` takes.
    #[inline]
    unsafe fn bump_with(&self, unlock: unsafe fn(&Self), lock: fn(&Self)) {
        // Relaxed: a hint; a stale answer only skips or adds one hand-off.
        if self.state.load(Ordering::Relaxed) & PARKED != 0 {
            // SAFETY: the caller holds the lock in `unlock`'s mode.
            unsafe { unlock(self) };
            lock(self);
        }
    }

    /// `unlock_exclusive` (`fair`: `unlock_exclusive_fair`). The caller holds the lock
    /// exclusively.
    #[inline]
    fn release_exclusive(&self, fair: bool) {
        self.deadlock_releasing();
        // Release: publishes the critical section. No reader is inside; the CAS fails when
        // `PARKED` is set, or when the last reader's wake-up of our phase 2 has not cleared
        // `WRITER_PARKED` yet (we left phase 2 on seeing zero readers before it ran): the slow
        // path handles both.
        if self
            .state
            .compare_exchange(WRITER, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            wake_queue(&self.state, WRITER, 0, fair);
        }
    }

    /// One attempt at a shared lock: the common uncontended case, inlined.
    #[inline]
    fn try_shared_fast(&self, want: Want) -> bool {
        // Relaxed: a guess for the CAS, which confirms it.
        let s = self.state.load(Ordering::Relaxed);
        if want.blocked_by(s) {
            return false;
        }
        match s.checked_add(READER) {
            // Acquire: pairs with the Release of the last writer's unlock or downgrade.
            Some(new) => self
                .state
                .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
                .is_ok(),
            None => false,
        }
    }

    /// One attempt at an upgradable lock.
    #[inline]
    fn try_upgradable_fast(&self) -> bool {
        // Relaxed: a guess for the CAS, which confirms it.
        let s = self.state.load(Ordering::Relaxed);
        if Want::Upgradable.blocked_by(s) {
            return false;
        }
        match s.checked_add(READER | UPGRADABLE) {
            // Acquire: as in `try_shared_fast`.
            Some(new) => self
                .state
                .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
                .is_ok(),
            None => false,
        }
    }

    /// The uncontended write lock: `0 -> WRITER`.
    #[inline]
    fn try_exclusive_fast(&self) -> bool {
        // Acquire: pairs with the Release of the previous unlock. Relaxed on failure.
        self.state
            .compare_exchange_weak(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// `try_lock_exclusive` when the word was not 0 but nobody holds the lock: only park bits
    /// are set (queued threads are being woken, or the wake-up of a finished phase 2 is still
    /// on its way). Take it anyway, as `lock_exclusive` would (barging is allowed).
    #[cold]
    fn try_exclusive_parked(&self, mut s: usize) -> bool {
        while s & HELD == 0 {
            // Acquire on success: as in `try_exclusive_fast`.
            match self.state.compare_exchange_weak(
                s,
                s | WRITER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Releases `READER | UPGRADABLE` without waking anyone if nobody is queued; returns false
    /// (and changes nothing) if someone is.
    #[inline]
    fn unlock_upgradable_fast(&self) -> bool {
        // Relaxed: the starting value of the CAS loop.
        let mut s = self.state.load(Ordering::Relaxed);
        while s & PARKED == 0 {
            // Release: publishes the end of our read section to the next writer's Acquire.
            match self.state.compare_exchange_weak(
                s,
                s - (READER | UPGRADABLE),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// `upgrade` and the timed upgrades: trade `READER | UPGRADABLE` for `WRITER`, then wait
    /// for the other readers (until `deadline`).
    #[inline]
    fn upgrade_until(&self, deadline: Option<Instant>) -> bool {
        // Acquire: if we were the only reader, this is the whole upgrade, and it must
        // synchronise with the Release of the readers that left. No writer can hold `WRITER`
        // while we hold `UPGRADABLE`, so the addition cannot carry into the reader count.
        let prev = self
            .state
            .fetch_add(WRITER.wrapping_sub(READER | UPGRADABLE), Ordering::Acquire);
        prev & READERS == READER || wait_for_readers(&self.state, deadline, READER | UPGRADABLE)
    }
}

// SAFETY: exclusion follows from the word: `WRITER` with zero readers is held by one thread
// only (it is claimed by CAS or handed over by a waker that saw it clear, and phase 2 waits for
// `READERS == 0`), and readers enter only when `WRITER` is clear or readers are already inside
// a writer's phase 2 (so the writer has not entered). Acquire on every entry and Release on
// every exit (or the parking lot's handoff) order the critical sections.
unsafe impl lock_api::RawRwLock for RawRwLock {
    const INIT: RawRwLock = RawRwLock {
        state: AtomicUsize::new(0),
    };

    type GuardMarker = crate::GuardMarker;

    #[inline]
    fn lock_shared(&self) {
        if !self.try_shared_fast(Want::Shared) {
            acquire(&self.state, Want::Shared, None);
        }
        self.deadlock_acquired(true);
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        let locked = self.try_shared_fast(Want::Shared) || try_claim(&self.state, Want::Shared);
        self.deadlock_acquired(locked)
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        self.deadlock_releasing();
        // Release: our reads happen-before the next writer's writes (it reads the count with
        // Acquire).
        let prev = self.state.fetch_sub(READER, Ordering::Release);
        if prev & (READERS | WRITER_PARKED) == READER | WRITER_PARKED {
            // We were the last reader and the writer sleeps waiting for that.
            wake_writer(&self.state);
        }
    }

    #[inline]
    fn lock_exclusive(&self) {
        if !self.try_exclusive_fast() {
            acquire(&self.state, Want::Exclusive, None);
        }
        self.deadlock_acquired(true);
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        // Acquire on success: as in `try_exclusive_fast`; Relaxed on failure.
        let locked =
            match self
                .state
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => true,
                Err(s) if s & HELD == 0 => self.try_exclusive_parked(s),
                Err(_) => false,
            };
        self.deadlock_acquired(locked)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        self.release_exclusive(false);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot. `WRITER` alone (a writer still waiting for readers) also counts:
        // it blocks plain readers.
        self.state.load(Ordering::Relaxed) & (WRITER | READERS) != 0
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        // Relaxed: a snapshot; true as soon as a writer has claimed the lock, even while it
        // still waits for readers to leave.
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }
}

// SAFETY: fair unlocks release like the plain ones, or hand the lock to woken threads whose
// grants the waker added to the word (compatible by construction of the wake-up filter).
unsafe impl lock_api::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        // Readers never hand over: the lock stays read-held by others or becomes free, and
        // the last reader out wakes a waiting writer either way.
        // SAFETY: forwarded; our caller holds a shared lock.
        unsafe { lock_api::RawRwLock::unlock_shared(self) }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        self.release_exclusive(true);
    }

    #[inline]
    unsafe fn bump_shared(&self) {
        // Relaxed: a hint. Yield only if we are the one reader a claimed writer waits for;
        // with more readers inside, leaving would not let it in (and our own other read
        // guards, if any, would deadlock the re-lock behind it).
        if self.state.load(Ordering::Relaxed) & (READERS | WRITER) == READER | WRITER {
            // SAFETY: our caller holds a shared lock.
            unsafe { lock_api::RawRwLock::unlock_shared(self) };
            lock_api::RawRwLock::lock_shared(self);
        }
    }

    #[inline]
    unsafe fn bump_exclusive(&self) {
        // SAFETY: our caller holds the exclusive lock, which the pair releases and re-takes.
        unsafe {
            self.bump_with(
                lock_api::RawRwLockFair::unlock_exclusive_fair,
                lock_api::RawRwLock::lock_exclusive,
            )
        }
    }
}

// SAFETY: write -> read keeps the lock held throughout (one `fetch_add` swaps `WRITER` for a
// reader), then admits whom the new word admits.
unsafe impl lock_api::RawRwLockDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade(&self) {
        // Release: readers admitted from now on must see our writes. `WRITER` is set, so
        // adding `READER - WRITER` clears it and adds one reader.
        let prev = self.state.fetch_add(READER - WRITER, Ordering::Release);
        if prev & PARKED != 0 {
            wake_queue(&self.state, 0, 0, false);
        }
    }
}

// SAFETY: the timed variants run the same protocol with a deadline on each park; a writer
// that times out in phase 2 gives `WRITER` back and wakes those it blocked.
unsafe impl lock_api::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        let locked = self.try_shared_fast(Want::Shared)
            || acquire(&self.state, Want::Shared, deadline_after(timeout));
        self.deadlock_acquired(locked)
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> bool {
        let locked =
            self.try_shared_fast(Want::Shared) || acquire(&self.state, Want::Shared, Some(timeout));
        self.deadlock_acquired(locked)
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        let locked = self.try_exclusive_fast()
            || acquire(&self.state, Want::Exclusive, deadline_after(timeout));
        self.deadlock_acquired(locked)
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> bool {
        let locked =
            self.try_exclusive_fast() || acquire(&self.state, Want::Exclusive, Some(timeout));
        self.deadlock_acquired(locked)
    }
}

// SAFETY: a recursive reader enters only when `WRITER` is clear or readers are inside a
// writer's phase 2; either way no writer is inside.
unsafe impl lock_api::RawRwLockRecursive for RawRwLock {
    #[inline]
    fn lock_shared_recursive(&self) {
        if !self.try_shared_fast(Want::SharedRecursive) {
            acquire(&self.state, Want::SharedRecursive, None);
        }
        self.deadlock_acquired(true);
    }

    #[inline]
    fn try_lock_shared_recursive(&self) -> bool {
        let locked = self.try_shared_fast(Want::SharedRecursive)
            || try_claim(&self.state, Want::SharedRecursive);
        self.deadlock_acquired(locked)
    }
}

// SAFETY: as `RawRwLockRecursive` with a deadline.
unsafe impl lock_api::RawRwLockRecursiveTimed for RawRwLock {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
        let locked = self.try_shared_fast(Want::SharedRecursive)
            || acquire(&self.state, Want::SharedRecursive, deadline_after(timeout));
        self.deadlock_acquired(locked)
    }

    #[inline]
    fn try_lock_shared_recursive_until(&self, timeout: Instant) -> bool {
        let locked = self.try_shared_fast(Want::SharedRecursive)
            || acquire(&self.state, Want::SharedRecursive, Some(timeout));
        self.deadlock_acquired(locked)
    }
}

// SAFETY: `UPGRADABLE` is claimed by CAS only while `WRITER | UPGRADABLE` is clear, so there
// is one upgradable holder and no writer beside it; an upgrade turns it into `WRITER` and
// waits for the readers, like a writer's phase 2.
unsafe impl lock_api::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        if !self.try_upgradable_fast() {
            acquire(&self.state, Want::Upgradable, None);
        }
        self.deadlock_acquired(true);
    }

    #[inline]
    fn try_lock_upgradable(&self) -> bool {
        let locked = self.try_upgradable_fast() || try_claim(&self.state, Want::Upgradable);
        self.deadlock_acquired(locked)
    }

    #[inline]
    unsafe fn unlock_upgradable(&self) {
        self.deadlock_releasing();
        if !self.unlock_upgradable_fast() {
            wake_queue(&self.state, READER | UPGRADABLE, 0, false);
        }
    }

    #[inline]
    unsafe fn upgrade(&self) {
        self.upgrade_until(None);
    }

    #[inline]
    unsafe fn try_upgrade(&self) -> bool {
        // Relaxed: the starting value of the CAS loop.
        let mut s = self.state.load(Ordering::Relaxed);
        while s & READERS == READER {
            // Acquire: as in `upgrade`. The new word swaps our `READER | UPGRADABLE` for
            // `WRITER`.
            match self.state.compare_exchange_weak(
                s,
                s - (READER | UPGRADABLE) + WRITER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }
}

// SAFETY: as `RawRwLockUpgrade`, with fair unlocks as in `RawRwLockFair`.
unsafe impl lock_api::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        self.deadlock_releasing();
        if !self.unlock_upgradable_fast() {
            wake_queue(&self.state, READER | UPGRADABLE, 0, true);
        }
    }

    #[inline]
    unsafe fn bump_upgradable(&self) {
        // SAFETY: our caller holds the upgradable lock, which the pair releases and re-takes.
        unsafe {
            self.bump_with(
                lock_api::RawRwLockUpgradeFair::unlock_upgradable_fair,
                lock_api::RawRwLockUpgrade::lock_upgradable,
            )
        }
    }
}

// SAFETY: each downgrade is one atomic change that keeps the caller inside the lock.
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        // Relaxed: we stay a reader and publish nothing (an upgradable holder only reads).
        let prev = self.state.fetch_sub(UPGRADABLE, Ordering::Relaxed);
        if prev & PARKED != 0 {
            wake_queue(&self.state, 0, 0, false);
        }
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        // Release: readers admitted from now on must see our writes. `WRITER` is set, so
        // adding `(READER | UPGRADABLE) - WRITER` clears it and adds our reader and
        // `UPGRADABLE`.
        let prev = self
            .state
            .fetch_add((READER | UPGRADABLE) - WRITER, Ordering::Release);
        if prev & PARKED != 0 {
            wake_queue(&self.state, 0, UPGRADABLE, false);
        }
    }
}

// SAFETY: as `RawRwLockUpgrade` with a deadline; a timed-out upgrade gives `WRITER` back for
// `READER | UPGRADABLE` in one atomic change, so the caller never leaves the lock.
unsafe impl lock_api::RawRwLockUpgradeTimed for RawRwLock {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> bool {
        let locked = self.try_upgradable_fast()
            || acquire(&self.state, Want::Upgradable, deadline_after(timeout));
        self.deadlock_acquired(locked)
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> bool {
        let locked =
            self.try_upgradable_fast() || acquire(&self.state, Want::Upgradable, Some(timeout));
        self.deadlock_acquired(locked)
    }

    #[inline]
    unsafe fn try_upgrade_for(&self, timeout: Duration) -> bool {
        self.upgrade_until(deadline_after(timeout))
    }

    #[inline]
    unsafe fn try_upgrade_until(&self, timeout: Instant) -> bool {
        self.upgrade_until(Some(timeout))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::thread;
    use std::time::Duration;

    use lock_api::{
        RawRwLock as _, RawRwLockTimed as _, RawRwLockUpgrade as _, RawRwLockUpgradeTimed as _,
    };

    use super::super::rwlock_state::{
        Want, PARKED, READER, READERS, UPGRADABLE, WRITER, WRITER_PARKED,
    };
    use super::RawRwLock;
    use crate::raw::test_support::wait_parked;

    fn state(l: &RawRwLock) -> usize {
        l.state.load(Ordering::Relaxed)
    }

    fn key(l: &RawRwLock) -> usize {
        l as *const RawRwLock as usize
    }

    #[test]
    fn who_is_blocked_by_what() {
        let two_readers = 2 * READER;
        let upgradable = READER | UPGRADABLE;
        let draining = WRITER | READER | WRITER_PARKED;
        let cases = [
            // (word, shared, recursive, upgradable, exclusive)
            (0, false, false, false, false),
            (PARKED, false, false, false, false),
            (two_readers, false, false, false, false),
            (upgradable, false, false, true, true),
            (WRITER, true, true, true, true),
            (draining, true, false, true, true),
        ];
        for (word, shared, recursive, upg, excl) in cases {
            assert_eq!(Want::Shared.blocked_by(word), shared, "{word:#b}");
            assert_eq!(
                Want::SharedRecursive.blocked_by(word),
                recursive,
                "{word:#b}"
            );
            assert_eq!(Want::Upgradable.blocked_by(word), upg, "{word:#b}");
            assert_eq!(Want::Exclusive.blocked_by(word), excl, "{word:#b}");
        }
        assert_eq!(READERS & (PARKED | WRITER_PARKED | UPGRADABLE | WRITER), 0);
    }

    #[test]
    fn a_timed_out_writer_gives_the_claim_back() {
        let l = RawRwLock::INIT;
        l.lock_shared();
        thread::scope(|s| {
            s.spawn(|| assert!(!l.try_lock_exclusive_for(Duration::from_millis(5))));
        });
        assert_eq!(state(&l), READER);
        // SAFETY: locked above.
        unsafe { l.unlock_shared() };
        assert_eq!(state(&l), 0);
    }

    #[test]
    fn a_timed_out_upgrade_restores_the_upgradable_read() {
        let l = RawRwLock::INIT;
        l.lock_upgradable();
        l.lock_shared();
        // SAFETY: the upgradable lock is held (by this thread).
        assert!(!unsafe { l.try_upgrade_for(Duration::from_millis(5)) });
        assert_eq!(state(&l), (2 * READER) | UPGRADABLE);
        // SAFETY: both locks taken above.
        unsafe {
            l.unlock_shared();
            l.unlock_upgradable();
        }
        assert_eq!(state(&l), 0);
    }

    #[test]
    fn the_last_reader_wakes_the_draining_writer() {
        let l = RawRwLock::INIT;
        l.lock_shared();
        thread::scope(|s| {
            s.spawn(|| {
                l.lock_exclusive();
                assert_eq!(state(&l), WRITER);
                // SAFETY: just locked.
                unsafe { l.unlock_exclusive() };
            });
            wait_parked(key(&l) + 1, 1);
            assert_eq!(state(&l), WRITER | WRITER_PARKED | READER);
            // SAFETY: locked above.
            unsafe { l.unlock_shared() };
        });
        assert_eq!(state(&l), 0);
    }
}
