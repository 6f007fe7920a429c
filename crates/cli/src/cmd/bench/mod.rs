//! `bpfconv bench`: what the user's own filter costs, per input, on every
//! engine and in the running kernel (FORMATS-EXTENSIONS.md, "bench").
//!
//! ```text
//! filter ─► inputs (one per syscall the filter names, per arch it names;
//!           or --vectors / --nr; socket: the packets of --pcap)
//!        ─► every result checked against the classic interpreter
//!        ─► rounds: each round times every (input, engine) cell once, so
//!           drift hits all engines alike; median, min, max over rounds
//!        ─► kernel-jit: the kernel's own ns per run of the filter in its JIT
//!           (BPF_PROG_TEST_RUN, N copies of the filter per test run),
//!           above the harness alone, divided by N
//!        ─► kernel: ns per syscall with the filter installed (forced past
//!           the constant-action cache, and as installed)
//!        ─► text table / JSON, SVG (timing::plot)
//! ```

//!
//! The pieces: `inputs` (what is timed: named syscalls, `--vectors`, the
//! deepest input), `seccomp` and `socket` (each engine checked against the
//! classic interpreter, then timed by `timing::rounds` through the engine
//! interface), `jit` (the running kernel's JIT: `kernel-jit`), `kernel` (the running kernel's figures), `report` (text,
//! JSON, SVG).

mod inputs;
mod jit;
mod kernel;
mod report;
mod seccomp;
mod socket;

use std::time::Duration;

use clap::{Args, ValueEnum};
use engine::{EngineKind, Prepared};
use timing::rounds::Grid;
use timing::stats::Stats;

use crate::cmd::run::SingleInputArgs;
use crate::fail::{Failure, Result};
use crate::io::FileArgs;
use crate::out::{outln, Out};
use crate::ModeArg;

/// Output of `bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum BenchFormat {
    /// A table: one line per input, one column per engine.
    #[default]
    Text,
    /// One JSON document (FORMATS-EXTENSIONS.md).
    Json,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Kernel entry point the filter is for.
    #[arg(long, value_enum, default_value_t)]
    mode: ModeArg,
    /// Seccomp: time these inputs (JSON Lines, FORMATS.md §2) instead of one per syscall the filter names.
    #[arg(long, conflicts_with_all = ["nr", "pcap"])]
    vectors: Option<String>,
    #[command(flatten)]
    input: SingleInputArgs,
    /// Socket: time the filter on the packets of this pcap capture (the first 64).
    #[arg(long)]
    pcap: Option<String>,
    /// Comma-separated engines (default: every engine, the kernel included).
    #[arg(long)]
    engines: Option<String>,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: BenchFormat,
    /// Also draw cost per input and engine to this SVG file.
    #[arg(long)]
    svg: Option<String>,
    /// Seconds of timing for the in-process engines (the kernel takes about as long again).
    #[arg(long, default_value = "2")]
    time: f64,
}

/// Most inputs a run times (vectors past it are refused).
const MAX_INPUTS: usize = 4096;
/// Most packets of a capture a socket run times.
const MAX_PACKETS: usize = 64;
/// Timing rounds (each a sample of every cell); fewer when `--time` is short.
const ROUNDS: usize = 11;
/// The shortest sample.
const MIN_SAMPLE: Duration = Duration::from_micros(2);
/// The kernel column's name for the filter forced past the cache.
const KERNEL_FORCED: &str = "kernel-forced";

/// One input with what the classic interpreter says of it.
#[derive(Debug, Clone)]
struct Input {
    name: String,
    /// The seccomp input (socket runs: unused).
    data: cbpf::SeccompData,
    /// The packet (socket runs).
    packet: Vec<u8>,
    /// The classic interpreter's result.
    ret: u32,
    cbpf_path: u64,
    ebpf_path: u64,
    /// Classic instructions `bpfconv optimize`'s output runs on it (seccomp
    /// runs, when the filter was optimised).
    optimized_path: Option<u64>,
}

/// A timed figure, or why there is none.
#[derive(Debug, Clone)]
enum Cell {
    Measured(Stats),
    Unavailable(String),
}

/// One engine column: its name and one cell per input (then one for the mix).
#[derive(Debug)]
struct Column {
    name: String,
    cells: Vec<Cell>,
    /// Kernel columns: whether the kernel's cache skips the filter, per input.
    cached: Vec<Option<bool>>,
}

/// What a run measured.
#[derive(Debug)]
struct Results {
    file: String,
    mode: cbpf::Mode,
    insns: usize,
    ebpf_insns: usize,
    inputs: Vec<Input>,
    deepest: usize,
    rounds: usize,
    columns: Vec<Column>,
    /// The kernel's cost of a cached call (ns), when measured.
    cache_hit: Option<Cell>,
    kernel_iterations: u64,
    /// `kernel-jit`'s rounds, the harness's own cost and the copies per
    /// test run, when measured.
    jit: Option<jit::JitSummary>,
    /// Instructions of `bpfconv optimize`'s output, when there is one.
    optimized_insns: Option<usize>,
    /// What form the `fast` engine timed, when it ran.
    fast: Option<FastForm>,
    /// The in-process engines' timing loop around a call that does no work
    /// (ns per evaluation, seccomp mode), when any of them ran.
    call_floor: Option<Stats>,
}

/// The `fast` engine's argument-check trees as timed: their switches, and
/// whether they ran as native code (its size) or were walked as tables
/// (the host's refusal).
#[derive(Debug, Clone)]
struct FastForm {
    switches: usize,
    native_code_bytes: usize,
    native_refusal: Option<String>,
}

impl FastForm {
    fn of(fast: &::seccomp::fast::FastFilter) -> FastForm {
        let stats = fast.stats();
        FastForm {
            switches: stats.switches,
            native_code_bytes: stats.native_code_bytes,
            native_refusal: fast.native_refusal().map(str::to_string),
        }
    }
}

impl Results {
    /// The results of one run, without kernel figures; the filter's mode
    /// and both instruction counts come from `prepared`.
    fn new(
        args: &BenchArgs,
        prepared: &Prepared,
        inputs: Vec<Input>,
        deepest: usize,
        rounds: usize,
        columns: Vec<Column>,
    ) -> Results {
        Results {
            file: args.source.file.clone(),
            mode: prepared.program().mode(),
            insns: prepared.program().len(),
            ebpf_insns: prepared.converted().insns.len(),
            inputs,
            deepest,
            rounds,
            columns,
            cache_hit: None,
            kernel_iterations: 0,
            jit: None,
            optimized_insns: None,
            fast: None,
            call_floor: None,
        }
    }
}

/// `bpfconv bench`.
pub fn bench(args: &BenchArgs) -> Result<i32> {
    if !(args.time.is_finite() && args.time > 0.0 && args.time <= 3600.0) {
        return Err(Failure::usage(format!("--time {}: give seconds in (0, 3600]", args.time)));
    }
    let kinds = engine_list(args.engines.as_deref())?;
    let insns = args.source.read()?;
    let prog = cbpf::validate(&insns, args.mode.mode())?;
    let prepared = Prepared::new(prog)?;
    let results = match args.mode {
        ModeArg::Seccomp => seccomp::bench_seccomp(args, &kinds, &prepared)?,
        ModeArg::Socket => socket::bench_socket(args, &kinds, &prepared)?,
    };
    let mut out = Out::stdout();
    match args.format {
        BenchFormat::Text => out.write_all(report::text(&results).as_bytes())?,
        BenchFormat::Json => outln!(out, "{}", report::json(&results))?,
    }
    if let Some(path) = &args.svg {
        let svg = report::svg(&results).map_err(Failure::rejected)?;
        crate::io::write_atomic(std::path::Path::new(path), |f| std::io::Write::write_all(f, svg.as_bytes()))?;
    }
    out.finish()?;
    Ok(0)
}

/// `--engines`, or every engine.
fn engine_list(list: Option<&str>) -> Result<Vec<EngineKind>> {
    let Some(list) = list else { return Ok(EngineKind::ALL.to_vec()) };
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let kind: EngineKind = name.parse().map_err(Failure::usage)?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        return Err(Failure::usage("--engines: name at least one engine"));
    }
    Ok(kinds)
}

/// Inputs of slot `slot`: one input, or (the last slot) all of them, the mix.
fn slot_range(slot: usize, n: usize) -> std::ops::Range<usize> {
    if slot < n {
        slot..slot + 1
    } else {
        0..n
    }
}

/// An engine the rounds time batch by batch over inputs `I` made ready
/// once (seccomp: the `seccomp_data` bytes; socket: a `SocketBatch`).
trait Batched<I: ?Sized> {
    /// How many inputs `inputs` holds.
    fn count(inputs: &I) -> usize;
    /// `rounds` runs over the inputs in `range` (results are checked
    /// before timing, not here).
    fn run_range(&mut self, inputs: &mut I, range: std::ops::Range<usize>, rounds: u64);
}

impl Batched<[[u8; 64]]> for engine::SeccompEngine<'_> {
    fn count(datas: &[[u8; 64]]) -> usize {
        datas.len()
    }
    fn run_range(&mut self, datas: &mut [[u8; 64]], range: std::ops::Range<usize>, rounds: u64) {
        if let Some(view) = datas.get_mut(range) {
            let _ = self.run_batch(view, rounds);
        }
    }
}

impl<'b> Batched<engine::SocketBatch<'b>> for engine::SocketEngine {
    fn count(batch: &engine::SocketBatch<'b>) -> usize {
        batch.len()
    }
    fn run_range(&mut self, batch: &mut engine::SocketBatch<'b>, range: std::ops::Range<usize>, rounds: u64) {
        let _ = self.run_batch(batch, range, rounds);
    }
}

/// An engine, or why it could not be loaded.
type Lane<E> = (EngineKind, std::result::Result<E, String>);

/// The cells of a run: an engine per lane, an input per slot and the mix
/// of them all last.
struct Lanes<'l, E, I: ?Sized> {
    lanes: &'l mut [Lane<E>],
    inputs: &'l mut I,
}

impl<E: Batched<I>, I: ?Sized> Grid for Lanes<'_, E, I> {
    fn lanes(&self) -> usize {
        self.lanes.len()
    }

    fn slots(&self) -> usize {
        E::count(self.inputs) + 1
    }

    fn live(&self, lane: usize) -> bool {
        self.lanes.get(lane).is_some_and(|(_, engine)| engine.is_ok())
    }

    fn evals(&self, slot: usize) -> usize {
        slot_range(slot, E::count(self.inputs)).len()
    }

    fn run(&mut self, lane: usize, slot: usize, batch: u64) {
        let range = slot_range(slot, E::count(self.inputs));
        if let Some((_, Ok(engine))) = self.lanes.get_mut(lane) {
            engine.run_range(self.inputs, range, batch);
        }
    }
}

/// The input with the longest classic path (the first of equals).
fn deepest(inputs: &[Input]) -> usize {
    let mut best = 0;
    for (i, input) in inputs.iter().enumerate() {
        if inputs.get(best).is_some_and(|b| input.cbpf_path > b.cbpf_path) {
            best = i;
        }
    }
    best
}

/// The rounds the timing loop made (it stops early past `--time`,
/// `timing::rounds::interleaved_within`): the samples of a live cell, or
/// `planned` when no lane was live.
fn rounds_made(samples: &[Vec<Vec<f64>>], planned: usize) -> usize {
    samples.iter().flatten().map(Vec::len).find(|&n| n > 0).unwrap_or(planned)
}

/// The timing rounds of a run: each round times every cell once (each
/// live engine on each input, then on their mix), each for `sample`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Schedule {
    rounds: usize,
    sample: Duration,
    /// Cells per round.
    cells: usize,
}

impl Schedule {
    /// `time` seconds over `lanes` live engines and `inputs` inputs.
    fn new(time: f64, lanes: usize, inputs: usize) -> Schedule {
        let cells = lanes * (inputs + 1);
        let (rounds, sample) = plan(time, cells);
        Schedule { rounds, sample, cells }
    }

    /// The cells the rounds time: a progress bar's steps.
    fn steps(&self) -> u64 {
        (self.rounds * self.cells) as u64
    }
}

/// Rounds and sample length for `time` seconds over `cells` cells per round
/// (calibration costs about a fifth of a sample per cell more).
fn plan(time: f64, cells: usize) -> (usize, Duration) {
    let cells = cells.max(1) as f64;
    let mut rounds = ROUNDS;
    loop {
        let sample = Duration::from_secs_f64(time / (cells * (rounds as f64 + 0.3)));
        if sample >= MIN_SAMPLE * 5 || rounds <= 5 {
            return (rounds, sample.max(MIN_SAMPLE));
        }
        rounds -= 2;
    }
}

/// A kernel column's mix (`kernel`, `kernel-forced`, a socket filter's
/// `kernel-jit:` targets): the mean over the inputs the kernel timed of
/// their medians, minima and maxima (each input is timed on its own, so
/// there is no sample of them all together), with the fewest samples any
/// of them had.
fn kernel_mix(cells: &[Cell]) -> Cell {
    let measured: Vec<Stats> =
        cells.iter().filter_map(|c| if let Cell::Measured(s) = c { Some(*s) } else { None }).collect();
    if measured.is_empty() {
        return Cell::Unavailable("no input timed in the kernel".to_string());
    }
    let n = measured.len() as f64;
    Cell::Measured(Stats {
        median: measured.iter().map(|s| s.median).sum::<f64>() / n,
        min: measured.iter().map(|s| s.min).sum::<f64>() / n,
        max: measured.iter().map(|s| s.max).sum::<f64>() / n,
        samples: measured.iter().map(|s| s.samples).min().unwrap_or(0),
    })
}

/// A progress bar on stderr for runs expected to last over a second
/// (hidden when stderr is not a terminal).
fn progress(total: u64, seconds: f64) -> indicatif::ProgressBar {
    if seconds < 1.0 {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("bench {bar:40} {pos}/{len} cells, {elapsed} ({eta} left)")
    {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests;
