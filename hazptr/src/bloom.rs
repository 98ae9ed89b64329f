//! A 256-bit Bloom filter of the addresses waiting in one shared-scan batch.
//!
//! Waiters add their address here as they join (no allocation; the kernel series adopted a
//! Bloom filter for the same reason). The combiner's sweep loads each slot once and tests
//! its value against the filter: a miss blocks no waiter of the batch and costs nothing
//! more, a hit is resolved exactly against the batch's waiters. So the filter keeps the
//! sweep at one probe per slot however many waiters the batch has, and a false positive
//! costs one exact comparison per waiter, never a wait: a real waiter's address always
//! hits.

/// Two hash probes into 256 bits: with 16 waiters (at most 32 bits set) about 1.4% of
/// unrelated addresses hit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bloom {
    bits: [u64; 4],
}

impl Bloom {
    #[inline]
    fn probes(addr: usize) -> [usize; 2] {
        // Fibonacci hashing of the address (low bits are alignment zeros, so mix first).
        let h = (addr as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        [(h >> 56) as usize, ((h >> 48) & 0xff) as usize]
    }

    pub(crate) fn insert(&mut self, addr: usize) {
        for bit in Self::probes(addr) {
            self.bits[bit / 64] |= 1 << (bit % 64);
        }
    }

    /// Whether `addr` may have been inserted: always true if it was.
    #[inline]
    pub(crate) fn may_contain(&self, addr: usize) -> bool {
        Self::probes(addr)
            .iter()
            .all(|&bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }

    /// Every address hits from now on (the `saturated_filter` fault of the loom models,
    /// the worst case of false positives).
    pub(crate) fn saturate(&mut self) {
        self.bits = [u64::MAX; 4];
    }
}

#[cfg(test)]
mod tests {
    use super::Bloom;

    fn waiters(n: usize) -> Vec<usize> {
        (0..n).map(|i| 0x7f00_0000_1000 + i * 4096).collect()
    }

    #[test]
    fn an_empty_filter_contains_nothing() {
        let f = Bloom::default();
        assert!((1..10_000usize).all(|i| !f.may_contain(i * 8)));
    }

    #[test]
    fn inserted_addresses_always_hit() {
        let mut f = Bloom::default();
        let addrs = waiters(64);
        for (n, &a) in addrs.iter().enumerate() {
            f.insert(a);
            assert!(addrs[..=n].iter().all(|&b| f.may_contain(b)));
        }
    }

    #[test]
    fn with_sixteen_waiters_few_unrelated_addresses_hit() {
        let mut f = Bloom::default();
        waiters(16).iter().for_each(|&a| f.insert(a));
        let hits = (0..10_000usize)
            .map(|i| 0x5500_0000_0000 + i * 64)
            .filter(|&a| f.may_contain(a))
            .count();
        // Expected about 1.4% (see the type's docs); 5% leaves room for a poor sample.
        assert!(hits < 500, "false positive rate too high: {hits}/10000");
    }

    #[test]
    fn nearby_aligned_addresses_use_different_bits() {
        // Addresses one cache line apart (hash-bucket heads, say) must not collide as a
        // whole: the hash mixes the high bits into the probes.
        let mut f = Bloom::default();
        f.insert(0x1000);
        let colliding = (1..256usize)
            .filter(|i| f.may_contain(0x1000 + i * 64))
            .count();
        assert!(colliding < 8, "{colliding} of 255 neighbours collide");
    }

    #[test]
    fn a_saturated_filter_contains_everything() {
        let mut f = Bloom::default();
        f.saturate();
        assert!((0..1000usize).all(|i| f.may_contain(i * 8 + 0x10)));
    }
}
