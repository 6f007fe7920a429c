//! The rounds loop of `bpfconv bench`: a grid of cells (a lane, such as an
//! engine, times a slot, such as an input or the mix of all inputs), each
//! calibrated once, then timed once per round, the lanes of a slot one
//! after the other within every round, so drift (frequency, other load)
//! hits every lane alike. Medians over rounds come from
//! [`crate::stats::Stats::from_samples`].

use std::time::{Duration, Instant};

use crate::stats::calibrate;

/// What the loop times.
pub trait Grid {
    /// Lanes (rows of the result).
    fn lanes(&self) -> usize;
    /// Slots (columns of the result).
    fn slots(&self) -> usize;
    /// Whether lane `lane` can run at all (a lane that could not be
    /// prepared gets no samples).
    fn live(&self, lane: usize) -> bool;
    /// Evaluations one run of `slot` does (the ns figures are per
    /// evaluation).
    fn evals(&self, slot: usize) -> usize;
    /// Runs cell (`lane`, `slot`) `batch` times over; results hidden from
    /// the optimiser by the implementation.
    fn run(&mut self, lane: usize, slot: usize, batch: u64);
}

/// Calibrates every live cell to `sample`, then times `rounds` rounds;
/// `tick` is called after each timed cell (a progress bar). Returns the
/// ns per evaluation of each round, by lane, then slot (empty for lanes
/// that are not live).
pub fn interleaved(
    grid: &mut impl Grid,
    rounds: usize,
    sample: Duration,
    mut tick: impl FnMut(),
) -> Vec<Vec<Vec<f64>>> {
    let (lanes, slots) = (grid.lanes(), grid.slots());
    let mut batches = vec![vec![1u64; slots]; lanes];
    for (lane, per) in batches.iter_mut().enumerate() {
        if !grid.live(lane) {
            continue;
        }
        for (slot, b) in per.iter_mut().enumerate() {
            *b = calibrate(sample, &mut || grid.run(lane, slot, 1));
        }
    }
    let mut samples = vec![vec![Vec::with_capacity(rounds); slots]; lanes];
    for _ in 0..rounds {
        for slot in 0..slots {
            for lane in 0..lanes {
                if !grid.live(lane) {
                    continue;
                }
                let batch = batches.get(lane).and_then(|b| b.get(slot)).copied().unwrap_or(1);
                let evals = grid.evals(slot) as f64;
                let start = Instant::now();
                grid.run(lane, slot, batch);
                let ns = start.elapsed().as_secs_f64() * 1e9 / (batch as f64 * evals.max(1.0));
                if let Some(s) = samples.get_mut(lane).and_then(|l| l.get_mut(slot)) {
                    s.push(ns);
                }
                tick();
            }
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two lanes (one dead) over three slots: every live cell has one
    /// sample per round, in ns per evaluation.
    struct Counting {
        runs: Vec<(usize, usize, u64)>,
    }

    impl Grid for Counting {
        fn lanes(&self) -> usize {
            2
        }
        fn slots(&self) -> usize {
            3
        }
        fn live(&self, lane: usize) -> bool {
            lane == 0
        }
        fn evals(&self, slot: usize) -> usize {
            slot + 1
        }
        fn run(&mut self, lane: usize, slot: usize, batch: u64) {
            self.runs.push((lane, slot, batch));
            std::hint::black_box((0..batch).sum::<u64>());
        }
    }

    #[test]
    fn every_live_cell_gets_one_sample_a_round() {
        let mut grid = Counting { runs: Vec::new() };
        let mut ticks = 0;
        let samples = interleaved(&mut grid, 4, Duration::from_micros(20), || ticks += 1);
        assert_eq!(ticks, 4 * 3);
        assert!(samples[0].iter().all(|s| s.len() == 4 && s.iter().all(|ns| *ns >= 0.0)));
        assert!(samples[1].iter().all(Vec::is_empty));
        assert!(grid.runs.iter().all(|&(lane, _, _)| lane == 0));
    }
}
