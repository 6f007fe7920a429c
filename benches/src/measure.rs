//! Timing budgets of the tables; the statistics and the calibrated batch
//! timer are [`timing::stats`]'s (shared with `bpfconv bench`): medians of
//! [`Budget::samples`] samples of about [`Budget::sample_time`] each, with
//! their range.

use std::time::Duration;

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

pub use timing::stats::Stats;

/// Times `call` and returns nanoseconds per call ([`timing::stats::measure`]
/// with the budget's samples and sample time).
///
/// `call` must do one unit of work and hide its inputs and result from the
/// optimiser (`std::hint::black_box`); inputs are prepared by the caller,
/// outside the timed loop.
pub fn measure(budget: Budget, call: impl FnMut()) -> Stats {
    timing::stats::measure(budget.samples, budget.sample_time, call)
}

#[cfg(test)]
mod tests {
    use super::*;

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
