//! A 256-bit Bloom filter of the addresses waiting in one shared-scan batch.
//!
//! Waiters add their address here instead of allocating a node each (the kernel series
//! adopted a Bloom filter for the same reason). The scan treats a slot whose address hits
//! the filter as blocking; a false positive only makes the batch wait for an unrelated
//! reader a little longer, never shorter, because a real waiter's address always hits.

/// Two hash probes into 256 bits: with 16 waiters about 1.4% of unrelated addresses hit.
#[cfg(not(loom))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bloom {
    bits: [u64; 4],
}

#[cfg(not(loom))]
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

    #[inline]
    pub(crate) fn may_contain(&self, addr: usize) -> bool {
        Self::probes(addr)
            .iter()
            .all(|&bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }

    pub(crate) fn merge(&mut self, other: &Bloom) {
        for (a, b) in self.bits.iter_mut().zip(other.bits) {
            *a |= b;
        }
    }
}

/// Under loom, addresses differ between iterations, so hashed bits would make the model
/// nondeterministic: an exact set stands in, and `saturate` (the `saturated_filter` fault
/// knob) makes every address hit, the worst case of false positives.
#[cfg(loom)]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bloom {
    addrs: Vec<usize>,
    saturated: bool,
}

#[cfg(loom)]
impl Bloom {
    pub(crate) fn insert(&mut self, addr: usize) {
        self.addrs.push(addr);
    }

    pub(crate) fn may_contain(&self, addr: usize) -> bool {
        self.saturated || self.addrs.contains(&addr)
    }

    pub(crate) fn merge(&mut self, other: &Bloom) {
        self.addrs.extend_from_slice(&other.addrs);
        self.saturated |= other.saturated;
    }

    pub(crate) fn saturate(&mut self) {
        self.saturated = true;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Bloom;

    #[test]
    fn inserted_addresses_always_hit_and_few_others_do() {
        let mut f = Bloom::default();
        let waiters: Vec<usize> = (0..16).map(|i| 0x7f00_0000_1000 + i * 4096).collect();
        waiters.iter().for_each(|&a| f.insert(a));
        assert!(waiters.iter().all(|&a| f.may_contain(a)));
        let hits = (0..10_000usize)
            .map(|i| 0x5500_0000_0000 + i * 64)
            .filter(|&a| f.may_contain(a))
            .count();
        assert!(hits < 500, "false positive rate too high: {hits}/10000");
        assert_ne!(f, Bloom::default());
        let mut g = Bloom::default();
        g.merge(&f);
        assert_eq!(g, f);
    }
}
