//! Measuring the tables: every row on every engine, the real kernel where
//! the machine allows it, and conversion against the kernel's attach.
//!
//! No printing here: progress is reported through a callback and results
//! come back as [`crate::report`] values.

use std::hint::black_box;

use crate::engines::{ENGINES, KERNEL, KERNEL_JIT};
use crate::filters::Filter;
use crate::measure::{measure, Budget, Stats};
use crate::report::{Cell, Clock, Conversion, Forced, RowResult, TableResult};
use crate::tables::{MixRow, Row, Syscall, Table};
use crate::BenchError;

/// What to measure and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Samples and their length.
    pub budget: Budget,
    /// Measure the kernel column (needs seccomp; see [`kernel_status`]).
    pub kernel: bool,
    /// Measure the kernel-jit column (needs `bpf(2)`; see [`kernel_jit_status`]).
    pub kernel_jit: bool,
}

/// The filters of the conversion-vs-attach comparison: one per table
/// shape, from 9 to 1250 classic instructions.
pub const CONVERSION_FILTERS: &[&str] =
    &["seed_fast", "seed_slow", "allow306_end", "long_jumps_large", "long_jumps_large_opt2"];

/// Attach timings per conversion filter (each the kernel crate's median of five).
fn attach_repeats(budget: Budget) -> usize {
    if budget.samples > 15 {
        7
    } else {
        3
    }
}

/// Can this process time real seccomp filters? `Err` says why not.
pub fn kernel_status() -> Result<(), String> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        kernel::seccomp_available().map_err(|e| e.to_string())
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        Err("the kernel column needs x86_64 Linux".to_string())
    }
}

/// Can this process load and test-run the kernel-jit harness? `Err` says why not.
pub fn kernel_jit_status() -> Result<(), String> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        kernel::bpf::available().map_err(|e| e.to_string())
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        Err("the kernel-jit column needs x86_64 Linux".to_string())
    }
}

/// Progress units rows take (cells, for a progress bar).
pub fn cells_in(rows: &[Row], opts: Options) -> u64 {
    let per_row = ENGINES.len() as u64 + u64::from(opts.kernel) + u64::from(opts.kernel_jit);
    let forced = if opts.kernel { rows.iter().filter(|r| r.wants_forced()).count() as u64 } else { 0 };
    rows.len() as u64 * per_row + forced
}

/// Progress units of a table: its rows', then one per engine per mix row.
pub fn table_cells(table: &Table, opts: Options) -> u64 {
    cells_in(&table.rows, opts) + table.mixes.len() as u64 * (ENGINES.len() as u64 + u64::from(opts.kernel_jit))
}

/// Progress units of [`measure_conversions`].
pub fn conversion_cells() -> u64 {
    CONVERSION_FILTERS.len() as u64
}

/// Measures one user-space engine on one row.
fn engine_cell(row: &Row, engine: &crate::engines::Engine, budget: Budget) -> Cell {
    let mut runner = match row.prepare(engine) {
        Ok(Some(r)) => r,
        Ok(None) => return Cell::Skipped,
        Err(why) => return Cell::Unavailable(why),
    };
    let mut data = row.syscall.data();
    let expected = row.expected();
    match runner.run(&mut data) {
        Ok(got) if got == expected => {}
        Ok(got) => return Cell::Unavailable(format!("wrong result {got:#010x}, expected {expected:#010x}")),
        Err(why) => return Cell::Unavailable(why),
    }
    let stats = measure(budget, || {
        let _ = black_box(runner.run(black_box(&mut data)));
    });
    Cell::Measured { stats, clock: None }
}

/// Why the kernel-jit column of a Table C row is empty.
pub const KERNEL_JIT_STACK_NA: &str = "Table C is the kernel's cache and filter stacks; kernel-jit times one filter";

/// The kernel-jit figure of `filter` on `datas`: per round
/// ([`engine::kernel_jit::Clock::round`]) the mean over the inputs of ns
/// per run above the harness alone; each answer first checked against
/// `expected`.
fn kernel_jit_cell(filter: &Filter, datas: &[[u8; 64]], expected: &[u32], rounds: usize) -> Cell {
    let clock = match engine::Prepared::new(filter.program.clone()).and_then(|p| engine::kernel_jit::Clock::new(&p)) {
        Ok(clock) => clock,
        Err(e) => return Cell::Unavailable(e.to_string()),
    };
    for (i, (data, want)) in datas.iter().zip(expected).enumerate() {
        match clock.filter().eval_packet(data) {
            Ok(got) if got == *want => {}
            got => return Cell::Unavailable(format!("input {i}: got {got:?}, expected {want:#010x}")),
        }
    }
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        match clock.round(datas) {
            Ok((_, runs)) if runs.iter().zip(expected).all(|((got, _), want)| got == want) => {
                samples.push(runs.iter().map(|r| r.1).sum::<f64>() / runs.len().max(1) as f64);
            }
            Ok(_) => return Cell::Unavailable("a timed run returned another value".to_string()),
            Err(e) => return Cell::Unavailable(e.to_string()),
        }
    }
    match Stats::from_samples(&samples) {
        Some(stats) => Cell::Measured { stats, clock: None },
        None => Cell::Unavailable("no samples".to_string()),
    }
}

/// The kernel-jit cell of `row`: one filter on its call, `kernel_runs * 5`
/// rounds (the kernel column's sample count); no filter: nothing to time.
fn kernel_jit_row_cell(row: &Row, opts: Options) -> Cell {
    if !opts.kernel_jit {
        return Cell::Unavailable("kernel-jit column disabled".to_string());
    }
    match (row.filters.as_slice(), row.cached) {
        ([], false) => Cell::Skipped,
        ([one], false) => kernel_jit_cell(one, &[row.syscall.data()], &[row.expected()], opts.budget.kernel_runs * 5),
        _ => Cell::Unavailable(KERNEL_JIT_STACK_NA.to_string()),
    }
}

/// Why the kernel column of a mix row is empty.
pub const KERNEL_MIX_NA: &str = "a mix cycles vectors of foreign arches and killed calls; \
     kernel::time_syscalls times one call in a loop";

/// Measures one engine on a mix row: the cycle over every input through
/// [`engine::SeccompEngine::run_batch`] (the loop `bpfconv bench` times, no
/// allocation per evaluation), each result first checked against the
/// classic interpreter; reported per evaluation.
fn mix_cell(mix: &MixRow, prepared: &engine::Prepared, engine: &crate::engines::Engine, budget: Budget) -> Cell {
    let kind: engine::EngineKind = match engine.name.parse() {
        Ok(kind) => kind,
        Err(e) => return Cell::Unavailable(e.to_string()),
    };
    let mut lane = match engine::SeccompEngine::new(kind, prepared) {
        Ok(lane) => lane,
        Err(e) => return Cell::Unavailable(e.to_string()),
    };
    let mut datas = mix.datas.clone();
    for (i, (data, want)) in datas.iter_mut().zip(mix.expected()).enumerate() {
        match (lane.eval_bytes(data), want) {
            (Ok(got), Ok(want)) if got == want => {}
            (got, want) => return Cell::Unavailable(format!("vector {i}: got {got:?}, expected {want:?}")),
        }
    }
    let evals = datas.len();
    let stats = measure(budget, || {
        let _ = lane.run_batch(black_box(&mut datas), 1);
    });
    Cell::Measured { stats: stats.per_eval(evals), clock: None }
}

/// Measures every engine on every mix row (named `<slug>/<row>/<engine>`
/// in progress messages); the kernel column is n/a ([`KERNEL_MIX_NA`]).
pub fn measure_mixes(mixes: &[MixRow], slug: &str, opts: Options, progress: &mut dyn FnMut(&str)) -> Vec<RowResult> {
    let mut results = Vec::with_capacity(mixes.len());
    for mix in mixes {
        let prepared = engine::Prepared::new(mix.filter.program.clone()).map_err(|e| e.to_string());
        let mut cells = Vec::with_capacity(ENGINES.len() + 1);
        for engine in ENGINES {
            progress(&format!("{slug}/{}/{}", mix.id, engine.name));
            let cell = match &prepared {
                Ok(p) => mix_cell(mix, p, engine, opts.budget),
                Err(why) => Cell::Unavailable(why.clone()),
            };
            cells.push((engine.name.to_string(), cell));
        }
        let jit = if opts.kernel_jit {
            progress(&format!("{slug}/{}/{KERNEL_JIT}", mix.id));
            let stride = mix.datas.len().div_ceil(crate::tables::KERNEL_JIT_MIX_MAX).max(1);
            let sampled: Vec<[u8; 64]> = mix.datas.iter().step_by(stride).copied().collect();
            let expected: Result<Vec<u32>, String> = mix.expected().into_iter().step_by(stride).collect();
            match expected {
                Ok(expected) => kernel_jit_cell(&mix.filter, &sampled, &expected, opts.budget.kernel_runs),
                Err(why) => Cell::Unavailable(why),
            }
        } else {
            Cell::Unavailable("kernel-jit column disabled".to_string())
        };
        cells.push((KERNEL_JIT.to_string(), jit));
        cells.push((KERNEL.to_string(), Cell::Unavailable(KERNEL_MIX_NA.to_string())));
        results.push(RowResult {
            id: mix.id.clone(),
            label: mix.label.clone(),
            filter: mix.filter.name.clone(),
            syscall: "mix".to_string(),
            insns: Some(mix.filter.len()),
            path: mix.mean_path(),
            kernel_cached: false,
            cells,
            forced: None,
            kernel_cost: None,
        });
    }
    results
}

/// Rounds of the kernel column per [`Budget::kernel_runs`]: the budget's
/// loops of [`Budget::syscalls`] calls are split into this many times more
/// rounds of this many times fewer calls, so the per-round differences that
/// make [`RowResult::kernel_cost`] are many enough for a median. The same
/// calls in more, shorter rounds: what is left of the noise of a ~20 ns
/// filter cost on a ~900 ns call is child-to-child (each round forks fresh
/// children), so it shrinks with the rounds, not with the calls per loop
/// (at 5 the optimised chdir rows' max/min over positions read 1.11, 1.22
/// and 1.18 in three quick runs).
const KERNEL_ROUNDS_PER_RUN: usize = 20;

/// The kernel column's rounds and the calls per timed loop in each.
pub fn kernel_rounds(budget: Budget) -> (usize, u64) {
    (budget.kernel_runs.max(1) * KERNEL_ROUNDS_PER_RUN, (budget.syscalls / KERNEL_ROUNDS_PER_RUN as u64).max(1))
}

/// What one forked child measured: ns per call of each timed loop, and
/// whether the child-CPU-difference clock was needed; or why it could not.
type ChildTiming = Result<(Vec<f64>, bool), String>;

/// One forked child's timing of `syscall` under `filters` (oldest first):
/// `kernel::time_syscalls`'s five loops of `iterations` calls, ns per call,
/// and whether the child-CPU-difference clock was needed.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn kernel_loops(filters: &[Vec<cbpf::Insn>], syscall: Syscall, iterations: u64) -> ChildTiming {
    let args = syscall.args.map(kernel::SyscallArg::Value);
    kernel::time_syscalls(filters, i64::from(syscall.nr), args, iterations)
        .map(|t| (t.samples_ns, t.clock == kernel::TimingClock::ChildCpuDifference))
        .map_err(|e| e.to_string())
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn kernel_loops(_filters: &[Vec<cbpf::Insn>], _syscall: Syscall, _iterations: u64) -> ChildTiming {
    Err("needs x86_64 Linux".to_string())
}

/// One stack the kernel column times: a row's filters as written or forced
/// past the cache.
struct KernelStack {
    /// Index of the row in the slice measured.
    row: usize,
    forced: bool,
    filters: Vec<Vec<cbpf::Insn>>,
}

/// A kernel stack's rounds: per round the median of its loops (ns per
/// call), and the cell of all loops pooled.
struct KernelRounds {
    medians: Vec<f64>,
    cell: Cell,
}

impl KernelRounds {
    fn of(runs: Vec<Option<ChildTiming>>) -> KernelRounds {
        let mut pooled = Vec::new();
        let mut medians = Vec::with_capacity(runs.len());
        let mut child_cpu = false;
        for run in runs.into_iter().flatten() {
            match run {
                Ok((loops, difference)) => {
                    medians.extend(Stats::from_samples(&loops).map(|s| s.median));
                    pooled.extend(loops);
                    child_cpu |= difference;
                }
                Err(why) => return KernelRounds { medians: Vec::new(), cell: Cell::Unavailable(why) },
            }
        }
        let clock = if child_cpu { Clock::ChildCpuDifference } else { Clock::ThreadCpu };
        let cell = match Stats::from_samples(&pooled) {
            Some(stats) => Cell::Measured { stats, clock: Some(clock) },
            None => Cell::Unavailable("no samples".to_string()),
        };
        KernelRounds { medians, cell }
    }
}

/// Median and range over rounds of `run − base` (the two timed in the same
/// rounds).
fn per_round_difference(run: &KernelRounds, base: &KernelRounds) -> Option<Stats> {
    if run.medians.len() != base.medians.len() {
        return None;
    }
    let differences: Vec<f64> = run.medians.iter().zip(&base.medians).map(|(r, b)| r - b).collect();
    Stats::from_samples(&differences)
}

/// The kernel column of `rows` (their results, in order, get the kernel
/// cell, the forced variant and [`RowResult::kernel_cost`]): every stack
/// (each row's filters, and forced past the cache where
/// [`Row::wants_forced`]) timed once a round in one
/// [`timing::rounds::round_robin`], so drift during the run hits a row and
/// its baseline (the forced run's cached run, else the no-filter row of the
/// same system call) alike and cancels in their per-round difference.
fn measure_kernel(rows: &[Row], results: &mut [RowResult], slug: &str, budget: Budget, progress: &mut dyn FnMut(&str)) {
    let mut stacks = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let filters = |fs: &[Filter]| fs.iter().map(|f| f.original().to_vec()).collect();
        stacks.push(KernelStack { row: i, forced: false, filters: filters(&row.filters) });
        match row.forced() {
            Some(forced) => stacks.push(KernelStack { row: i, forced: true, filters: filters(&forced) }),
            // Nothing to time; its progress unit is done.
            None if row.wants_forced() => progress(&format!("{slug}/{}-forced/kernel", row.id)),
            None => {}
        }
    }
    let (rounds, iterations) = kernel_rounds(budget);
    let mut failed = vec![false; stacks.len()];
    let mut started = vec![false; stacks.len()];
    let timed = timing::rounds::round_robin(stacks.len(), rounds, |i| {
        let (Some(stack), Some(row)) = (stacks.get(i), stacks.get(i).and_then(|s| rows.get(s.row))) else {
            return None;
        };
        if failed.get(i).copied().unwrap_or(true) {
            return None;
        }
        if let Some(s @ false) = started.get_mut(i) {
            *s = true;
            progress(&format!("{slug}/{}{}/kernel", row.id, if stack.forced { "-forced" } else { "" }));
        }
        let run = kernel_loops(&stack.filters, row.syscall, iterations);
        if let (Err(_), Some(f)) = (&run, failed.get_mut(i)) {
            *f = true;
        }
        Some(run)
    });
    let timed: Vec<KernelRounds> = timed.into_iter().map(KernelRounds::of).collect();
    let find = |row: usize, forced: bool| {
        stacks.iter().zip(&timed).find(|(s, _)| s.row == row && s.forced == forced).map(|(_, t)| t)
    };
    for (i, (row, result)) in rows.iter().zip(results.iter_mut()).enumerate() {
        let Some(written) = find(i, false) else { continue };
        result.cells.push((KERNEL.to_string(), written.cell.clone()));
        let forced = find(i, true);
        if row.wants_forced() {
            result.forced = Some(match (row.forced(), forced) {
                (Some(filters), Some(timed)) => Forced {
                    filter: filters.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(","),
                    cell: timed.cell.clone(),
                },
                _ => Forced {
                    filter: format!("{}+ld16", row.filter_name()),
                    cell: Cell::Unavailable("cannot prepend to a filter of BPF_MAXINSNS".to_string()),
                },
            });
        }
        let baseline = || {
            let native = rows.iter().position(|r| r.filters.is_empty() && r.syscall.nr == row.syscall.nr)?;
            find(native, false)
        };
        result.kernel_cost = match forced {
            Some(forced) => per_round_difference(forced, written),
            None if row.filters.is_empty() => None,
            None => baseline().and_then(|base| per_round_difference(written, base)),
        };
    }
}

/// Median wall time of attaching `filter` in the kernel, repeated.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn attach_cell(filter: &Filter, repeats: usize) -> Cell {
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        match kernel::attach_time(filter.original()) {
            Ok(d) => samples.push(d.as_nanos() as f64),
            Err(e) => return Cell::Unavailable(e.to_string()),
        }
    }
    match Stats::from_samples(&samples) {
        Some(stats) => Cell::Measured { stats, clock: None },
        None => Cell::Unavailable("no samples".to_string()),
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn attach_cell(_filter: &Filter, _repeats: usize) -> Cell {
    Cell::Unavailable("needs x86_64 Linux".to_string())
}

/// Measures every cell of `table`; `progress` is called once per cell.
pub fn measure_table(table: &Table, opts: Options, progress: &mut dyn FnMut(&str)) -> TableResult {
    let mut rows = measure_rows(&table.rows, table.id.slug(), opts, progress);
    rows.extend(measure_mixes(&table.mixes, table.id.slug(), opts, progress));
    TableResult { id: table.id, rows }
}

/// Measures every cell of `rows` (named `<slug>/<row>/<engine>` in progress
/// messages); `progress` is called once per cell.
pub fn measure_rows(rows: &[Row], slug: &str, opts: Options, progress: &mut dyn FnMut(&str)) -> Vec<RowResult> {
    let mut results = Vec::with_capacity(rows.len());
    for row in rows {
        let mut cells = Vec::with_capacity(ENGINES.len() + 1);
        for engine in ENGINES {
            progress(&format!("{slug}/{}/{}", row.id, engine.name));
            cells.push((engine.name.to_string(), engine_cell(row, engine, opts.budget)));
        }
        if opts.kernel_jit {
            progress(&format!("{slug}/{}/{KERNEL_JIT}", row.id));
        }
        cells.push((KERNEL_JIT.to_string(), kernel_jit_row_cell(row, opts)));
        if !opts.kernel {
            cells.push((KERNEL.to_string(), Cell::Unavailable("kernel column disabled".to_string())));
        }
        results.push(RowResult {
            id: row.id.to_string(),
            label: row.label.clone(),
            filter: row.filter_name(),
            syscall: row.syscall.label(),
            insns: row.insns(),
            path: row.path_length(),
            kernel_cached: row.kernel_skips_filters(),
            cells,
            forced: None,
            kernel_cost: None,
        });
    }
    if opts.kernel {
        measure_kernel(rows, &mut results, slug, opts.budget, progress);
    }
    results
}

/// Times validation and conversion of [`CONVERSION_FILTERS`] and the
/// kernel's attach of the same filters.
pub fn measure_conversions(opts: Options, progress: &mut dyn FnMut(&str)) -> Result<Vec<Conversion>, BenchError> {
    let mut out = Vec::with_capacity(CONVERSION_FILTERS.len());
    for name in CONVERSION_FILTERS {
        progress(&format!("convert/{name}"));
        let filter = Filter::load(name)?;
        let original = filter.original().to_vec();
        let validate = measure(opts.budget, || {
            let _ = black_box(cbpf::validate(black_box(&original), cbpf::Mode::Seccomp));
        });
        let options = convert::Options::kernel();
        let convert = measure(opts.budget, || {
            let _ = black_box(convert::convert(black_box(&filter.program), &options));
        });
        let attach = if opts.kernel {
            attach_cell(&filter, attach_repeats(opts.budget))
        } else {
            Cell::Unavailable("kernel column disabled".to_string())
        };
        out.push(Conversion {
            filter: name.to_string(),
            insns: filter.len(),
            ebpf_insns: filter.ebpf.len(),
            validate,
            convert,
            attach,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::{columns, json, Machine, Report};
    use crate::tables::{build, TableId};

    /// The kernel filter cost is taken round by round: a drift common to a
    /// run and its baseline (here +10 ns a round) cancels, where the
    /// difference of the pooled medians would keep round-to-round noise.
    #[test]
    fn kernel_cost_is_the_median_of_per_round_differences() {
        let rounds = |medians: &[f64]| {
            KernelRounds::of(medians.iter().map(|&m| Some(Ok((vec![m - 1.0, m, m + 1.0], false)))).collect())
        };
        let run = rounds(&[120.0, 130.0, 140.0, 151.0]);
        let base = rounds(&[100.0, 110.0, 120.0, 130.0]);
        assert_eq!(run.medians, [120.0, 130.0, 140.0, 151.0]);
        let cost = per_round_difference(&run, &base).unwrap();
        assert_eq!((cost.median, cost.min, cost.max, cost.samples), (20.0, 20.0, 21.0, 4));
        match &run.cell {
            Cell::Measured { stats, clock } => {
                assert_eq!((stats.samples, stats.min, stats.max), (12, 119.0, 152.0));
                assert_eq!(*clock, Some(Clock::ThreadCpu));
            }
            other => panic!("{other:?}"),
        }
        // A failed round makes the cell unavailable and leaves no cost.
        let broken = KernelRounds::of(vec![Some(Ok((vec![1.0], true))), Some(Err("killed".to_string()))]);
        assert_eq!(broken.cell, Cell::Unavailable("killed".to_string()));
        assert!(per_round_difference(&broken, &base).is_none());
    }

    /// Mix rows come out with one cell per column, in column order: every
    /// in-process engine measured (rbpf's JIT may refuse a filter past its
    /// page), the kernel n/a with the reason; JSON names them `<row>_mix`.
    /// One tiny sample each: this checks the layout, never the timing.
    #[test]
    fn mix_rows_carry_one_cell_per_engine() {
        let opts = Options {
            budget: Budget { samples: 1, sample_time: Duration::from_micros(1), syscalls: 1, kernel_runs: 1 },
            kernel: false,
            kernel_jit: false,
        };
        let mut tables = Vec::new();
        for id in [TableId::B, TableId::D] {
            let table = build(id).unwrap();
            let mut progress_calls = 0u64;
            let rows = measure_mixes(&table.mixes, id.slug(), opts, &mut |_| progress_calls += 1);
            assert_eq!(progress_calls, table.mixes.len() as u64 * ENGINES.len() as u64);
            assert_eq!(rows.len(), table.mixes.len());
            for row in &rows {
                let names: Vec<&str> = row.cells.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(names, columns(), "{}", row.id);
                for (engine, cell) in &row.cells {
                    match (engine.as_str(), cell) {
                        (KERNEL, Cell::Unavailable(why)) => assert_eq!(why, KERNEL_MIX_NA),
                        (KERNEL, other) => panic!("{}: kernel {other:?}", row.id),
                        (KERNEL_JIT, Cell::Unavailable(why)) => assert_eq!(why, "kernel-jit column disabled"),
                        (KERNEL_JIT, other) => panic!("{}: kernel-jit {other:?}", row.id),
                        (_, Cell::Measured { stats, .. }) => assert_eq!(stats.samples, 1),
                        ("rbpf-jit", Cell::Unavailable(_)) => {}
                        (e, other) => panic!("{}/{e}: {other:?}", row.id),
                    }
                }
                assert_eq!(row.syscall, "mix");
                assert!(row.path > 0 && row.forced.is_none(), "{}", row.id);
            }
            tables.push(TableResult { id, rows });
        }
        let report = Report {
            machine: Machine { machine: "m".into(), rustc: "r".into(), git: "g".into() },
            notes: vec![],
            tables,
            conversions: vec![],
            sweep: vec![],
        };
        let cells = json(&report).cells;
        for (table, row) in [("B", "short_mix"), ("B", "large_opt2_mix"), ("D", "end_mix"), ("D", "docker_opt2_mix")] {
            let engines: Vec<&str> =
                cells.iter().filter(|c| c.table == table && c.row == row).map(|c| c.engine.as_str()).collect();
            assert!(engines.contains(&"fast") && engines.contains(&"cbpf") && !engines.contains(&KERNEL), "{row}");
        }
        let md = crate::report::markdown(&report);
        assert!(md.contains("mix of 977 vectors (every 8th line of long_jumps_large.vectors.jsonl)"), "{md}");
    }
}
