//! Run times in a fixed log-scale histogram: the buckets, the atomic counts
//! one slot records into, and the quantiles read from counts.
//!
//! | Choice | Value | Why |
//! |--------|-------|-----|
//! | unit | nanoseconds, as `u64` | exact for any duration a call takes; no float on the record path |
//! | range | 2^10 ns (1.024 µs) to 2^46 ns (about 19.5 h); below it the first bucket, above it the last | a fast call through the layer takes microseconds, a parked one up to hours (`max_runtime`, the TTL) |
//! | buckets | 8 per doubling, each 2^(1/8) (about 9.05 %) wider than the last: 288 in all | 1.1 KiB of counts per slot, so a tool's window of 60 slots stays small |
//! | index | the doubling from the leading zeros, the eighth from 7 comparisons of the next 32 bits | a few instructions; no logarithm |
//! | quantile | nearest rank, reported as the bucket's geometric middle | [`MAX_RELATIVE_ERROR`] |
//!
//! A quantile is the middle of the bucket the true value (the sample at
//! that rank) falls in, so it is off by at most 2^(1/16) − 1, about
//! 4.43 %, of that value, for durations inside the range.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The lowest power of two of the range, in nanoseconds.
const LOW: u32 = 10;
/// The highest power of two of the range, in nanoseconds.
const HIGH: u32 = 46;
/// Buckets per doubling.
const PER_DOUBLING: usize = 8;
/// The buckets in all.
pub(super) const BUCKETS: usize = (HIGH - LOW) as usize * PER_DOUBLING;

/// The largest relative error of a quantile inside the range:
/// 2^(1/16) − 1.
pub(super) const MAX_RELATIVE_ERROR: f64 = 0.044_273_782_427_413_755;

/// Where each eighth of a doubling starts: (2^(k/8) − 1) · 2^32, rounded
/// down, for k = 1..=7 (checked against `powf` by a test).
const EIGHTHS: [u32; PER_DOUBLING - 1] = [
    388_727_751,
    812_638_371,
    1_274_916_179,
    1_779_033_703,
    2_328_777_762,
    2_928_277_909,
    3_582_037_455,
];

/// The bucket of a duration of `nanos`.
pub(super) fn bucket(nanos: u64) -> usize {
    if nanos < 1 << LOW {
        return 0;
    }
    let doubling = 63 - nanos.leading_zeros();
    if doubling >= HIGH {
        return BUCKETS - 1;
    }
    // The 32 bits after the leading one: where in its doubling it lies.
    let fraction = ((nanos << (63 - doubling)) << 1 >> 32) as u32;
    let eighth = EIGHTHS.iter().filter(|start| fraction >= **start).count();
    (doubling - LOW) as usize * PER_DOUBLING + eighth
}

/// The duration a bucket stands for: its geometric middle.
pub(super) fn middle(bucket: usize) -> Duration {
    let exponent = f64::from(LOW) + (bucket as f64 + 0.5) / PER_DOUBLING as f64;
    Duration::from_nanos(exponent.exp2() as u64)
}

/// One slot's counts, recorded into concurrently.
pub(super) struct Counts([AtomicU32; BUCKETS]);

impl Counts {
    pub(super) fn new() -> Box<Self> {
        Box::new(Self(std::array::from_fn(|_| AtomicU32::new(0))))
    }

    pub(super) fn add(&self, nanos: u64) {
        self.0[bucket(nanos)].fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn clear(&self) {
        for count in &self.0 {
            count.store(0, Ordering::Relaxed);
        }
    }

    /// Adds these counts into `into`.
    pub(super) fn read_into(&self, into: &mut Summed) {
        for (sum, count) in into.0.iter_mut().zip(&self.0) {
            *sum += u64::from(count.load(Ordering::Relaxed));
        }
    }
}

/// Counts read out of one slot or summed over several.
#[derive(Clone)]
pub(super) struct Summed([u64; BUCKETS]);

impl Default for Summed {
    fn default() -> Self {
        Self([0; BUCKETS])
    }
}

impl Summed {
    pub(super) fn add(&mut self, other: &Summed) {
        for (sum, count) in self.0.iter_mut().zip(&other.0) {
            *sum += count;
        }
    }

    /// The quantiles `quantiles` (each in `0.0..=1.0`), by nearest rank:
    /// `None` for each when nothing was counted.
    pub(super) fn quantiles<const N: usize>(&self, quantiles: [f64; N]) -> [Option<Duration>; N] {
        let total: u64 = self.0.iter().sum();
        quantiles.map(|quantile| {
            if total == 0 {
                return None;
            }
            let rank = ((quantile * total as f64).ceil() as u64).clamp(1, total);
            let mut seen = 0;
            self.0
                .iter()
                .position(|count| {
                    seen += count;
                    seen >= rank
                })
                .map(middle)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eighths_are_the_powers_they_stand_for() {
        for (k, start) in EIGHTHS.iter().enumerate() {
            let exact = ((k as f64 + 1.0) / 8.0).exp2() - 1.0;
            assert_eq!(*start, (exact * 4_294_967_296.0).floor() as u32, "{k}");
        }
        let bound = (1.0_f64 / 16.0).exp2() - 1.0;
        assert!((MAX_RELATIVE_ERROR - bound).abs() < 1e-15);
    }

    #[test]
    fn buckets_rise_with_the_duration_and_cover_the_range() {
        let mut last = 0;
        let mut nanos = 1_u64;
        while nanos < 1 << 50 {
            let at = bucket(nanos);
            assert!(at >= last, "{nanos}");
            last = at;
            nanos += nanos / 97 + 1;
        }
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket((1 << LOW) - 1), 0);
        assert_eq!(bucket(1 << LOW), 0);
        assert_eq!(bucket(1 << (LOW + 1)), PER_DOUBLING);
        assert_eq!(bucket((1 << HIGH) - 1), BUCKETS - 1);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn every_duration_in_range_is_within_the_bound_of_its_buckets_middle() {
        let mut nanos = 1_u64 << LOW;
        while nanos < 1 << HIGH {
            let middle = middle(bucket(nanos)).as_nanos() as f64;
            let error = (middle - nanos as f64).abs() / nanos as f64;
            assert!(
                error <= MAX_RELATIVE_ERROR + 1e-9,
                "{nanos} ns: {middle} ({error})"
            );
            nanos += nanos / 211 + 1;
        }
    }

    /// The nearest-rank quantile of sorted `samples`.
    fn exact(samples: &[Duration], quantile: f64) -> Duration {
        let rank = ((quantile * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[rank - 1]
    }

    #[test]
    fn quantiles_of_known_durations_land_within_the_bound() {
        // 1 ms to 1 s by 1 ms, a tail of ten 30 s calls, and a few
        // microsecond ones: a fast tool that sometimes parks.
        let mut samples: Vec<Duration> = (1..=1000).map(Duration::from_millis).collect();
        samples.extend(std::iter::repeat_n(Duration::from_secs(30), 10));
        samples.extend((1..=20).map(|n| Duration::from_micros(n * 7)));
        samples.sort();
        let counts = Counts::new();
        for sample in &samples {
            counts.add(sample.as_nanos() as u64);
        }
        let mut summed = Summed::default();
        counts.read_into(&mut summed);
        let quantiles = [0.0, 0.01, 0.5, 0.95, 0.99, 0.995, 1.0];
        let read = summed.quantiles(quantiles);
        for (quantile, read) in quantiles.into_iter().zip(read) {
            let exact = exact(&samples, quantile).as_secs_f64();
            let read = read.expect("samples were counted").as_secs_f64();
            let error = (read - exact).abs() / exact;
            assert!(
                error <= MAX_RELATIVE_ERROR,
                "p{quantile}: {read} s for {exact} s ({error})"
            );
        }
        assert_eq!(Summed::default().quantiles([0.5]), [None]);
    }

    #[test]
    fn cleared_counts_count_nothing_and_sums_add_up() {
        let counts = Counts::new();
        counts.add(5_000_000);
        let mut one = Summed::default();
        counts.read_into(&mut one);
        let mut two = one.clone();
        two.add(&one);
        assert_eq!(two.0.iter().sum::<u64>(), 2);
        counts.clear();
        let mut none = Summed::default();
        counts.read_into(&mut none);
        assert_eq!(none.quantiles([0.5]), [None]);
    }
}
