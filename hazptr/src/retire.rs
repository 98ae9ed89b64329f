//! Retire: hand an unpublished object to the domain, which frees it once no slot
//! protects it (folly's and haphazard's `retire`, here reclaimed through the same scan
//! that `synchronize` uses).
//!
//! Retired objects wait in a per-domain list. When the list reaches a threshold (twice
//! the number of slots, at least 64), or on an explicit [`Domain::reclaim`], one reclaimer
//! takes the whole list, issues one heavy barrier and flips the generation, reads every
//! slot once (primary slots, then the overflow list; it waits only for wildcards older
//! than its flip to narrow), frees every object no slot names, and puts the rest back.
//! Unreclaimed memory is therefore bounded by the threshold plus the number of slots.

use std::sync::atomic::Ordering::Relaxed;

use crate::primitive::MutexGuard;
use crate::Domain;

/// A retired object: its address and a type-erased deleter.
pub(crate) struct Retired {
    ptr: usize,
    deleter: unsafe fn(*mut ()),
}

// SAFETY: `retire`'s contract makes the caller promise the object may be freed on any
// thread; the pair is plain data otherwise.
unsafe impl Send for Retired {}

impl Retired {
    /// Free the object.
    ///
    /// # Safety
    /// Called once, when no slot protects `ptr` (or no guard can exist).
    pub(crate) unsafe fn free(self) {
        // SAFETY: `retire`'s caller gave a deleter valid for `ptr`, called once here.
        unsafe { (self.deleter)(self.ptr as *mut ()) }
    }
}

impl Domain {
    /// Retire `ptr`: free it with `deleter` once no guard of this domain protects it.
    ///
    /// Runs a [`Domain::reclaim`] when the list of retired objects reaches its threshold
    /// (`max(64, 2 × slots)`), so the calling thread may pay for one scan, and may run the
    /// deleters of other objects. A deleter may itself retire.
    ///
    /// # Safety
    /// - `ptr` has been unpublished: no reader can find it any more (guards that already
    ///   protect it are fine; that is what the domain waits for).
    /// - `deleter(ptr)` is sound to call exactly once, on any thread, at any later time,
    ///   and `ptr` is not retired again or freed otherwise.
    pub unsafe fn retire<T>(&self, ptr: *mut T, deleter: unsafe fn(*mut T)) {
        // SAFETY: `*mut T` and `*mut ()` are ABI-compatible for sized `T` (the
        // function-pointer ABI-compatibility rules of the std docs), so calling the deleter
        // through the erased type is calling it as written.
        let deleter: unsafe fn(*mut ()) = unsafe { std::mem::transmute(deleter) };
        let pending = {
            let mut list = self.retired_list();
            list.push(Retired {
                ptr: ptr as usize,
                deleter,
            });
            list.len()
        };
        self.counters.retired.fetch_add(1, Relaxed);
        if pending >= self.reclaim_threshold() {
            self.reclaim();
        }
    }

    /// Retire a `Box`-allocated object: it is dropped with `Box::from_raw` once no guard
    /// protects it.
    ///
    /// # Safety
    /// As for [`Domain::retire`], with `ptr` from `Box::into_raw` and `T: Send` in effect
    /// (it may be dropped on another thread).
    pub unsafe fn retire_box<T>(&self, ptr: *mut T) {
        unsafe fn drop_box<T>(p: *mut T) {
            // SAFETY: `retire_box`'s caller passed a pointer from `Box::into_raw`.
            drop(unsafe { Box::from_raw(p) });
        }
        // SAFETY: forwarded contract.
        unsafe { self.retire(ptr, drop_box::<T>) }
    }

    /// Free every retired object that no slot protects now; returns how many were freed.
    /// Deleters run on the calling thread, after the domain's lock is released.
    ///
    /// Cost: one heavy barrier, one generation flip and one pass over every slot, plus a
    /// wait only for wildcards (readers between publishing and loading) older than the
    /// flip.
    pub fn reclaim(&self) -> usize {
        let batch = std::mem::take(&mut *self.retired_list());
        if batch.is_empty() {
            return 0;
        }
        self.heavy_barrier();
        let generation = self.flip();
        let mut protected = self.protected_values(generation);
        protected.sort_unstable();
        let (keep, free): (Vec<Retired>, Vec<Retired>) = batch
            .into_iter()
            .partition(|r| protected.binary_search(&r.ptr).is_ok());
        if !keep.is_empty() {
            self.retired_list().extend(keep);
        }
        let freed = free.len();
        for r in free {
            // SAFETY: no slot named `r.ptr` after our barrier and flip, and `r` was
            // unpublished before it was retired, so no reader can protect it again.
            unsafe { r.free() };
        }
        self.counters.reclaimed.fetch_add(freed as u64, Relaxed);
        freed
    }

    pub(crate) fn retired_list(&self) -> MutexGuard<'_, Vec<Retired>> {
        // Nothing panics while the list is locked (deleters run outside it); recover.
        self.retired.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reclaim_threshold(&self) -> usize {
        let slots = self.registry.record_count.load(Relaxed) * crate::PRIMARY_SLOTS
            + self.registry.backup_count.load(Relaxed);
        (2 * slots).max(64)
    }

    /// Free everything still retired (the domain is being dropped: no guard can exist).
    pub(crate) fn free_all_retired(&mut self) {
        loop {
            let batch = std::mem::take(&mut *self.retired_list());
            if batch.is_empty() {
                return;
            }
            let n = batch.len() as u64;
            for r in batch {
                // SAFETY: no guard outlives the domain (guards borrow it), so nothing
                // protects any retired object.
                unsafe { r.free() };
            }
            self.counters.reclaimed.fetch_add(n, Relaxed);
        }
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        self.free_all_retired();
    }
}
