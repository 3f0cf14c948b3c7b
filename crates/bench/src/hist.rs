//! A log-linear latency histogram (HDR-style): constant memory, mergeable, and a relative
//! error of at most 1/128 (0.8 %) on every percentile.
//!
//! Values are nanoseconds. Below 128 ns each value has its own bucket; above, every
//! power-of-two range is cut into 64 equal buckets, so a bucket is never wider than 1/64
//! of its lower bound and its midpoint is within 1/128 of any value in it. Minimum and
//! maximum are kept exactly.

/// Bits of linear resolution (128 exact values, then 64 buckets per octave).
const PRECISION: u32 = 7;
const HALF: u64 = 1 << (PRECISION - 1);
/// Largest recordable value: about 18 minutes; larger values are clamped to it.
const MAX_VALUE: u64 = (1 << 40) - 1;
const BUCKETS: usize = bucket_of(MAX_VALUE) + 1;

const fn bucket_of(v: u64) -> usize {
    if v < (1 << PRECISION) {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - PRECISION + 1;
    let mantissa = v >> shift; // in [HALF, 2 * HALF)
    (shift as u64 * HALF + mantissa) as usize
}

/// The lowest and highest values that fall into bucket `i`.
fn bounds_of(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < (1 << PRECISION) {
        return (i, i);
    }
    let shift = i / HALF - 1;
    let mantissa = i % HALF + HALF;
    (mantissa << shift, ((mantissa + 1) << shift) - 1)
}

/// Latencies in nanoseconds.
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.total)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Record one value (ns).
    pub fn record(&mut self, ns: u64) {
        let v = ns.min(MAX_VALUE);
        self.counts[bucket_of(v)] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Record a duration.
    pub fn record_duration(&mut self, d: std::time::Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact largest value (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact smallest value (0 when empty).
    pub fn min(&self) -> u64 {
        if self.total == 0 { 0 } else { self.min }
    }

    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            #[allow(clippy::cast_precision_loss)]
            let m = self.sum as f64 / self.total as f64;
            m
        }
    }

    /// The value below or at which `q` percent of the values lie (nearest rank), within
    /// 1/128 of the exact sample; clamped to the exact min and max. 0 when empty.
    pub fn percentile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let q = q.clamp(0.0, 100.0);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let rank = ((q / 100.0 * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds_of(i);
                let mid = lo + (hi - lo) / 2;
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut expected_lo = 0;
        for i in 0..BUCKETS {
            let (lo, hi) = bounds_of(i);
            assert_eq!(lo, expected_lo, "bucket {i} starts where {} ended", i - 1);
            assert!(hi >= lo);
            assert_eq!(bucket_of(lo), i);
            assert_eq!(bucket_of(hi), i);
            if lo >= 128 {
                assert!((hi - lo + 1) * 64 <= lo, "bucket {i} at most 1/64 wide");
            }
            expected_lo = hi + 1;
        }
        assert_eq!(bounds_of(BUCKETS - 1).1, MAX_VALUE);
    }

    fn exact(sorted: &[u64], q: f64) -> u64 {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let rank = ((q / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn percentiles_are_within_one_percent_of_the_exact_sample() {
        let mut rng = fastrand::Rng::with_seed(7);
        // A latency-like sample: mostly ~1 ms, a tail up to 2 s.
        let mut values: Vec<u64> = (0..100_000)
            .map(|_| {
                let base = 200_000 + rng.u64(0..1_600_000);
                if rng.u8(0..100) == 0 {
                    base * rng.u64(1..1000)
                } else {
                    base
                }
            })
            .collect();
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            let want = exact(&values, q);
            let got = h.percentile(q);
            #[allow(clippy::cast_precision_loss)]
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(err <= 1.0 / 100.0, "p{q}: got {got}, want {want}");
        }
        assert_eq!(h.max(), *values.last().unwrap());
        assert_eq!(h.min(), values[0]);
        assert_eq!(h.count(), 100_000);
        assert_eq!(h.percentile(100.0), h.max());
    }

    #[test]
    fn small_values_are_exact_and_merge_adds_up() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for v in 1..=50 {
            a.record(v);
        }
        for v in 51..=100 {
            b.record(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), 100);
        assert_eq!(a.percentile(50.0), 50);
        assert_eq!(a.percentile(90.0), 90);
        assert_eq!(a.percentile(99.0), 99);
        assert_eq!(a.max(), 100);
        assert_eq!(a.min(), 1);
        assert!((a.mean() - 50.5).abs() < 1e-9);
    }

    #[test]
    fn empty_and_huge_values() {
        let mut h = Histogram::new();
        assert_eq!(h.percentile(50.0), 0);
        assert_eq!(h.max(), 0);
        assert_eq!(h.min(), 0);
        h.record(u64::MAX);
        assert_eq!(h.max(), MAX_VALUE);
        assert_eq!(h.percentile(99.0), MAX_VALUE);
    }
}
