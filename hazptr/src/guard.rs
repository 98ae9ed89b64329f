//! Guards: the RAII handles that hold a slot while a pointer is protected.

use std::fmt;
use std::marker::PhantomData;

use crate::registry::BackupSlot;
use crate::slot::Slot;
use crate::Domain;

/// Which slot a guard holds.
pub(crate) enum Holder<'d> {
    /// A primary slot of the calling thread's record (the slot itself, so release needs
    /// no index arithmetic or bounds check).
    Primary(&'d Slot),
    /// A backup slot from the overflow list.
    Backup(&'d BackupSlot),
}

impl<'d> Holder<'d> {
    #[inline(always)]
    pub(crate) fn slot(&self) -> &'d Slot {
        match *self {
            Holder::Primary(slot) => slot,
            Holder::Backup(backup) => &backup.slot,
        }
    }

    /// End the protection and give the slot back.
    #[inline(always)]
    pub(crate) fn release(&self) {
        match *self {
            Holder::Primary(slot) => slot.release(),
            Holder::Backup(backup) => {
                backup.slot.release();
                backup.free();
            }
        }
    }
}

/// A protected pointer (the scoped guard). Dropping it ends the protection: a concurrent
/// `synchronize` of the address may then return and the object may be freed.
///
/// `Guard` is `!Send`: its primary slot belongs to the thread that acquired it. To hand a
/// protection to another thread, [`Guard::detach`] it first, which promotes it to a backup
/// slot (the kernel's `hazptr_detach`).
pub struct Guard<'d, T> {
    holder: Holder<'d>,
    ptr: *mut T,
    /// `!Send` and `!Sync` (the raw pointer already is; this states it).
    _not_send: PhantomData<*mut ()>,
}

impl<'d, T> Guard<'d, T> {
    #[inline(always)]
    pub(crate) fn new(holder: Holder<'d>, ptr: *mut T) -> Self {
        Guard {
            holder,
            ptr,
            _not_send: PhantomData,
        }
    }

    /// The protected pointer (never null).
    #[inline]
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The protected object.
    ///
    /// # Safety
    /// The object must not be freed except after an unpublish followed by a
    /// `synchronize` (or retire) in this guard's domain, and must not be mutated without
    /// synchronization while shared. A guard from `protect_addr` on an address that is not
    /// a live `T` must not be dereferenced.
    #[inline]
    pub unsafe fn as_ref(&self) -> &T {
        // SAFETY: the caller guarantees the object is live and not freed while protected.
        unsafe { &*self.ptr }
    }

    /// End the protection now (the same as dropping the guard).
    #[inline]
    pub fn release(self) {
        drop(self)
    }

    /// Promote the protection to a backup slot so that the guard can move to, and be
    /// released on, another thread (the kernel's `hazptr_detach`).
    ///
    /// Order: the backup slot is published first, then the primary slot is released with
    /// a Release store. `synchronize` scans every primary slot before the overflow list,
    /// so a scan that reads the primary as released then finds the backup slot: the
    /// protection is never invisible.
    pub fn detach(self, domain: &'d Domain) -> DetachedGuard<'d, T> {
        let this = std::mem::ManuallyDrop::new(self);
        let backup = match this.holder {
            Holder::Backup(backup) => backup,
            Holder::Primary(slot) => {
                let backup = domain.registry().acquire_backup(0);
                // Release (inside `publish`): ordered before the primary's release below.
                backup.slot.publish(this.ptr as usize);
                slot.release();
                backup
            }
        };
        backup.set_owner(0);
        DetachedGuard {
            backup,
            ptr: this.ptr,
        }
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.holder.release();
    }
}

impl<T> fmt::Debug for Guard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard").field("ptr", &self.ptr).finish()
    }
}

/// A protection held in a backup slot, free to move between threads. Dropping it (on any
/// thread) ends the protection.
pub struct DetachedGuard<'d, T> {
    backup: &'d BackupSlot,
    ptr: *mut T,
}

// SAFETY: the backup slot is not tied to a thread (any thread may release it), and the
// guard gives shared access to `T` only, so it may move where `&T` may.
unsafe impl<T: Sync> Send for DetachedGuard<'_, T> {}

impl<T> DetachedGuard<'_, T> {
    /// The protected pointer (never null).
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The protected object.
    ///
    /// # Safety
    /// As for [`Guard::as_ref`].
    pub unsafe fn as_ref(&self) -> &T {
        // SAFETY: the caller guarantees the object is live and not freed while protected.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for DetachedGuard<'_, T> {
    fn drop(&mut self) {
        self.backup.slot.release();
        self.backup.free();
    }
}

impl<T> fmt::Debug for DetachedGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetachedGuard")
            .field("ptr", &self.ptr)
            .finish()
    }
}
