//! Fault injection for the loom models: each fault removes one ordering guarantee or one
//! rule of the shared scan, and the model that guards it must then fail, which shows the
//! model can see the bug it is there for.
//!
//! The type exists in every build, so the algorithm code reads the same everywhere; only
//! the loom build (`cfg(hazptr_loom)`) honours it. Elsewhere [`Domain`](crate::Domain)
//! hands the algorithm [`Faults::NONE`], a constant the compiler folds, so every fault
//! check disappears from the normal build.

use crate::primitive::MODEL_CHECKED;

/// Test-only faults, all off by default. Honoured only in the loom build
/// (`--cfg hazptr_loom`); see [`Domain::with_faults`](crate::Domain::with_faults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Readers skip the fence between publishing the wildcard and loading the pointer.
    pub no_reader_fence: bool,
    /// Readers skip that fence on the slow path only (a backup slot), so the slow path's
    /// publish → validate order is weaker than the fast path's.
    pub no_slow_path_fence: bool,
    /// `synchronize` skips its fence between the caller's unpublish and the scan.
    pub no_scan_fence: bool,
    /// `synchronize` exempts wildcards of the generation just before its own, as a 1-bit
    /// generation would after two flips (the ABA hazard): a reader that published its
    /// wildcard before the flip then escapes holding the old pointer.
    pub exempt_previous_generation: bool,
    /// `synchronize` scans the overflow list before the primary slots, so a guard
    /// promoted (detached) between the two scans is missed.
    pub overflow_first: bool,
    /// `synchronize` ignores the per-slot release sequence and waits for the slot's value
    /// to change, so readers that keep re-taking the address starve it.
    pub ignore_release_seq: bool,
    /// The shared-scan combiner flips the generation before it closes its batch, so a
    /// waiter that joins in between is exempted from waiting on a new-generation wildcard
    /// whose reader did not see that waiter's unpublish.
    pub flip_before_close: bool,
    /// The combiner's sweep checks only its own address, so the other waiters of the batch
    /// are released without a check.
    pub combiner_checks_own_only: bool,
    /// A waiter takes any wake-up as the end of its wait, without checking that its batch
    /// was served, so the wake-up that elects it combiner releases it early.
    pub wake_without_recheck: bool,
    /// Every address hits the batch's Bloom filter (maximal false positives): a false
    /// positive may only cost an exact comparison, never release a waiter early or hang it.
    pub saturated_filter: bool,
    /// Batch-level completion, the design this crate replaced: no waiter of a batch is
    /// released until every waiter's address is clear, so a waiter whose own address is
    /// clear waits for the readers of another waiter's address.
    pub batch_completion: bool,
}

impl Faults {
    /// No fault.
    pub const NONE: Faults = Faults {
        no_reader_fence: false,
        no_slow_path_fence: false,
        no_scan_fence: false,
        exempt_previous_generation: false,
        overflow_first: false,
        ignore_release_seq: false,
        flip_before_close: false,
        combiner_checks_own_only: false,
        wake_without_recheck: false,
        saturated_filter: false,
        batch_completion: false,
    };

    /// The faults in force: `self` in the loom build, [`Faults::NONE`] (a constant)
    /// elsewhere.
    #[inline(always)]
    pub(crate) fn in_force(&self) -> Faults {
        if MODEL_CHECKED {
            *self
        } else {
            Faults::NONE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Faults;

    #[test]
    fn the_default_is_no_fault() {
        assert_eq!(Faults::default(), Faults::NONE);
    }

    #[test]
    fn faults_are_ignored_outside_the_loom_build() {
        let all = Faults {
            no_reader_fence: true,
            batch_completion: true,
            ..Faults::NONE
        };
        let expected = if crate::primitive::MODEL_CHECKED {
            all
        } else {
            Faults::NONE
        };
        assert_eq!(all.in_force(), expected);
    }
}
