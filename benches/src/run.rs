//! Measuring the tables: every row on every engine, the real kernel where
//! the machine allows it, and conversion against the kernel's attach.
//!
//! No printing here: progress is reported through a callback and results
//! come back as [`crate::report`] values.

use std::hint::black_box;

use crate::engines::{ENGINES, KERNEL, KERNEL_JIT};
use crate::filters::Filter;
use crate::measure::{measure, Budget, Stats};
use crate::report::{Cell, Conversion, Forced, RowResult, TableResult};
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
        });
    }
    results
}

/// Times `syscall` under `filters` (oldest first) in the kernel:
/// [`Budget::kernel_runs`] calls of `kernel::time_syscalls`, samples pooled.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn kernel_cell(filters: &[Filter], syscall: Syscall, budget: Budget) -> Cell {
    use crate::report::Clock;
    let insns: Vec<Vec<cbpf::Insn>> = filters.iter().map(|f| f.original().to_vec()).collect();
    let args = syscall.args.map(kernel::SyscallArg::Value);
    let mut samples = Vec::new();
    let mut clock = Clock::ThreadCpu;
    for _ in 0..budget.kernel_runs.max(1) {
        match kernel::time_syscalls(&insns, i64::from(syscall.nr), args, budget.syscalls) {
            Ok(t) => {
                samples.extend(t.samples.iter().map(|d| d.as_nanos() as f64));
                if t.clock == kernel::TimingClock::ChildCpuDifference {
                    clock = Clock::ChildCpuDifference;
                }
            }
            Err(e) => return Cell::Unavailable(e.to_string()),
        }
    }
    match Stats::from_samples(&samples) {
        Some(stats) => Cell::Measured { stats, clock: Some(clock) },
        None => Cell::Unavailable("no samples".to_string()),
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn kernel_cell(_filters: &[Filter], _syscall: Syscall, _budget: Budget) -> Cell {
    Cell::Unavailable("needs x86_64 Linux".to_string())
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
        let mut forced = None;
        if opts.kernel {
            progress(&format!("{slug}/{}/kernel", row.id));
            cells.push((KERNEL.to_string(), kernel_cell(&row.filters, row.syscall, opts.budget)));
            if row.wants_forced() {
                progress(&format!("{slug}/{}-forced/kernel", row.id));
                forced = Some(match row.forced() {
                    Some(filters) => Forced {
                        filter: filters.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(","),
                        cell: kernel_cell(&filters, row.syscall, opts.budget),
                    },
                    None => Forced {
                        filter: format!("{}+ld16", row.filter_name()),
                        cell: Cell::Unavailable("cannot prepend to a filter of BPF_MAXINSNS".to_string()),
                    },
                });
            }
        } else {
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
            forced,
        });
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
