//! Hazard pointers after the Linux kernel's `hazptr`, for waiting on *one* object instead
//! of a process-wide grace period.
//!
//! # The problem
//!
//! A reader finds an object through a shared pointer (a hash bucket, a list link) and uses
//! it without a lock. A writer unlinks the object and wants to free it. It must wait until
//! no reader still uses it, but it should not wait for *every* reader in the process, the
//! way an RCU grace period does: in the lock validator this crate was built for,
//! unregistering one lock key should wait only for the readers of that key's hash bucket.
//!
//! # The idea
//!
//! Each reader *publishes* the address it is about to use in a **hazard-pointer slot**
//! that writers can read. A writer first unpublishes the object, then calls
//! [`Domain::synchronize`]`(addr)`, which scans every slot and returns once no slot that
//! protected `addr` still does. Then it frees.
//!
//! # Concepts
//!
//! * **Slot**: a word a reader publishes an address in, plus a *release sequence*
//!   counting its releases. Each thread owns a **record** of 4 primary slots in one
//!   cache line, claimed on its first acquire and reused after it exits.
//! * **Backup (overflow) slot**: taken from the domain's overflow list when a thread nests
//!   more than 4 guards, or when a guard is [detached](Guard::detach) to move between
//!   threads.
//! * **Wildcard**: the value `(generation << 1) | 1` a reader publishes *before* loading
//!   the pointer it protects. It blocks every `synchronize` that flipped the generation
//!   after the wildcard's generation was read. The generation is a full machine word, not
//!   one bit: a userspace thread can sleep through two flips, and a 1-bit generation would
//!   then look current again (an ABA hazard).
//! * **Fence mode**: [`FenceMode::Symmetric`] puts a full fence on both sides;
//!   [`FenceMode::Asymmetric`] leaves the reader a compiler fence and makes `synchronize`
//!   call `membarrier`.
//! * **Domain**: the set of slots a `synchronize` scans. [`Domain::global`] is the default.
//! * **Shared scan**: concurrent `synchronize` callers that have to wait join one
//!   *batch*; one of them, the *combiner*, issues the batch's barrier, flips the
//!   generation and *sweeps* every slot once for all of them (a Bloom filter of the
//!   batch's addresses keeps the sweep at one probe per slot). Each waiter is then
//!   released as soon as *its own* address is clear: one that nothing blocks returns at
//!   once; the scans of the blocked ones continue from the slot that blocked each, polled
//!   by one of them (the *poller*) while the others sleep. A reader parked on one address
//!   never delays a `synchronize` on another.
//!
//! # Memory-ordering argument
//!
//! Names as in the kernel's litmus tests: **A** is the published pointer, **B** a slot.
//!
//! Reader, [`Domain::protect`]: load generation *g* (Acquire); store wildcard(*g*) into B
//! (Release); fence; load A (Acquire); store the loaded address into B (Release). Release
//! of the guard: bump the slot's release sequence (Release), store 0 (Release).
//!
//! Writer: store A (unpublish; the caller's); then [`Domain::synchronize`]: fence; flip the
//! generation to *g'* (AcqRel); read every primary slot, then the overflow list (Acquire
//! loads of value, then sequence).
//!
//! 1. **Store buffering between acquire and synchronize.** Reader: store B; fence; load A.
//!    Writer: store A; fence; load B. With a full fence on each side (SeqCst fences, or the
//!    reader's compiler fence upgraded by the writer's `membarrier`) the two loads cannot
//!    both miss: either the scan sees the reader's wildcard or address and waits, or the
//!    reader's load of A sees the unpublish and never holds the old object. One fence on
//!    one side is not enough; the loom model `acquire_before_scan` fails without the
//!    reader's fence and without the writer's.
//! 2. **Release, "no access after free".** A reader's accesses to the object precede its
//!    Release bump and Release clear; the scanner's Acquire load that sees either one
//!    synchronizes with it, so those accesses happen before the writer frees.
//! 3. **Message passing across the generation flip.** A wildcard of generation ≥ *g'* is
//!    skipped by the scan. That is safe because its reader loaded the generation with
//!    Acquire and read *g'* or later, which the writer wrote with a Release RMW after
//!    unpublishing (later flips extend the release sequence): the reader's later load of A
//!    sees the unpublish. Wildcards older than *g'* always block, in primary and backup
//!    slots alike. Model: `wildcard_flip_escape` (fails when the scan also exempts
//!    the previous generation, the ABA hazard of a 1-bit generation).
//! 4. **Primary before overflow.** [`Guard::detach`] publishes the backup slot and then
//!    releases the primary slot with a Release store. The scan reads all primary slots
//!    (Acquire) *before* it loads the overflow list, so a scan that sees the primary
//!    released also sees the backup. Model: `overflow_promotion_order` (fails when the
//!    overflow list is scanned first).
//! 5. **Seen released once.** The writer waits on each blocking slot until its value no
//!    longer blocks *or its release sequence moved*. The value is read before the sequence,
//!    and values are Release-stored after the bump of the previous release, so the first
//!    observation's sequence is at least that of the protection it saw; any other sequence
//!    later proves that protection ended. Readers that keep re-taking a permanent bucket
//!    head therefore cannot starve the writer. Model: `release_sequence_waiting` (the
//!    writer livelocks when the sequence is ignored).
//! 6. **Per-waiter completion in a shared batch.** A waiter joins the open batch under
//!    the batch lock after its unpublish (in Symmetric mode also after its self-scan's
//!    SeqCst fence). The combiner closes the batch under the same lock, so every waiter's
//!    unpublish (and fence) happens-before the combiner's barrier and flip. In Asymmetric
//!    mode waiters join without a barrier of their own; the combiner's `membarrier`,
//!    which starts after the close, is the heavy side of point 1 for all of them. The sweep then observes each slot once after the flip, in the scan order of
//!    point 4: for each waiter these are exactly the first observations a direct scan on
//!    its behalf would make, so points 1–4 hold for each waiter separately. A slot blocks
//!    a waiter only if it holds that waiter's own address or a wildcard older than the
//!    flip; the Bloom filter only decides which values are compared exactly, and a false
//!    positive matches no waiter. The combiner hands each waiter its outcome under the
//!    batch lock: "clear" (it returns: the combiner's Acquire observations of every slot,
//!    then the lock hand-off, put each protection that had ended before the waiter's
//!    return, point 2), or "blocked at this slot, seen so" (its scan continues from that
//!    slot with that observation, done by whichever waiter polls the blocked list; the
//!    batch lock hands the waiter from the combiner to the poller and from one poller to
//!    the next, ordering each one's loads before the next one's, so points 4 and 5 carry
//!    over every hand-off, and the poller serves it under the lock once its scan ends,
//!    as the combiner does). No waiter waits for a slot that does not block its own
//!    address, the combiner never waits on another waiter's behalf, and the poller hands
//!    its role on as soon as its own scan ends. Models: `waiter_with_a_clear_address_returns_while_another_is_blocked`
//!    (fails under batch-level completion, where a waiter is released only when every
//!    address of its batch is clear), `waiter_registered_after_flip_does_not_escape`
//!    (fails when the combiner flips before it closes the batch).
//!
//! # Example
//!
//! ```
//! use std::sync::atomic::{AtomicPtr, Ordering};
//! use hazptr::Domain;
//!
//! let domain = Domain::global();
//! let shared = AtomicPtr::new(Box::into_raw(Box::new(41u64)));
//!
//! // Reader
//! if let Some(guard) = domain.protect(&shared) {
//!     // SAFETY: the writer below frees only after unpublish + synchronize.
//!     assert_eq!(unsafe { *guard.as_ref() }, 41);
//! }
//!
//! // Writer: unpublish, wait for readers of the old object, free it.
//! let old = shared.swap(Box::into_raw(Box::new(42)), Ordering::AcqRel);
//! domain.synchronize(old).expect("this thread holds no guard on it");
//! // SAFETY: unpublished and synchronized: no reader can reach or still hold `old`.
//! drop(unsafe { Box::from_raw(old) });
//! # drop(unsafe { Box::from_raw(shared.load(Ordering::Relaxed)) });
//! ```
//!
//! # Thread safety and limits
//!
//! [`Guard`] is `!Send`; [`DetachedGuard`] is `Send`. Protecting is not async-signal-safe
//! (a signal handler that protects on the interrupted thread could take the same slot).
//! A guard leaked with `mem::forget` protects its address forever, so `synchronize` on it
//! never returns.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The loom build needs the optional dependency too (see the crate's manifest).
#[cfg(all(hazptr_loom, not(feature = "loom")))]
compile_error!("`--cfg hazptr_loom` needs `--features loom` (the loom models' dependency)");

mod bloom;
mod domain;
mod faults;
mod fence;
mod fork;
mod guard;
mod local;
mod primitive;
mod registry;
mod retire;
mod scan;
mod shared;
mod slot;
mod stats;
mod wait;
mod waiter;

pub use domain::{Domain, SynchronizeError};
pub use faults::Faults;
pub use fence::FenceMode;
pub use guard::{DetachedGuard, Guard};
/// The atomic pointer type [`Domain::protect`] loads: `std`'s, or loom's in the loom build
/// (`cfg(hazptr_loom)`).
pub use primitive::AtomicPtr;
pub use registry::PRIMARY_SLOTS;
pub use stats::{Stats, BATCH_SIZE_BUCKETS};
