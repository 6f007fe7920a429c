//! Results of a run and their presentation: Markdown tables in the published
//! shapes with the derived figures, and the JSON of FORMATS.md §5.
//!
//! Pure functions of a [`Report`]; the `tables` binary does the measuring,
//! the printing and the file writing.

use std::fmt::Write as _;

use serde::Serialize;

use crate::engines::{ENGINES, KERNEL, KERNEL_JIT};
use crate::measure::Stats;
use crate::tables::TableId;

/// Where the numbers come from: printed first in every report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// CPU model, core count and kernel (`Intel(R) Xeon(R) ..., 2 cores, Linux 6.18.44`).
    pub machine: String,
    /// `rustc --version`.
    pub rustc: String,
    /// Git revision (`-dirty` when the work tree has changes).
    pub git: String,
}

/// One measured (or not) cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Median and range, in nanoseconds per evaluation (kernel: per call).
    Measured {
        stats: Stats,
        /// For the kernel column: the clock that timed the loop.
        clock: Option<Clock>,
    },
    /// Nothing to evaluate here (a no-filter baseline on an in-process engine).
    Skipped,
    /// The engine cannot run this row; why.
    Unavailable(String),
}

/// Which clock timed a kernel cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// `CLOCK_THREAD_CPUTIME_ID` around the loop.
    ThreadCpu,
    /// Child CPU time of a 2N-call run minus an N-call run (the filter
    /// kills `clock_gettime`).
    ChildCpuDifference,
}

impl Clock {
    /// The name used in JSON and the legend.
    pub fn name(self) -> &'static str {
        match self {
            Clock::ThreadCpu => "thread-cputime",
            Clock::ChildCpuDifference => "child-cpu-difference",
        }
    }
}

impl Cell {
    /// The median, if measured.
    pub fn ns(&self) -> Option<f64> {
        match self {
            Cell::Measured { stats, .. } => Some(stats.median),
            _ => None,
        }
    }
}

/// The kernel timed with each filter made to run despite the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Forced {
    /// Names of the forced filters (`seed_fast+ld16`).
    pub filter: String,
    /// The measurement.
    pub cell: Cell,
}

/// One row's results.
#[derive(Debug, Clone, PartialEq)]
pub struct RowResult {
    /// Row ID.
    pub id: String,
    /// Human label.
    pub label: String,
    /// Filter names (JSON `filter`).
    pub filter: String,
    /// The call (`getppid()`).
    pub syscall: String,
    /// Classic instructions of the filter (single-filter rows).
    pub insns: Option<usize>,
    /// Classic instructions executed for the call.
    pub path: usize,
    /// Does the kernel's cache skip the filters for this call as written?
    pub kernel_cached: bool,
    /// One cell per engine, in [`columns`] order (without the forced column).
    pub cells: Vec<(String, Cell)>,
    /// The kernel with the filters forced to run, where the cache skips them.
    pub forced: Option<Forced>,
    /// The kernel filter cost measured side by side: per round of the
    /// kernel column (every kernel cell timed once a round), the forced run
    /// less the cached run, or the run less the no-filter run of the same
    /// system call; median and range over the rounds. `None` where either
    /// side is missing.
    pub kernel_cost: Option<Stats>,
}

impl RowResult {
    /// The median of `engine`'s cell.
    pub fn ns(&self, engine: &str) -> Option<f64> {
        self.cells.iter().find(|(e, _)| e == engine).and_then(|(_, c)| c.ns())
    }

    /// What running the filters adds to the system call in the kernel:
    /// [`RowResult::kernel_cost`]'s median where it was measured (drift
    /// between rounds cancels there); else, from the cells' medians, where
    /// the cache skips the filters the forced run minus the cached run (same
    /// call, same clock), otherwise the run minus `native_ns`, the no-filter
    /// run of the same call.
    pub fn kernel_filter_cost(&self, native_ns: Option<f64>) -> Option<f64> {
        if let Some(cost) = &self.kernel_cost {
            return Some(cost.median);
        }
        match &self.forced {
            Some(f) => Some(f.cell.ns()? - self.ns(KERNEL)?),
            None => Some(self.ns(KERNEL)? - native_ns?),
        }
    }

    /// The kernel's time with the filters actually running: the forced
    /// variant where the cache would skip them, else the kernel cell.
    pub fn kernel_running_ns(&self) -> Option<f64> {
        match &self.forced {
            Some(f) => f.cell.ns(),
            None => self.ns(KERNEL),
        }
    }
}

/// One table's results.
#[derive(Debug, Clone, PartialEq)]
pub struct TableResult {
    /// Which table.
    pub id: TableId,
    /// Rows in published order.
    pub rows: Vec<RowResult>,
}

impl TableResult {
    /// The row with this ID.
    pub fn row(&self, id: &str) -> Option<&RowResult> {
        self.rows.iter().find(|r| r.id == id)
    }
}

/// Conversion cost of one filter against the kernel's attach.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// Filter name.
    pub filter: String,
    /// Classic instructions.
    pub insns: usize,
    /// eBPF instructions after conversion.
    pub ebpf_insns: usize,
    /// `cbpf::validate` (seccomp mode), ns.
    pub validate: Stats,
    /// `convert::convert`, ns.
    pub convert: Stats,
    /// `seccomp(SECCOMP_SET_MODE_FILTER)` in the kernel, ns (validate,
    /// convert, JIT, cache bitmap).
    pub attach: Cell,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Machine, compiler, revision.
    pub machine: Machine,
    /// Extra header lines (mode, sysctls, kernel availability).
    pub notes: Vec<String>,
    /// The tables measured, in order.
    pub tables: Vec<TableResult>,
    /// Conversion vs attach, per filter.
    pub conversions: Vec<Conversion>,
    /// The filter-length sweep ([`crate::tables::length_sweep`]); empty when not run.
    pub sweep: Vec<RowResult>,
}

impl Report {
    /// The results of one table, if it was run.
    pub fn table(&self, id: TableId) -> Option<&TableResult> {
        self.tables.iter().find(|t| t.id == id)
    }
}

/// Column names: every in-process engine, the kernel's JIT, then the kernel.
pub fn columns() -> Vec<&'static str> {
    ENGINES.iter().map(|e| e.name).chain([KERNEL_JIT, KERNEL]).collect()
}

/// Formats nanoseconds with a precision that suits their size.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        "?".to_string()
    } else if ns.abs() < 10.0 {
        format!("{ns:.2}")
    } else if ns.abs() < 100.0 {
        format!("{ns:.1}")
    } else {
        format!("{ns:.0}")
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{r:.2}x"),
        _ => "—".to_string(),
    }
}

fn ratio(num: Option<f64>, den: Option<f64>) -> Option<f64> {
    match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    }
}

/// Collects "n/a" reasons as numbered footnotes.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn mark(&mut self, why: &str) -> usize {
        match self.0.iter().position(|w| w == why) {
            Some(i) => i + 1,
            None => {
                self.0.push(why.to_string());
                self.0.len()
            }
        }
    }
}

const CHILD_CPU_MARK: &str = "†";

fn fmt_cell(cell: &Cell, engine: &str, notes: &mut Notes) -> String {
    match cell {
        Cell::Measured { stats, clock } => {
            let mark = if *clock == Some(Clock::ChildCpuDifference) { CHILD_CPU_MARK } else { "" };
            format!("{}{mark} ({}–{})", fmt_ns(stats.median), fmt_ns(stats.min), fmt_ns(stats.max))
        }
        Cell::Skipped => "—".to_string(),
        Cell::Unavailable(why) => format!("n/a [{}]", notes.mark(&format!("{engine}: {why}"))),
    }
}

/// The whole report as Markdown.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let m = &report.machine;
    let _ = writeln!(out, "# bpfconv benchmarks: the four published seccomp tables\n");
    let _ = writeln!(out, "- machine: {}", m.machine);
    let _ = writeln!(out, "- rustc: {}", m.rustc);
    let _ = writeln!(out, "- git: {}", m.git);
    for note in &report.notes {
        let _ = writeln!(out, "- {note}");
    }
    let _ = writeln!(
        out,
        "\nCells: median nanoseconds per filter evaluation (kernel: per system call, filter installed), \
         with the fastest and slowest sample in parentheses. `—`: not applicable; `n/a [k]`: see note k.\n\
         Engines: {}; `kernel-jit`: the filter alone in the running kernel's JIT (its loadable conversion behind a \
         tc harness, `BPF_PROG_TEST_RUN`, N copies of the filter per test run: 32 for short filters, fewer for \
         long ones): the kernel's own mean ns per test run (whole ns) over measurements of at least 1 ms, minus \
         the same harness around `r0 = 0` copies in the same round, divided by N (stacks and the cache are not its \
         subject: n/a in Table C; a mix row's figure is the mean over at most {} of its vectors, every k-th); \
         `kernel`: the running kernel, filters as written (its constant-action cache may skip them); \
         `kernel, forced`: the same filters with `ld [16]` prepended so the cache cannot skip them. \
         {CHILD_CPU_MARK}: timed by child CPU time (2N calls minus N calls) because the filter kills `clock_gettime`. \
         `mix` rows (`<row>_mix` in JSON): the row's filter on every vector of its testdata `.vectors.jsonl` in turn \
         (files longer than {} lines: every k-th line), median nanoseconds per evaluation over the whole cycle; \
         `path` is the mean classic path; the kernel column cannot run a mix.",
        ENGINES.iter().map(|e| format!("`{}` = {}", e.name, e.about)).collect::<Vec<_>>().join(", "),
        crate::tables::KERNEL_JIT_MIX_MAX,
        crate::tables::MIX_MAX,
    );
    for table in &report.tables {
        out.push('\n');
        out.push_str(&table_markdown(table));
    }
    if !report.sweep.is_empty() {
        let _ = writeln!(
            out,
            "\n## Filter length sweep (plotted in length.svg)\n\n\
             Synthetic allow-lists that check getppid last; the path covers every comparison.\n"
        );
        out.push_str(&rows_markdown(&report.sweep));
    }
    if !report.conversions.is_empty() || !report.tables.is_empty() {
        out.push('\n');
        out.push_str(&compass_markdown(report));
    }
    out
}

/// One table: the cells, its notes, then its derived figures.
pub fn table_markdown(table: &TableResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", table.id.title());
    let _ = writeln!(out, "{}\n", table.id.published());
    let _ = writeln!(out, "{}\n", table.id.workload());
    out.push_str(&rows_markdown(&table.rows));
    out.push('\n');
    out.push_str(&match table.id {
        TableId::A => derived_a(table),
        TableId::B => derived_b(table),
        TableId::C => derived_c(table),
        TableId::D => derived_d(table),
    });
    out
}

/// Rows as a Markdown table, one column per engine, then the notes.
pub fn rows_markdown(rows: &[RowResult]) -> String {
    let mut out = String::new();
    let mut notes = Notes::default();
    let cols = columns();
    let _ = write!(out, "| row | call | insns | path |");
    for c in &cols {
        let _ = write!(out, " {c} |");
    }
    let _ = writeln!(out, " kernel, forced |");
    let _ = writeln!(out, "|---|---|---:|---:|{}---:|", "---:|".repeat(cols.len()));
    for row in rows {
        let insns = row.insns.map_or("—".to_string(), |n| n.to_string());
        let _ = write!(out, "| {} | {} | {insns} | {} |", row.label, row.syscall, row.path);
        for (engine, cell) in &row.cells {
            let _ = write!(out, " {} |", fmt_cell(cell, engine, &mut notes));
        }
        let forced = match &row.forced {
            Some(f) => fmt_cell(&f.cell, "kernel, forced", &mut notes),
            None => "—".to_string(),
        };
        let _ = writeln!(out, " {forced} |");
    }
    if !notes.0.is_empty() {
        out.push('\n');
        for (i, why) in notes.0.iter().enumerate() {
            let _ = writeln!(out, "[{}] {why}  ", i + 1);
        }
    }
    out
}

/// A derived-figures table: one line per figure, one column per engine.
fn figure_table(title: &str, lines: &[(&str, &str, Vec<Option<f64>>)]) -> String {
    let cols = columns();
    let mut out = format!("{title}\n\n| figure | published |");
    for c in &cols {
        let _ = write!(out, " {c} |");
    }
    let _ = writeln!(out, "\n|---|---:|{}", "---:|".repeat(cols.len()));
    for (name, published, values) in lines {
        let _ = write!(out, "| {name} | {published} |");
        for v in values {
            let _ = write!(out, " {} |", fmt_ratio(*v));
        }
        out.push('\n');
    }
    out
}

/// `num / den` per column, where the kernel column uses the filter cost
/// ([`RowResult::kernel_filter_cost`]).
fn per_column(table: &TableResult, num: &str, den: &str, kernel_native: (&str, &str)) -> Vec<Option<f64>> {
    let (Some(n), Some(d)) = (table.row(num), table.row(den)) else {
        return vec![None; columns().len()];
    };
    columns()
        .into_iter()
        .map(|c| {
            if c == KERNEL {
                let base_n = table.row(kernel_native.0).and_then(|r| r.ns(KERNEL));
                let base_d = table.row(kernel_native.1).and_then(|r| r.ns(KERNEL));
                ratio(n.kernel_filter_cost(base_n), d.kernel_filter_cost(base_d))
            } else {
                ratio(n.ns(c), d.ns(c))
            }
        })
        .collect()
}

const KERNEL_COST_NOTE: &str = "Derived (kernel column: filter cost = forced run − cached run of the same call, \
     both on one clock; where the cache does not apply, run − no-filter run; each the median over rounds of the \
     difference within one round):";

fn derived_a(t: &TableResult) -> String {
    let n = ("native", "native");
    figure_table(
        KERNEL_COST_NOTE,
        &[
            ("slow / fast", "4.2 no JIT (1.688/0.406), 1.3 JIT (0.480/0.365)", per_column(t, "slow", "fast", n)),
            ("slow, binary tree / fast", "—", per_column(t, "slow_opt2", "fast", n)),
            ("slow / slow, binary tree", "—", per_column(t, "slow", "slow_opt2", n)),
        ],
    )
}

fn derived_b(t: &TableResult) -> String {
    // (figure, published, row, (numerator column, denominator column)).
    let speed_ups = [
        ("eBPF speed-up over cBPF, short (cbpf / ebpf)", "1.05x (2.7/2.58)", "short", ("cbpf", "ebpf")),
        ("eBPF speed-up over cBPF, large (cbpf / ebpf)", "1.51x (8.6/5.7)", "large", ("cbpf", "ebpf")),
        ("eBPF speed-up over cBPF, large binary tree", "—", "large_opt2", ("cbpf", "ebpf")),
        (
            "plain eBPF speed-up over plain cBPF, short (cbpf-plain / ebpf-plain)",
            "1.05x (2.7/2.58)",
            "short",
            ("cbpf-plain", "ebpf-plain"),
        ),
        (
            "plain eBPF speed-up over plain cBPF, large (cbpf-plain / ebpf-plain)",
            "1.51x (8.6/5.7)",
            "large",
            ("cbpf-plain", "ebpf-plain"),
        ),
    ];
    let mut out = String::from("Derived:\n\n| figure | published (x86_64) | ours |\n|---|---:|---:|\n");
    for (figure, published, row, (num, den)) in speed_ups {
        let ns = |column: &str| t.row(row).and_then(|r| r.ns(column));
        let _ = writeln!(out, "| {figure} | {published} | {} |", fmt_ratio(ratio(ns(num), ns(den))));
    }
    out.push('\n');
    out.push_str(&figure_table(
        KERNEL_COST_NOTE,
        &[
            (
                "large / short",
                "3.2x cBPF (8.6/2.7), 2.2x eBPF (5.7/2.58)",
                per_column(t, "large", "short", ("native_chdir", "native_brk")),
            ),
            ("large / large, binary tree", "—", per_column(t, "large", "large_opt2", ("native_chdir", "native_chdir"))),
        ],
    ));
    out
}

fn derived_d(t: &TableResult) -> String {
    let n = ("native", "native");
    let mut out = figure_table(
        KERNEL_COST_NOTE,
        &[
            (
                "end / front",
                "18x filter cost ((2452−620)/(722−620)); 3.4x per call (2452/722)",
                per_column(t, "end", "front", n),
            ),
            ("middle / front", "7.5x filter cost; 1.9x per call", per_column(t, "middle", "front", n)),
            ("binary tree / front", "hash map: 1.8x filter cost; 1.1x per call", per_column(t, "opt2", "front", n)),
        ],
    );
    let per_call = ratio(
        t.row("end").and_then(RowResult::kernel_running_ns),
        t.row("front").and_then(RowResult::kernel_running_ns),
    );
    let _ = writeln!(out, "\nKernel, whole system call end / front (forced): {}", fmt_ratio(per_call));
    let chdir = ("native_chdir", "native_chdir");
    out.push('\n');
    out.push_str(&figure_table(
        "One level down, chdir at the first, middle and last of long_jumps_large's argument rules (kernel column: \
         filter cost = run − no-filter chdir of the same round, median over rounds):",
        &[
            ("as written: last / first rule", "—", per_column(t, "ljl_end", "ljl_front", chdir)),
            (
                "as written: max / min over first, middle, last",
                "—",
                spread(t, &["ljl_front", "ljl_middle", "ljl_end"], "native_chdir"),
            ),
            (
                "optimised: max / min over first, middle, last",
                "flat (goal <= 1.2)",
                spread(t, &["ljl_front_optimised", "ljl_middle_optimised", "ljl_end_optimised"], "native_chdir"),
            ),
        ],
    ));
    let whole = |ids: [&str; 3]| {
        let ns: Option<Vec<f64>> = ids.iter().map(|id| t.row(id).and_then(RowResult::kernel_running_ns)).collect();
        ns.and_then(|ns| {
            let max = ns.iter().copied().fold(f64::MIN, f64::max);
            let min = ns.iter().copied().fold(f64::MAX, f64::min);
            ratio(Some(max), Some(min))
        })
    };
    let _ = writeln!(
        out,
        "\nKernel, whole chdir call, max / min over first, middle, last rule: as written {}, optimised {}",
        fmt_ratio(whole(["ljl_front", "ljl_middle", "ljl_end"])),
        fmt_ratio(whole(["ljl_front_optimised", "ljl_middle_optimised", "ljl_end_optimised"])),
    );
    let costs = |ids: [&str; 3]| {
        let native = t.row("native_chdir").and_then(|r| r.ns(KERNEL));
        let ns = ids.map(|id| t.row(id).and_then(|r| r.kernel_filter_cost(native)).map_or("?".to_string(), fmt_ns));
        ns.join(" / ")
    };
    let _ = writeln!(
        out,
        "Kernel filter cost, ns, first / middle / last rule: as written {}, optimised {}",
        costs(["ljl_front", "ljl_middle", "ljl_end"]),
        costs(["ljl_front_optimised", "ljl_middle_optimised", "ljl_end_optimised"]),
    );
    out
}

/// Per column, the largest over the smallest figure of `ids` (the kernel
/// column: filter cost, the run less the `native` row's).
fn spread(table: &TableResult, ids: &[&str], native: &str) -> Vec<Option<f64>> {
    columns()
        .into_iter()
        .map(|c| {
            let figures: Option<Vec<f64>> = ids
                .iter()
                .map(|id| {
                    let row = table.row(id)?;
                    if c == KERNEL {
                        row.kernel_filter_cost(table.row(native).and_then(|r| r.ns(KERNEL)))
                    } else {
                        row.ns(c)
                    }
                })
                .collect();
            let figures = figures?;
            let max = figures.iter().copied().fold(f64::MIN, f64::max);
            let min = figures.iter().copied().fold(f64::MAX, f64::min);
            ratio(Some(max), Some(min))
        })
        .collect()
}

/// `approx()` of seccomp_benchmark.c (Linux 6.18): equal, or within 10 %
/// or `slack` either way (the kernel's slack is 2 ns).
fn approx(one: f64, two: f64, slack: f64) -> bool {
    let one_bump = one + (one * 0.1).max(slack);
    let two_bump = two + (two * 0.1).max(slack);
    one == two || (one > two && one <= two_bump) || (two > one && two <= one_bump)
}

/// seccomp_benchmark's estimates and expectation lines for one column.
/// Mirrors the tail of `main()` in
/// tools/testing/selftests/seccomp/seccomp_benchmark.c (Linux 6.18).
///
/// # Deviations
/// Values are fractional nanoseconds (the kernel truncates to integers);
/// in-process engines use a 0.2 ns slack in `≈` instead of 2 ns, since
/// their evaluations are about a hundred times cheaper than a system call.
pub fn seccomp_benchmark_lines(values: [f64; 5], slack: f64) -> String {
    let [native, bitmap1, bitmap2, filter1, filter2] = values;
    let mut out = String::new();
    let mut skip = false;
    let mut estimate = |out: &mut String, what: &str, v: f64| {
        let _ = writeln!(out, "Estimated {what}: {} ns", fmt_ns(v));
        if v < 0.0 {
            skip = true;
        }
        v
    };
    estimate(&mut out, "total seccomp overhead for 1 bitmapped filter", bitmap1 - native);
    estimate(&mut out, "total seccomp overhead for 2 bitmapped filters", bitmap2 - native);
    estimate(&mut out, "total seccomp overhead for 3 full filters", filter1 - native);
    estimate(&mut out, "total seccomp overhead for 4 full filters", filter2 - native);
    let entry = estimate(&mut out, "seccomp entry overhead", bitmap1 - native - (bitmap2 - bitmap1));
    let per_filter1 = estimate(&mut out, "seccomp per-filter overhead (last 2 diff)", filter2 - filter1);
    let per_filter2 = estimate(&mut out, "seccomp per-filter overhead (filters / 4)", (filter2 - native - entry) / 4.0);
    let _ = writeln!(out, "Expectations:");
    let mut failed = false;
    let mut compare = |out: &mut String, skip: bool, a: &str, op: &str, b: &str, x: f64, y: f64| -> bool {
        if skip {
            let _ = writeln!(out, "\t{a} {op} {b}: skipped");
            return true;
        }
        let good = if op == "≤" { x <= y } else { approx(x, y, slack) };
        let _ = writeln!(out, "\t{a} {op} {b} ({} {op} {}): {}", fmt_ns(x), fmt_ns(y), if good { "✔" } else { "✘" });
        failed |= !good;
        good
    };
    compare(&mut out, skip, "native", "≤", "1 bitmap", native, bitmap1);
    if !compare(&mut out, skip, "native", "≤", "1 filter", native, filter1) {
        skip = true;
    }
    compare(&mut out, skip, "per-filter (last 2 diff)", "≈", "per-filter (filters / 4)", per_filter1, per_filter2);
    if !compare(&mut out, skip, "1 bitmapped", "≈", "2 bitmapped", bitmap1 - native, bitmap2 - native) && !skip {
        let _ = writeln!(out, "Skipping constant action bitmap expectations: they appear unsupported.");
        skip = true;
    }
    compare(&mut out, skip, "entry", "≈", "1 bitmapped", entry, bitmap1 - native);
    compare(&mut out, skip, "entry", "≈", "2 bitmapped", entry, bitmap2 - native);
    compare(
        &mut out,
        skip,
        "native + entry + (per filter * 4)",
        "≈",
        "4 filters total",
        entry + per_filter1 * 4.0 + native,
        filter2,
    );
    if failed || skip {
        let _ = writeln!(out, "Saw unexpected benchmark result. Try running again with more samples?");
    }
    out
}

fn derived_c(t: &TableResult) -> String {
    let mut out = String::from(
        "Derived, as seccomp_benchmark prints it, per column (in-process engines evaluate the stack with the \
         kernel's rules; their `native` is an empty stack):\n",
    );
    for c in columns() {
        let values: Option<Vec<f64>> =
            ["native", "bitmap1", "bitmap2", "filter1", "filter2"].iter().map(|r| t.row(r)?.ns(c)).collect();
        let Some(&[a, b, cc, d, e]) = values.as_deref() else {
            continue;
        };
        let slack = if c == KERNEL { 2.0 } else { 0.2 };
        let _ = writeln!(out, "\n`{c}`:\n```\n{}```", seccomp_benchmark_lines([a, b, cc, d, e], slack));
    }
    out
}

/// A goal line: `ratio` against a minimum.
fn goal_line(out: &mut String, what: &str, r: Option<f64>, goal: Option<f64>) {
    let verdict = match (r, goal) {
        (Some(r), Some(g)) if r >= g => format!("✔ (goal ≥ {g}x)"),
        (Some(_), Some(g)) => format!("✘ (goal ≥ {g}x)"),
        (None, Some(g)) => format!("not measured (goal ≥ {g}x)"),
        _ => String::new(),
    };
    let _ = writeln!(out, "| {what} | {} | {verdict} |", fmt_ratio(r));
}

/// The compass: ratios that say whether our engines are where we want them.
pub fn compass_markdown(report: &Report) -> String {
    let mut out = String::from("## Compass\n\n| ratio | value | goal |\n|---|---:|---|\n");
    let b = report.table(TableId::B);
    let cell = |row: &str, engine: &str| b.and_then(|t| t.row(row)).and_then(|r| r.ns(engine));
    for (row, name, ebpf_goal, cbpf_goal) in [("short", "short", 10.0, 10.0), ("large", "large", 7.0, 5.0)] {
        goal_line(
            &mut out,
            &format!("rbpf interpreter / our eBPF interpreter, {name} filter (Table B)"),
            ratio(cell(row, "rbpf"), cell(row, "ebpf")),
            Some(ebpf_goal),
        );
        goal_line(
            &mut out,
            &format!("rbpf interpreter / our cBPF interpreter, {name} filter (Table B)"),
            ratio(cell(row, "rbpf"), cell(row, "cbpf")),
            Some(cbpf_goal),
        );
    }
    goal_line(
        &mut out,
        "our cBPF / our eBPF, large filter (published 1.51x)",
        ratio(cell("large", "cbpf"), cell("large", "ebpf")),
        None,
    );
    for conv in &report.conversions {
        goal_line(
            &mut out,
            &format!("kernel attach / our conversion, {} ({} insns)", conv.filter, conv.insns),
            ratio(conv.attach.ns(), Some(conv.convert.median)),
            Some(10.0),
        );
    }
    if !report.conversions.is_empty() {
        let _ = writeln!(
            out,
            "\nConversion (median ns, range) vs the kernel's `seccomp(SECCOMP_SET_MODE_FILTER)` (validate, convert, \
             JIT, cache bitmap; wall time in a fresh child):\n\n\
             | filter | cBPF insns | eBPF insns | validate | convert | validate + convert | kernel attach | attach / convert |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|"
        );
        let mut notes = Notes::default();
        for c in &report.conversions {
            let range = |s: &Stats| format!("{} ({}–{})", fmt_ns(s.median), fmt_ns(s.min), fmt_ns(s.max));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                c.filter,
                c.insns,
                c.ebpf_insns,
                range(&c.validate),
                range(&c.convert),
                fmt_ns(c.validate.median + c.convert.median),
                fmt_cell(&c.attach, KERNEL, &mut notes),
                fmt_ratio(ratio(c.attach.ns(), Some(c.convert.median))),
            );
        }
        for (i, why) in notes.0.iter().enumerate() {
            let _ = writeln!(out, "\n[{}] {why}", i + 1);
        }
    }
    out
}

/// One JSON cell of FORMATS.md §5, plus the range and, for the kernel, the clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonCell {
    pub table: String,
    pub row: String,
    pub filter: String,
    pub engine: String,
    pub ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub samples: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<&'static str>,
}

/// Conversion against attach for one filter (an extension of FORMATS.md §5).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonConversion {
    pub filter: String,
    pub insns: usize,
    pub ebpf_insns: usize,
    pub validate_ns: f64,
    pub convert_ns: f64,
    /// `None` where the kernel column was unavailable.
    pub attach_ns: Option<f64>,
}

/// The JSON document of FORMATS.md §5.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonReport {
    pub machine: String,
    pub rustc: String,
    pub git: String,
    pub cells: Vec<JsonCell>,
    pub conversions: Vec<JsonConversion>,
}

/// Every measured cell. Forced kernel runs are rows `<row>-forced` with
/// filter `<name>+ld16`; the length sweep is table `length`. Conversion
/// timings go to `conversions`, outside `cells`, whose engines stay the
/// `bpfconv run` engine names.
pub fn json(report: &Report) -> JsonReport {
    let mut cells = Vec::new();
    let mut push_rows = |table: &str, rows: &[RowResult]| {
        let mut push = |row: &str, filter: &str, engine: &str, cell: &Cell| {
            if let Cell::Measured { stats, clock } = cell {
                cells.push(JsonCell {
                    table: table.to_string(),
                    row: row.to_string(),
                    filter: filter.to_string(),
                    engine: engine.to_string(),
                    ns: stats.median,
                    min_ns: stats.min,
                    max_ns: stats.max,
                    samples: stats.samples,
                    clock: clock.map(Clock::name),
                });
            }
        };
        for r in rows {
            for (engine, cell) in &r.cells {
                push(&r.id, &r.filter, engine, cell);
            }
            if let Some(f) = &r.forced {
                push(&format!("{}-forced", r.id), &f.filter, KERNEL, &f.cell);
            }
        }
    };
    for t in &report.tables {
        push_rows(t.id.letter(), &t.rows);
    }
    push_rows("length", &report.sweep);
    let conversions = report
        .conversions
        .iter()
        .map(|c| JsonConversion {
            filter: c.filter.clone(),
            insns: c.insns,
            ebpf_insns: c.ebpf_insns,
            validate_ns: c.validate.median,
            convert_ns: c.convert.median,
            attach_ns: c.attach.ns(),
        })
        .collect();
    JsonReport {
        machine: report.machine.machine.clone(),
        rustc: report.machine.rustc.clone(),
        git: report.machine.git.clone(),
        cells,
        conversions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_matches_seccomp_benchmark() {
        assert!(approx(646.0, 675.0, 2.0)); // within 10 %
        assert!(!approx(100.0, 120.0, 2.0));
        assert!(approx(1.0, 2.9, 2.0)); // within 2 ns
        assert!(approx(5.0, 5.0, 0.2));
    }

    /// `text` has every line of `wants` (as a substring).
    fn contains_all(text: &str, wants: &[&str]) {
        for want in wants {
            assert!(text.contains(want), "no {want:?} in:\n{text}");
        }
    }

    #[test]
    fn published_table_c_passes_its_own_expectations() {
        // The published run: 646, 675, 675, 732, 752.
        let text = seccomp_benchmark_lines([646.0, 675.0, 675.0, 732.0, 752.0], 2.0);
        contains_all(
            &text,
            &[
                "Estimated seccomp entry overhead: 29.0 ns",
                "Estimated seccomp per-filter overhead (last 2 diff): 20.0 ns",
                "native ≤ 1 bitmap (646 ≤ 675): ✔",
                "1 bitmapped ≈ 2 bitmapped (29.0 ≈ 29.0): ✔",
            ],
        );
        // per-filter 20 vs (752-646-29)/4 = 19.25: approx; total 646+29+80 = 755 ≈ 752.
        assert!(!text.contains('✘'), "{text}");
        assert!(!text.contains("unexpected"), "{text}");
    }

    #[test]
    fn a_missing_bitmap_effect_skips_the_cache_expectations() {
        // bitmap2 far above bitmap1: the cache is not working.
        let text = seccomp_benchmark_lines([600.0, 650.0, 700.0, 750.0, 800.0], 2.0);
        contains_all(
            &text,
            &["they appear unsupported", "entry ≈ 1 bitmapped: skipped", "Saw unexpected benchmark result"],
        );
    }

    #[test]
    fn json_has_the_formats_fields() {
        let stats = Stats { median: 2.0, min: 1.0, max: 3.0, samples: 3 };
        let report = Report {
            machine: Machine { machine: "m".into(), rustc: "r".into(), git: "g".into() },
            notes: vec![],
            tables: vec![TableResult {
                id: TableId::B,
                rows: vec![RowResult {
                    id: "large".into(),
                    label: "large".into(),
                    filter: "long_jumps_large".into(),
                    syscall: "chdir(0, 1)".into(),
                    insns: Some(1219),
                    path: 315,
                    kernel_cached: false,
                    cells: vec![
                        ("ebpf".into(), Cell::Measured { stats, clock: None }),
                        ("fast".into(), Cell::Unavailable("later".into())),
                    ],
                    forced: None,
                    kernel_cost: None,
                }],
            }],
            conversions: vec![],
            sweep: vec![],
        };
        let v = serde_json::to_value(json(&report)).unwrap();
        assert_eq!(v["machine"], "m");
        assert_eq!(v["cells"].as_array().unwrap().len(), 1);
        let cell = &v["cells"][0];
        assert_eq!(
            (&cell["table"], &cell["row"], &cell["filter"], &cell["engine"], &cell["ns"]),
            (&"B".into(), &"large".into(), &"long_jumps_large".into(), &"ebpf".into(), &2.0.into())
        );
        let md = markdown(&report);
        assert!(md.contains("n/a [1]") && md.contains("[1] fast: later"), "{md}");
    }
}
