//! Measuring the tables: every row on every engine, the real kernel where
//! the machine allows it, and conversion against the kernel's attach.
//!
//! No printing here: progress is reported through a callback and results
//! come back as [`crate::report`] values.

use std::hint::black_box;

use crate::engines::{ENGINES, KERNEL};
use crate::filters::Filter;
use crate::measure::{measure, Budget, Stats};
use crate::report::{Cell, Conversion, Forced, RowResult, TableResult};
use crate::tables::{Row, Syscall, Table};
use crate::BenchError;

/// What to measure and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Samples and their length.
    pub budget: Budget,
    /// Measure the kernel column (needs seccomp; see [`kernel_status`]).
    pub kernel: bool,
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

/// Progress units rows take (cells, for a progress bar).
pub fn cells_in(rows: &[Row], opts: Options) -> u64 {
    let per_row = ENGINES.len() as u64 + u64::from(opts.kernel);
    let forced = if opts.kernel { rows.iter().filter(|r| r.wants_forced()).count() as u64 } else { 0 };
    rows.len() as u64 * per_row + forced
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
    TableResult { id: table.id, rows: measure_rows(&table.rows, table.id.slug(), opts, progress) }
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
