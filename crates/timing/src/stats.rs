//! Medians of repeated samples, with their range.
//!
//! Each sample times a batch of calls with a monotonic clock; the batch size
//! is calibrated first so that one sample lasts about the requested sample
//! time, far above the clock's resolution. The reported figure is the
//! median time per call over the samples, shown with the fastest and
//! slowest sample, so a noisy neighbour shows up as a wide range instead of
//! a silently wrong median.

use std::time::{Duration, Instant};

use serde::Serialize;

/// Nanoseconds per call: median and range over the samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    /// Median over the samples.
    pub median: f64,
    /// Fastest sample.
    pub min: f64,
    /// Slowest sample.
    pub max: f64,
    /// Number of samples.
    pub samples: usize,
}

impl Stats {
    /// Summarises per-call times in nanoseconds; `None` for no samples.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|s| s.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let median = *sorted.get(sorted.len() / 2)?;
        Some(Stats { median, min: *sorted.first()?, max: *sorted.last()?, samples: sorted.len() })
    }

    /// The same figures per evaluation, when each timed call evaluated
    /// `evals` inputs (a mix: one call cycles through every input once).
    pub fn per_eval(self, evals: usize) -> Stats {
        let n = evals.max(1) as f64;
        Stats { median: self.median / n, min: self.min / n, max: self.max / n, samples: self.samples }
    }
}

/// The batch size that makes one sample of `call` last about
/// `sample_time`: doubles the batch until it takes a tenth of that (this
/// also warms up), then scales.
pub fn calibrate(sample_time: Duration, call: &mut impl FnMut()) -> u64 {
    let mut batch: u64 = 1;
    let per_call = loop {
        let elapsed = time_batch(batch, call);
        if elapsed >= sample_time / 10 || batch >= 1 << 30 {
            break elapsed.as_secs_f64() / batch as f64;
        }
        batch *= 2;
    };
    ((sample_time.as_secs_f64() / per_call.max(1e-12)) as u64).clamp(1, 1 << 32)
}

/// Times `samples` batches of `call` of the calibrated size and returns
/// nanoseconds per call.
///
/// `call` must do one unit of work and hide its inputs and result from the
/// optimiser (`std::hint::black_box`); inputs are prepared by the caller,
/// outside the timed loop.
pub fn measure(samples: usize, sample_time: Duration, mut call: impl FnMut()) -> Stats {
    let batch = calibrate(sample_time, &mut call);
    let samples: Vec<f64> = (0..samples.max(1)).map(|_| ns_per_call(batch, &mut call)).collect();
    // `samples` is non-empty, so the summary exists.
    Stats::from_samples(&samples).unwrap_or(Stats { median: f64::NAN, min: f64::NAN, max: f64::NAN, samples: 0 })
}

/// One sample: `batch` calls, in nanoseconds per call.
pub fn ns_per_call(batch: u64, call: &mut impl FnMut()) -> f64 {
    time_batch(batch, call).as_secs_f64() * 1e9 / batch.max(1) as f64
}

/// Wall time of `batch` calls.
pub fn time_batch(batch: u64, call: &mut impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..batch {
        call();
    }
    start.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_take_the_median_and_range() {
        let s = Stats::from_samples(&[5.0, 1.0, 3.0, f64::NAN, 4.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.samples), (3.0, 1.0, 5.0, 5));
        assert_eq!(Stats::from_samples(&[]), None);
        let p = s.per_eval(2);
        assert_eq!((p.median, p.min, p.max, p.samples), (1.5, 0.5, 2.5, 5));
    }

    #[test]
    fn measure_returns_the_requested_number_of_samples() {
        let mut n = 0u64;
        let s = measure(3, Duration::from_micros(50), || n = std::hint::black_box(n + 1));
        assert_eq!(s.samples, 3);
        assert!(s.min <= s.median && s.median <= s.max);
        assert!(n > 3);
    }
}
