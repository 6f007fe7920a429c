//! The rounds loop of `bpfconv bench`: a grid of cells (a lane, such as an
//! engine, times a slot, such as an input or the mix of all inputs), each
//! calibrated once, then timed once per round, the lanes of a slot one
//! after the other within every round, so drift (frequency, other load)
//! hits every lane alike. Medians over rounds come from
//! [`crate::stats::Stats::from_samples`]. [`round_robin`] is that order
//! alone, for cells timed by other clocks (the benchmark tables' kernel
//! column: a forked child per cell and round).

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

/// Rounds [`interleaved_within`] makes whatever its budget: a median and
/// a spread need three samples.
pub const MIN_ROUNDS: usize = 3;

/// Calibrates every live cell to `sample`, then times `rounds` rounds;
/// `tick` is called after each timed cell (a progress bar). Returns the
/// ns per evaluation of each round, by lane, then slot (empty for lanes
/// that are not live).
pub fn interleaved(grid: &mut impl Grid, rounds: usize, sample: Duration, tick: impl FnMut()) -> Vec<Vec<Vec<f64>>> {
    interleaved_within(grid, rounds, sample, Duration::MAX, tick)
}

/// [`interleaved`], but no round starts once calibration and the rounds
/// have taken `budget`, past the first [`MIN_ROUNDS`]: a cell's sample
/// cannot be shorter than one run of it, so on costly cells (thousands of
/// inputs of thousands of instructions) the planned rounds can take many
/// times the time they were planned for. Every cell gets the same number
/// of samples.
pub fn interleaved_within(
    grid: &mut impl Grid,
    rounds: usize,
    sample: Duration,
    budget: Duration,
    mut tick: impl FnMut(),
) -> Vec<Vec<Vec<f64>>> {
    let start = Instant::now();
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
    let more = |done: usize| done < MIN_ROUNDS || start.elapsed() < budget;
    let timed = round_robin_while(slots * lanes, rounds, more, |cell| {
        let (slot, lane) = (cell / lanes.max(1), cell % lanes.max(1));
        if !grid.live(lane) {
            return None;
        }
        let batch = batches.get(lane).and_then(|b| b.get(slot)).copied().unwrap_or(1);
        let evals = grid.evals(slot) as f64;
        let start = Instant::now();
        grid.run(lane, slot, batch);
        let ns = start.elapsed().as_secs_f64() * 1e9 / (batch as f64 * evals.max(1.0));
        tick();
        Some(ns)
    });
    for (cell, runs) in timed.into_iter().enumerate() {
        let (slot, lane) = (cell / lanes.max(1), cell % lanes.max(1));
        if let Some(s) = samples.get_mut(lane).and_then(|l| l.get_mut(slot)) {
            s.extend(runs.into_iter().flatten());
        }
    }
    samples
}

/// The order of every rounds loop: `rounds` times, `cell(0)` to
/// `cell(cells - 1)` in turn, so whatever drifts during the run (clock
/// frequency, other load) drifts alike for every cell and cancels in
/// differences between cells of one round. Returns each cell's results in
/// round order (`result[cell][round]`).
pub fn round_robin<T>(cells: usize, rounds: usize, cell: impl FnMut(usize) -> T) -> Vec<Vec<T>> {
    round_robin_while(cells, rounds, |_| true, cell)
}

/// [`round_robin`], asking `more(rounds done)` before each round after the
/// first.
fn round_robin_while<T>(
    cells: usize,
    rounds: usize,
    mut more: impl FnMut(usize) -> bool,
    mut cell: impl FnMut(usize) -> T,
) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = (0..cells).map(|_| Vec::with_capacity(rounds)).collect();
    for done in 0..rounds {
        if done > 0 && !more(done) {
            break;
        }
        for (i, results) in out.iter_mut().enumerate() {
            results.push(cell(i));
        }
    }
    out
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

    /// Past its budget, the loop stops after [`MIN_ROUNDS`] rounds, every
    /// live cell with as many samples; a budget it never reaches keeps
    /// every round.
    #[test]
    fn a_spent_budget_stops_after_the_minimum_rounds() {
        let mut grid = Counting { runs: Vec::new() };
        let samples = interleaved_within(&mut grid, 9, Duration::from_micros(20), Duration::ZERO, || {});
        assert!(samples[0].iter().all(|s| s.len() == MIN_ROUNDS), "{samples:?}");
        let samples = interleaved_within(&mut grid, 9, Duration::from_micros(20), Duration::from_secs(60), || {});
        assert!(samples[0].iter().all(|s| s.len() == 9));
    }

    /// Every round visits every cell once, in cell order.
    #[test]
    fn round_robin_visits_each_cell_once_a_round() {
        let mut order = Vec::new();
        let results = round_robin(3, 2, |cell| {
            order.push(cell);
            cell * 10 + order.len()
        });
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
        assert_eq!(results, [vec![1, 4], vec![12, 15], vec![23, 26]]);
    }
}
