//! Which record of a domain belongs to the calling thread.
//!
//! A thread claims one record per domain on its first acquire there and keeps it until it
//! exits, so the fast path finds it with a thread-local read and at most two compares (the
//! records of the last two domains the slow path looked up are cached in a `const`,
//! destructor-free thread-local). Records are handed back when the thread exits and reused by
//! later threads.

use std::cell::RefCell;
use std::sync::Arc;

use crate::primitive::{record_cache, thread_local, unwinding_out_of_model};
use crate::registry::{Record, Registry};

/// This thread's record in one domain. Holding the `Arc` keeps the record's memory alive
/// even if the domain is dropped first.
struct Entry {
    domain_id: u64,
    _registry: Arc<Registry>,
    record: *const Record,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if unwinding_out_of_model() {
            return;
        }
        // SAFETY: `_registry` keeps the record allocated until this entry is gone.
        unsafe { &*self.record }.release_owner();
    }
}

struct Entries(Vec<Entry>);

impl Drop for Entries {
    fn drop(&mut self) {
        // Forget the cached record before handing the records back, so an acquire made by
        // a later thread-local destructor cannot reach a record another thread now owns.
        record_cache::clear();
    }
}

thread_local! {
    // Only the cold path reads it; the fast path reads `record_cache`. Lazily initialized
    // because loom's `thread_local!` has no `const` form (the lazy check costs the cold
    // path one branch).
    #[allow(clippy::missing_const_for_thread_local)]
    static LOCAL: RefCell<Entries> = RefCell::new(Entries(Vec::new()));
}

/// The calling thread's record in the domain `domain_id`, claiming one in `registry` on
/// first use. `None` only while this thread's thread-local storage is being torn down; the
/// caller then uses a backup slot.
#[inline(always)]
pub(crate) fn record(domain_id: u64, registry: &Arc<Registry>) -> Option<&Record> {
    lookup(domain_id, registry, true)
}

/// The calling thread's record in the domain `domain_id` if it already has one; never
/// claims one.
pub(crate) fn existing_record(domain_id: u64, registry: &Arc<Registry>) -> Option<&Record> {
    lookup(domain_id, registry, false)
}

#[inline(always)]
fn lookup(domain_id: u64, registry: &Arc<Registry>, claim: bool) -> Option<&Record> {
    if let Some(record) = record_cache::find(domain_id) {
        // SAFETY: the cache names a record of a live entry of this thread (it is emptied
        // before entries are dropped); the entry keeps the registry, and so the record,
        // alive; and the caller's borrow of the domain keeps the domain's registry Arc
        // alive for the returned borrow.
        return Some(unsafe { &*(record as *const Record) });
    }
    record_slow(domain_id, registry, claim)
}

#[cold]
fn record_slow(domain_id: u64, registry: &Arc<Registry>, claim: bool) -> Option<&Record> {
    LOCAL
        .try_with(|local| {
            let mut local = local.try_borrow_mut().ok()?;
            let record = match local.0.iter().find(|e| e.domain_id == domain_id) {
                Some(entry) => entry.record,
                None if !claim => return None,
                None => {
                    let record: *const Record = registry.acquire_record();
                    local.0.push(Entry {
                        domain_id,
                        _registry: Arc::clone(registry),
                        record,
                    });
                    record
                }
            };
            record_cache::set((domain_id, record as usize));
            // SAFETY: the record lives as long as `registry`, which outlives the returned borrow.
            Some(unsafe { &*record })
        })
        .ok()
        .flatten()
}

#[cfg(all(test, not(hazptr_loom)))]
mod tests {
    use super::{existing_record, record};
    use crate::primitive::record_cache;
    use crate::{Domain, FenceMode};

    /// The record of `d` for this thread, as an address.
    fn rec(d: &Domain) -> usize {
        std::ptr::from_ref(record(d.id, &d.registry).expect("thread-locals alive")) as usize
    }

    #[test]
    fn each_domain_keeps_its_own_record_through_the_two_entry_cache() {
        std::thread::spawn(|| {
            let [a, b, c] = [(); 3].map(|()| Domain::new(FenceMode::Symmetric));
            let (ra, rb) = (rec(&a), rec(&b));
            assert_ne!(ra, rb);
            // Alternating between two domains: both stay cached, each with its own record.
            for _ in 0..3 {
                assert_eq!(record_cache::find(a.id), Some(ra));
                assert_eq!(record_cache::find(b.id), Some(rb));
                assert_eq!((rec(&a), rec(&b)), (ra, rb));
            }
            // A third domain evicts the entry cached first (here `a`; hits do not reorder),
            // which the slow path then finds again, with the same record.
            let rc = rec(&c);
            assert!(rc != ra && rc != rb);
            assert_eq!(record_cache::find(a.id), None);
            assert_eq!(record_cache::find(b.id), Some(rb));
            assert_eq!(rec(&a), ra);
            assert_eq!(record_cache::find(c.id), Some(rc));
            assert_eq!(record_cache::find(b.id), None);
            // A domain this thread never used has no record, cached or not.
            let d = Domain::new(FenceMode::Symmetric);
            assert!(existing_record(d.id, &d.registry).is_none());
            assert_eq!(record_cache::find(d.id), None);
        })
        .join()
        .unwrap();
    }
}
