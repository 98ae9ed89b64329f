//! After `fork()`: the child has only the thread that forked, but a copy of every slot the
//! parent's other threads had published, which would make the child's `synchronize` wait for
//! readers that do not exist.

use crate::registry::Record;
use crate::Domain;

impl Domain {
    /// Forgets, in the child of a `fork()`, the hazard pointers of every thread but the
    /// calling one (the forking thread's copy, the child's only thread): their primary slots
    /// are released and their records freed for reuse, and the backup slots they owned are
    /// released and returned to the pool. The calling thread's own guards stay valid.
    ///
    /// Call it in the child before anything else uses the domain, e.g. from a
    /// `pthread_atfork` child handler (lockdep does), and never in a process with more than
    /// one thread: the other threads' slots would be taken from under them.
    ///
    /// Not covered: a backup slot of a [`DetachedGuard`](crate::DetachedGuard) (it has no
    /// owning thread, and the forking thread may hold it) stays published; and if another
    /// thread was inside this domain's `synchronize` at the fork, the child's shared-scan
    /// state may be left mid-batch, so a child `synchronize` that finds a blocker (only such
    /// a detached guard can be one after this call) may wait forever. A caller that keeps
    /// its synchronizes out of the fork (lockdep holds a lock around both) has neither.
    ///
    /// Cost: one walk of the domain's records and backup slots; no allocation, no lock.
    pub fn after_fork_in_child(&self) {
        let own = crate::local::existing_record(self.id, &self.registry)
            .map_or(std::ptr::null(), |r| r as *const Record);
        for record in self.registry.records() {
            if std::ptr::eq(record, own) {
                continue;
            }
            for slot in &record.slots {
                if slot.owner_value() != 0 {
                    // The owner does not exist in the child: this thread releases for it.
                    slot.release();
                }
            }
            record.release_owner();
        }
        for backup in self.registry.backups() {
            let owner = backup.owner();
            if owner != 0 && owner != own as usize {
                backup.slot.release();
                backup.free();
            }
        }
    }
}
