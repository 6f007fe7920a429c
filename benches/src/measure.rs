//! Timing: medians of repeated samples, with their range.
//!
//! Each sample times a batch of calls with a monotonic clock; the batch size
//! is calibrated first so that one sample lasts about
//! [`Budget::sample_time`], far above the clock's resolution. The reported
//! figure is the median time per call over [`Budget::samples`] samples,
//! shown with the fastest and slowest sample, so a noisy neighbour shows up
//! as a wide range instead of a silently wrong median.

use std::time::{Duration, Instant};

use serde::Serialize;

/// How long to measure one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Timed samples per cell (odd, so the median is one of them).
    pub samples: usize,
    /// Target duration of one sample.
    pub sample_time: Duration,
    /// System calls per kernel sample (`kernel::time_syscalls` iterations).
    pub syscalls: u64,
    /// `kernel::time_syscalls` calls per kernel cell (five samples each,
    /// each call in a fresh child); their samples are pooled.
    pub kernel_runs: usize,
}

impl Budget {
    /// `--quick`: the whole run fits in well under three minutes on two cores.
    pub const QUICK: Budget =
        Budget { samples: 31, sample_time: Duration::from_micros(200), syscalls: 100_000, kernel_runs: 3 };
    /// The default: tighter ranges.
    pub const FULL: Budget =
        Budget { samples: 101, sample_time: Duration::from_millis(1), syscalls: 500_000, kernel_runs: 5 };
}

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
}

/// Times `call` and returns nanoseconds per call.
///
/// `call` must do one unit of work and hide its inputs and result from the
/// optimiser (`std::hint::black_box`); inputs are prepared by the caller,
/// outside the timed loop.
pub fn measure(budget: Budget, mut call: impl FnMut()) -> Stats {
    // Warm-up and calibration: double the batch until it takes a tenth of a
    // sample, then scale to the sample time.
    let mut batch: u64 = 1;
    let per_call = loop {
        let elapsed = time_batch(batch, &mut call);
        if elapsed >= budget.sample_time / 10 || batch >= 1 << 30 {
            break elapsed.as_secs_f64() / batch as f64;
        }
        batch *= 2;
    };
    let batch = ((budget.sample_time.as_secs_f64() / per_call.max(1e-12)) as u64).clamp(1, 1 << 32);
    let samples: Vec<f64> =
        (0..budget.samples.max(1)).map(|_| time_batch(batch, &mut call).as_secs_f64() * 1e9 / batch as f64).collect();
    // `samples` is non-empty, so the summary exists.
    Stats::from_samples(&samples).unwrap_or(Stats { median: f64::NAN, min: f64::NAN, max: f64::NAN, samples: 0 })
}

fn time_batch(batch: u64, call: &mut impl FnMut()) -> Duration {
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
    }

    #[test]
    fn measure_returns_the_requested_number_of_samples() {
        let budget = Budget { samples: 3, sample_time: Duration::from_micros(50), syscalls: 1, kernel_runs: 1 };
        let mut n = 0u64;
        let s = measure(budget, || n = std::hint::black_box(n + 1));
        assert_eq!(s.samples, 3);
        assert!(s.min <= s.median && s.median <= s.max);
        assert!(n > 3);
    }
}
