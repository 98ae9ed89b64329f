//! [`Domain`]: the set of slots one `synchronize` scans, with its fence mode and stats.

use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::atomic::{AtomicBool as StdAtomicBool, AtomicU64};
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::faults::Faults;
use crate::fence::{self, FenceMode};
use crate::guard::{Guard, Holder};
use crate::primitive::{AtomicPtr, AtomicUsize, Mutex};
use crate::registry::Registry;
use crate::retire::Retired;
use crate::scan::{Blocker, Cursor};
use crate::shared::SharedScan;
use crate::slot::wildcard;
use crate::stats::{Counters, Stats};

/// Why [`Domain::synchronize`] refused to wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynchronizeError {
    /// The calling thread itself protects `addr` (a guard it holds, not detached). Waiting
    /// would never end: this is the hazard-pointer form of calling `synchronize_rcu()`
    /// inside an RCU read-side critical section. Nothing was waited for.
    SelfProtected {
        /// The address passed to `synchronize`.
        addr: usize,
    },
}

impl fmt::Display for SynchronizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SynchronizeError::SelfProtected { addr } => write!(
                f,
                "hazptr: synchronize({addr:#x}) called by a thread that itself protects \
                 {addr:#x}; it would wait for itself forever. Drop (or detach and hand off) \
                 the guard first"
            ),
        }
    }
}

impl std::error::Error for SynchronizeError {}

static NEXT_DOMAIN_ID: AtomicU64 = AtomicU64::new(1);

/// A hazard-pointer domain: the slots that [`Domain::synchronize`] scans.
///
/// Each thread that acquires in a domain gets one record of four primary slots there (one
/// 64-byte line), claimed on first use and reused by later threads after it exits. A
/// fifth nested guard takes a backup slot from the domain's overflow list. Synchronizing
/// scans every record and then the overflow list, so a domain should hold the readers of
/// one kind of object: [`Domain::global`] for most uses, a private domain where scan
/// cost or isolation matters.
///
/// Thread safety: `Domain` is `Send + Sync`; all methods take `&self`.
pub struct Domain {
    pub(crate) id: u64,
    pub(crate) mode: FenceMode,
    force_slow_path: StdAtomicBool,
    /// Honoured in the loom build only; read through `Domain::faults`.
    faults: Faults,
    /// The wildcard generation; `synchronize` bumps it. Alone on its line: readers load
    /// it on every `protect`, synchronizers write it.
    pub(crate) generation: CachePadded<AtomicUsize>,
    /// Shared-membarrier sequence (Asymmetric mode): odd while a barrier is in flight.
    pub(crate) barrier_seq: CachePadded<AtomicUsize>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) shared: SharedScan,
    /// Objects retired and not yet freed (see `retire.rs`).
    pub(crate) retired: Mutex<Vec<Retired>>,
    pub(crate) counters: CachePadded<Counters>,
}

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain")
            .field("id", &self.id)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Domain {
    /// A new domain. `mode` is resolved once, here: [`FenceMode::Asymmetric`] registers
    /// the process for `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` and falls back to
    /// [`FenceMode::Symmetric`] where that fails (see [`Domain::fence_mode`]).
    ///
    /// Cost: one or two syscalls for `Asymmetric`; no allocation until the first acquire.
    pub fn new(mode: FenceMode) -> Domain {
        Domain {
            // Relaxed: a unique number, no ordering.
            id: NEXT_DOMAIN_ID.fetch_add(1, Relaxed),
            mode: fence::resolve(mode),
            force_slow_path: StdAtomicBool::new(false),
            faults: Faults::NONE,
            generation: CachePadded::new(AtomicUsize::new(1)),
            barrier_seq: CachePadded::new(AtomicUsize::new(0)),
            registry: Arc::new(Registry::new()),
            shared: SharedScan::new(),
            retired: Mutex::new(Vec::new()),
            counters: CachePadded::new(Counters::default()),
        }
    }

    /// A [`FenceMode::Symmetric`] domain with test-only [`Faults`] injected, for the loom
    /// models. The faults take effect only in the loom build (`--cfg hazptr_loom`);
    /// elsewhere this is `Domain::new(FenceMode::Symmetric)`.
    pub fn with_faults(faults: Faults) -> Domain {
        let mut domain = Domain::new(FenceMode::Symmetric);
        domain.faults = faults;
        domain
    }

    /// The faults in force: none outside the loom build (a constant the compiler folds).
    #[inline(always)]
    pub(crate) fn faults(&self) -> Faults {
        self.faults.in_force()
    }

    /// The process-wide default domain, [`FenceMode::Symmetric`], created on first use.
    /// Not for loom models: a static outlives the model's iterations.
    pub fn global() -> &'static Domain {
        static GLOBAL: std::sync::OnceLock<Domain> = std::sync::OnceLock::new();
        GLOBAL.get_or_init(|| Domain::new(FenceMode::Symmetric))
    }

    /// The fence mode in force (the requested one, or `Symmetric` after a fallback).
    pub fn fence_mode(&self) -> FenceMode {
        self.mode
    }

    /// Runtime debug switch: while on, every acquire in this domain takes the slow path
    /// (a backup slot on the overflow list), as the cargo feature `force-slow-path` does
    /// for all domains. For tests of the slow path; safe to flip at any time.
    pub fn set_force_slow_path(&self, on: bool) {
        // Relaxed: a mode switch with no data attached; each acquire reads it once.
        self.force_slow_path.store(on, Relaxed);
    }

    /// A snapshot of this domain's counters. Counters are updated with Relaxed atomics,
    /// so a snapshot taken while other threads run is approximate.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot(&self.registry)
    }

    /// Load `src` and protect the loaded pointer until the guard drops; `None` if it is
    /// null.
    ///
    /// Wildcard-first protocol (kernel hazptr v5): publish a wildcard of the current
    /// generation, fence, load `src`, publish the loaded address. The wildcard makes every
    /// concurrent `synchronize` of an older generation wait, so no re-load and compare is
    /// needed. Fast path: no allocation and no read-modify-write; 4 guards per thread
    /// nest on primary slots, more take backup slots.
    ///
    /// The guard keeps the object from being *freed* by a writer that follows the
    /// protocol (unpublish, then `synchronize`/retire, then free). It does not keep the
    /// object published, and it protects nothing the object points to.
    ///
    /// Compile-time error if `T` is 1-byte aligned (addresses must be even: odd values
    /// are wildcards).
    #[inline]
    pub fn protect<T>(&self, src: &AtomicPtr<T>) -> Option<Guard<'_, T>> {
        const {
            assert!(
                std::mem::align_of::<T>() >= 2,
                "hazptr: T must be 2-aligned"
            )
        };
        let holder = self.claim();
        let slot = holder.slot();
        slot.publish(wildcard(self.load_generation()));
        self.reader_fence(&holder);
        // Acquire: the object's initialization, published with Release by the writer, is
        // visible through the pointer we return.
        let ptr = src.load(Acquire);
        if ptr.is_null() {
            holder.release();
            return None;
        }
        // Store C: narrows the wildcard to one address. It needs no fence of its own: the
        // wildcard already blocks every synchronizer that could miss the load above.
        slot.publish(ptr as usize);
        Some(Guard::new(holder, ptr))
    }

    /// Protect a fixed address that is never unpublished, such as a hash-bucket head: a
    /// `synchronize(addr)` that starts while the guard lives waits for it.
    ///
    /// No wildcard is needed: there is no pointer load whose result could be stale, so
    /// the address itself is published, then the fence orders it before the caller's
    /// reads inside the bucket (store buffering with `synchronize`'s fence).
    ///
    /// # Panics
    /// If `addr` is null (nothing can be synchronized on null). Compile-time error if `T`
    /// is 1-byte aligned.
    #[inline]
    pub fn protect_addr<T>(&self, addr: *const T) -> Guard<'_, T> {
        const {
            assert!(
                std::mem::align_of::<T>() >= 2,
                "hazptr: T must be 2-aligned"
            )
        };
        assert!(!addr.is_null(), "hazptr: protect_addr(null)");
        let holder = self.claim();
        holder.slot().publish(addr as usize);
        self.reader_fence(&holder);
        Guard::new(holder, addr as *mut T)
    }

    /// Wait until no slot that protected `addr` when this call began still protects it.
    ///
    /// The caller must already have unpublished `addr` (unlinked it, or unlinked what a
    /// permanent address such as a bucket head leads to); after `Ok`, every reader that
    /// could have reached it through the old link has dropped its guard, and the caller
    /// may free it. Readers that protect a permanent `addr` again after the call began
    /// do not hold it up: a slot counts as released once it has been *seen* released
    /// (its release sequence moved), as in the kernel's shazptr scan.
    ///
    /// Only readers of `addr` hold it up, never readers of other addresses, even when
    /// other callers synchronize on those addresses at the same time.
    ///
    /// How, in [`FenceMode::Symmetric`]: a SeqCst fence, then a **self-scan** of every
    /// slot, which returns at once if none protects `addr` or holds a wildcard (no write
    /// to shared memory). Otherwise the caller joins the **shared scan**: concurrent
    /// callers share one generation flip and one sweep over the slots, and each caller is
    /// released as soon as its own address is clear (see [`Domain::synchronize_direct`]
    /// for the one-caller alternative).
    ///
    /// In [`FenceMode::Asymmetric`] a self-scan would cost a `membarrier` of its own,
    /// which is expensive when it has to interrupt running threads, so every caller joins
    /// the shared scan directly: a batch's one `membarrier`, issued after the combiner
    /// closes it, serves every waiter in it, and a caller alone pays about what a
    /// self-scan would. The combiner waits a little for more callers to share that barrier
    /// only when others are inside `synchronize` and a slot may block its batch (counted in
    /// [`Stats::gather_waits`](crate::Stats::gather_waits)): never for a caller alone, nor
    /// for a batch that nothing protects. BENCHMARKS.md has the costs measured.
    ///
    /// Null is never protected: `synchronize(null)` returns `Ok` at once. A guard leaked
    /// with `mem::forget`, or a [`DetachedGuard`](crate::DetachedGuard) the calling thread
    /// holds on `addr`, makes this wait forever.
    ///
    /// # Errors
    /// [`SynchronizeError::SelfProtected`] if the calling thread holds a (non-detached)
    /// guard on `addr`: it would wait for itself forever.
    pub fn synchronize<T: ?Sized>(&self, addr: *const T) -> Result<(), SynchronizeError> {
        let Some(addr) = self.begin_synchronize(addr)? else {
            return Ok(());
        };
        // In Asymmetric mode a self-scan would cost a `membarrier` of its own, so every
        // caller joins a batch, whose one barrier serves all its waiters.
        let self_scan = self.mode == FenceMode::Symmetric;
        if self_scan {
            self.heavy_barrier();
            let any_wildcard_or_addr = Blocker {
                addr,
                generation: None,
            };
            if !self.any_blocks(any_wildcard_or_addr) {
                self.counters.self_scan_returns.fetch_add(1, Relaxed);
                return Ok(());
            }
        }
        self.counters.synchronize_waits.fetch_add(1, Relaxed);
        self.shared.wait(self, addr, self_scan);
        Ok(())
    }

    /// [`Domain::synchronize`] without the shared scan: the caller issues its own barrier,
    /// flips the generation and waits on each blocking slot itself (spin, then sleeps
    /// with exponential backoff). The kernel series' "direct" path, kept for comparison
    /// and for callers that want no dependence on other synchronizers. Same contract and
    /// errors.
    pub fn synchronize_direct<T: ?Sized>(&self, addr: *const T) -> Result<(), SynchronizeError> {
        let Some(addr) = self.begin_synchronize(addr)? else {
            return Ok(());
        };
        self.heavy_barrier();
        let blocker = Blocker {
            addr,
            generation: Some(self.flip()),
        };
        if self.drain_from(blocker, Cursor::start(self), None) {
            self.counters.synchronize_waits.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    /// Common prologue: count the call; `None` for null; refuse a self-wait.
    fn begin_synchronize<T: ?Sized>(
        &self,
        addr: *const T,
    ) -> Result<Option<usize>, SynchronizeError> {
        let addr = addr.cast::<u8>() as usize;
        self.counters.synchronize_calls.fetch_add(1, Relaxed);
        if addr == 0 {
            return Ok(None);
        }
        if self.protected_by_current_thread(addr) {
            return Err(SynchronizeError::SelfProtected { addr });
        }
        Ok(Some(addr))
    }

    /// Whether the calling thread holds a guard on `addr` in this domain.
    fn protected_by_current_thread(&self, addr: usize) -> bool {
        let Some(record) = crate::local::existing_record(self.id, &self.registry) else {
            return false;
        };
        // Owner reads of its own slots and backup slots.
        record.slots.iter().any(|s| s.owner_value() == addr)
            || self
                .registry
                .backups()
                .any(|b| b.owner() == record as *const _ as usize && b.slot.owner_value() == addr)
    }

    /// The generation a reader puts in its wildcard.
    #[inline(always)]
    fn load_generation(&self) -> usize {
        // Acquire: pairs with the AcqRel RMW in `Domain::flip` (see there). A plain `mov`
        // on x86.
        self.generation.load(Acquire)
    }

    /// The reader's half of the store-buffering pair, on the fast and the slow path alike.
    #[inline(always)]
    fn reader_fence(&self, holder: &Holder<'_>) {
        let faults = self.faults();
        if faults.no_reader_fence
            || (faults.no_slow_path_fence && matches!(holder, Holder::Backup(_)))
        {
            return;
        }
        fence::light(self.mode);
    }

    /// Take a slot for a new guard: a free primary slot of this thread's record, or a
    /// backup slot.
    #[inline(always)]
    fn claim(&self) -> Holder<'_> {
        if !self.forced_slow_path() {
            if let Some(record) = crate::local::record(self.id, &self.registry) {
                if let Some(slot) = record.claim_slot() {
                    return Holder::Primary(slot);
                }
            }
        }
        self.claim_slow()
    }

    #[cold]
    #[inline(never)]
    fn claim_slow(&self) -> Holder<'_> {
        self.counters.slow_path_acquires.fetch_add(1, Relaxed);
        let owner =
            crate::local::record(self.id, &self.registry).map_or(0, |r| r as *const _ as usize);
        Holder::Backup(self.registry.acquire_backup(owner))
    }

    #[inline(always)]
    fn forced_slow_path(&self) -> bool {
        // Relaxed: a debug switch, see `set_force_slow_path`.
        cfg!(feature = "force-slow-path") || self.force_slow_path.load(Relaxed)
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }
}
