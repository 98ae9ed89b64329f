//! Latency samples and their summary (exact percentiles from sorted samples).

/// A summary of latency samples, in microseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    /// Mean.
    pub avg_us: f64,
    /// Median (nearest rank).
    pub p50_us: f64,
    /// 99th percentile (nearest rank).
    pub p99_us: f64,
    /// Largest sample.
    pub max_us: f64,
}

/// Summarizes samples given in nanoseconds (sorts them in place).
pub fn summarize(samples_ns: &mut [u64]) -> Summary {
    if samples_ns.is_empty() {
        return Summary::default();
    }
    samples_ns.sort_unstable();
    let n = samples_ns.len();
    let rank = |p: usize| samples_ns[((n * p).div_ceil(100)).clamp(1, n) - 1] as f64 / 1e3;
    let sum: u128 = samples_ns.iter().map(|&x| u128::from(x)).sum();
    Summary {
        avg_us: sum as f64 / n as f64 / 1e3,
        p50_us: rank(50),
        p99_us: rank(99),
        max_us: samples_ns[n - 1] as f64 / 1e3,
    }
}

/// Formats microseconds with a precision that suits the magnitude.
pub fn fmt_us(us: f64) -> String {
    if us < 10.0 {
        format!("{us:.2}")
    } else if us < 1000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

/// The spread of one statistic over rounds: median, smallest and largest round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Median over rounds (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest round's value.
    pub min: f64,
    /// The largest round's value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (one per round); `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// Whether every round of `self` is below every round of `other` (the ranges do not
    /// overlap), so the ranking held in every round.
    pub fn entirely_below(&self, other: &Spread) -> bool {
        self.max < other.min
    }

    /// `median (min–max)`, each number formatted by `fmt`.
    pub fn display(&self, fmt: impl Fn(f64) -> String) -> String {
        format!("{} ({}–{})", fmt(self.median), fmt(self.min), fmt(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        let s = summarize(&mut v);
        assert_eq!(s.p50_us, 50.0);
        assert_eq!(s.p99_us, 99.0);
        assert_eq!(s.max_us, 100.0);
        assert_eq!(summarize(&mut []).max_us, 0.0);
    }

    #[test]
    fn spread_over_rounds() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of([4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of([]), None);
        assert_eq!(s.display(|x| format!("{x:.1}")), "2.0 (1.0–3.0)");
        let above = Spread::of([3.5, 4.0]).unwrap();
        assert!(s.entirely_below(&above));
        assert!(!s.entirely_below(&Spread::of([2.5, 9.0]).unwrap()));
    }
}

/// A log-linear latency histogram (32 sub-buckets per power of two, ≤ 3 % error), for
/// benchmarks that take too many samples to keep. Exact count, sum and max.
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: vec![0; SUB * 64],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

impl Histogram {
    fn index(ns: u64) -> usize {
        if ns < SUB as u64 {
            return ns as usize;
        }
        let msb = 63 - ns.leading_zeros();
        let shift = msb - SUB_BITS;
        let sub = ((ns >> shift) as usize) & (SUB - 1);
        (msb - SUB_BITS + 1) as usize * SUB + sub
    }

    /// The middle of bucket `i`, in ns.
    fn value(i: usize) -> f64 {
        if i < SUB {
            return i as f64;
        }
        let shift = (i / SUB - 1) as u32;
        let low = ((SUB + i % SUB) as u64) << shift;
        low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
    }

    /// Adds one sample.
    pub fn record(&mut self, ns: u64) {
        self.buckets[Self::index(ns)] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds all of `other`'s samples.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    fn percentile_ns(&self, p: u64) -> f64 {
        let rank = (self.count * p).div_ceil(100).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::value(i).min(self.max_ns as f64);
            }
        }
        self.max_ns as f64
    }

    /// The summary (percentiles are bucket midpoints).
    pub fn summary(&self) -> Summary {
        if self.count == 0 {
            return Summary::default();
        }
        Summary {
            avg_us: self.sum_ns as f64 / self.count as f64 / 1e3,
            p50_us: self.percentile_ns(50) / 1e3,
            p99_us: self.percentile_ns(99) / 1e3,
            max_us: self.max_ns as f64 / 1e3,
        }
    }
}

#[cfg(test)]
mod histogram_tests {
    use super::*;

    #[test]
    fn buckets_are_close() {
        for v in [
            0u64,
            1,
            31,
            32,
            33,
            100,
            1_000,
            12_345,
            10_000_000,
            u64::MAX / 2,
        ] {
            let mid = Histogram::value(Histogram::index(v));
            assert!(
                (mid - v as f64).abs() <= v as f64 * 0.04 + 0.5,
                "{v} -> {mid}"
            );
        }
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert!((s.p50_us - 500.0).abs() < 20.0, "{s:?}");
        assert!((s.p99_us - 990.0).abs() < 40.0, "{s:?}");
        assert_eq!(s.max_us, 1000.0);
    }
}
