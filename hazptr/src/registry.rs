//! The append-only lists a domain scans: per-thread records of primary slots, and backup
//! slots for the acquire slow path.
//!
//! Nodes are pushed at the head and never unlinked or freed while the registry lives, so a
//! scan needs no protection of its own and always terminates: it walks what was linked
//! when it loaded the head. Nodes are reused instead (a record after its thread exits, a
//! backup slot after its guard drops), so the lists grow only to the peak number of
//! threads and of overflowing guards.

use std::ptr;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crossbeam_utils::CachePadded;

use crate::primitive::{AtomicBool, AtomicPtr, AtomicUsize};
use crate::slot::Slot;

/// Primary slots per thread record, as in the kernel's `NR_HAZPTR_PERCPU_SLOTS`: 4, one
/// 64-byte line of 16-byte slots. The loom build (`cfg(hazptr_loom)`) uses 2, which keeps
/// the models' state space small.
pub const PRIMARY_SLOTS: usize = if crate::primitive::MODEL_CHECKED {
    2
} else {
    4
};

/// One thread's primary slots. The four slots fill the first 64-byte line; the
/// registration fields (`active`, `next`), written once per thread, sit in the second
/// line, so a scan of the slots never shares a line with them.
#[repr(C, align(128))]
pub(crate) struct Record {
    pub(crate) slots: [Slot; PRIMARY_SLOTS],
    /// Whether a live thread owns this record.
    active: AtomicBool,
    next: *const Record,
}

impl Record {
    /// The record linked before this one.
    pub(crate) fn next(&self) -> Option<&Record> {
        // SAFETY: `next` was written before this node's publication and never changes;
        // nodes are never freed while the registry lives, which outlives `&self`.
        unsafe { self.next.as_ref() }
    }

    /// Owner only: a free primary slot (value 0), or `None` when all are busy.
    ///
    /// A slot's own value says whether it is free, so claiming and releasing need no
    /// bookkeeping word: a separate "used" mask would put a store-to-load forwarding hop on
    /// every acquire and release (BENCHMARKS.md has the measurement). The
    /// loads below only feed branches, which the CPU predicts, so they add no latency
    /// chain either. Between the claim and the caller's first `publish` no other claim can
    /// run on this thread.
    #[inline(always)]
    pub(crate) fn claim_slot(&self) -> Option<&Slot> {
        self.slots.iter().find(|s| s.owner_value() == 0)
    }

    /// Owner only: give the record back at thread exit. Keeps the record owned forever
    /// instead if a guard is still alive, e.g. one held in another
    /// thread-local whose destructor has not run yet: handing the record to a new thread
    /// then would let two threads write one slot.
    pub(crate) fn release_owner(&self) {
        if self.slots.iter().any(|s| s.owner_value() != 0) {
            return;
        }
        // Release: pairs with the Acquire claim in `Registry::acquire_record`, so the next
        // owner sees our final slot stores.
        self.active.store(false, Release);
    }
}

/// A backup slot for the acquire slow path and for detached guards.
#[repr(C, align(64))]
pub(crate) struct BackupSlot {
    pub(crate) slot: Slot,
    in_use: AtomicBool,
    /// Address of the owning thread's `Record`, or 0 when detached or when the owner has
    /// no record (thread-local storage already torn down). Used only to detect a thread
    /// that synchronizes on an address it protects itself.
    owner: AtomicUsize,
    next: *const BackupSlot,
}

impl BackupSlot {
    /// The backup slot linked before this one.
    pub(crate) fn next(&self) -> Option<&BackupSlot> {
        // SAFETY: as in `Record::next`.
        unsafe { self.next.as_ref() }
    }

    pub(crate) fn owner(&self) -> usize {
        // Relaxed: read for the self-protection check by the owner itself, which wrote it.
        self.owner.load(Relaxed)
    }

    pub(crate) fn set_owner(&self, owner: usize) {
        // Relaxed: only the owning thread reads it back (see `owner`).
        self.owner.store(owner, Relaxed);
    }

    /// Give the slot back to the pool (after its `Slot::release`).
    pub(crate) fn free(&self) {
        self.set_owner(0);
        // Release: pairs with the Acquire claim in `Registry::acquire_backup`, so the next
        // user sees the cleared slot and bumped sequence.
        self.in_use.store(false, Release);
    }
}

/// The records and backup slots of one domain.
pub(crate) struct Registry {
    records: CachePadded<AtomicPtr<Record>>,
    backups: CachePadded<AtomicPtr<BackupSlot>>,
    /// Counts for stats (no ordering role).
    pub(crate) record_count: std::sync::atomic::AtomicUsize,
    pub(crate) backup_count: std::sync::atomic::AtomicUsize,
}

// SAFETY: all shared state is atomics; the raw `next` pointers are written once before the
// node is published with a Release CAS and never changed after.
unsafe impl Send for Registry {}
// SAFETY: as above.
unsafe impl Sync for Registry {}
// SAFETY: `Record` is atomics plus an immutable-after-publication `next` pointer.
unsafe impl Sync for Record {}
// SAFETY: as above.
unsafe impl Send for Record {}
// SAFETY: `BackupSlot` is atomics plus an immutable-after-publication `next` pointer.
unsafe impl Sync for BackupSlot {}
// SAFETY: as above.
unsafe impl Send for BackupSlot {}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry {
            records: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            backups: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            record_count: std::sync::atomic::AtomicUsize::new(0),
            backup_count: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Claim a free record for the calling thread, or link a new one. Allocates only when
    /// every record is owned by a live thread.
    pub(crate) fn acquire_record(&self) -> &Record {
        for record in self.records() {
            // Relaxed pre-check, then Acquire CAS: pairs with the Release in
            // `Record::release_owner`.
            if !record.active.load(Relaxed)
                && record
                    .active
                    .compare_exchange(false, true, Acquire, Relaxed)
                    .is_ok()
            {
                return record;
            }
        }
        let record = Box::into_raw(Box::new(Record {
            slots: std::array::from_fn(|_| Slot::new()),
            active: AtomicBool::new(true),
            next: ptr::null(),
        }));
        self.record_count.fetch_add(1, Relaxed);
        push(&self.records, record, |node, next| {
            // SAFETY: `node` is our unpublished allocation; nobody else can see it yet.
            unsafe { (*node).next = next }
        });
        // SAFETY: records are freed only when the registry drops, which outlives `&self`.
        unsafe { &*record }
    }

    /// Claim a free backup slot, or link a new one.
    pub(crate) fn acquire_backup(&self, owner: usize) -> &BackupSlot {
        for backup in self.backups() {
            // Relaxed pre-check, then Acquire CAS: pairs with the Release in
            // `BackupSlot::free`.
            if !backup.in_use.load(Relaxed)
                && backup
                    .in_use
                    .compare_exchange(false, true, Acquire, Relaxed)
                    .is_ok()
            {
                backup.set_owner(owner);
                return backup;
            }
        }
        let backup = Box::into_raw(Box::new(BackupSlot {
            slot: Slot::new(),
            in_use: AtomicBool::new(true),
            owner: AtomicUsize::new(owner),
            next: ptr::null(),
        }));
        self.backup_count.fetch_add(1, Relaxed);
        push(&self.backups, backup, |node, next| {
            // SAFETY: `node` is our unpublished allocation; nobody else can see it yet.
            unsafe { (*node).next = next }
        });
        // SAFETY: backup slots are freed only when the registry drops.
        unsafe { &*backup }
    }

    /// The most recently linked record, if any.
    pub(crate) fn first_record(&self) -> Option<&Record> {
        // Acquire: pairs with the Release CAS in `push`, so the node's fields are
        // initialized when we follow it. Later nodes are reached through `next`, written
        // before their own publication.
        let head = self.records.load(Acquire);
        // SAFETY: nodes are never freed while the registry (and so `&self`) lives.
        unsafe { head.as_ref() }
    }

    /// The most recently linked backup slot, if any.
    pub(crate) fn first_backup(&self) -> Option<&BackupSlot> {
        // Acquire: as in `first_record`.
        let head = self.backups.load(Acquire);
        // SAFETY: as in `first_record`.
        unsafe { head.as_ref() }
    }

    /// Every record linked when the head was loaded.
    pub(crate) fn records(&self) -> impl Iterator<Item = &Record> {
        std::iter::successors(self.first_record(), |r| r.next())
    }

    /// Every backup slot linked when the head was loaded.
    pub(crate) fn backups(&self) -> impl Iterator<Item = &BackupSlot> {
        std::iter::successors(self.first_backup(), |b| b.next())
    }
}

fn push<T>(head: &AtomicPtr<T>, node: *mut T, set_next: impl Fn(*mut T, *const T)) {
    // Relaxed: the value only seeds the CAS loop.
    let mut cur = head.load(Relaxed);
    loop {
        set_next(node, cur);
        // Release: publishes the node's initialized fields to the Acquire head loads in
        // `first_record` and `first_backup`.
        match head.compare_exchange_weak(cur, node, Release, Relaxed) {
            Ok(_) => return,
            Err(actual) => cur = actual,
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // `&mut self`: no thread can reach the lists any more (every domain and thread
        // entry holding the registry's Arc is gone).
        let mut rec = self.records.load(Relaxed);
        while !rec.is_null() {
            // SAFETY: allocated by `Box::into_raw` in `acquire_record`, freed once here.
            let boxed = unsafe { Box::from_raw(rec) };
            rec = boxed.next as *mut Record;
        }
        let mut backup = self.backups.load(Relaxed);
        while !backup.is_null() {
            // SAFETY: allocated by `Box::into_raw` in `acquire_backup`, freed once here.
            let boxed = unsafe { Box::from_raw(backup) };
            backup = boxed.next as *mut BackupSlot;
        }
    }
}
