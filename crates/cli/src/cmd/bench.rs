//! `bpfconv bench`: what the user's own filter costs, per input, on every
//! engine and in the running kernel (FORMATS-EXTENSIONS.md, "bench").
//!
//! ```text
//! filter ─► inputs (one per syscall the filter names, per arch it names;
//!           or --vectors / --nr; socket: the packets of --pcap)
//!        ─► every result checked against the classic interpreter
//!        ─► rounds: each round times every (input, engine) cell once, so
//!           drift hits all engines alike; median, min, max over rounds
//!        ─► kernel: ns per syscall with the filter installed (forced past
//!           the constant-action cache, and as installed)
//!        ─► text table / JSON, SVG (timing::plot)
//! ```

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use engine::{EngineKind, Outcome, Prepared, SeccompEngine};
use serde_json::{json, Value};
use timing::stats::{calibrate, Stats};

use crate::cmd::run::{open_input, SingleInputArgs};
use crate::fail::{Failure, Result};
use crate::io::read_input;
use crate::io::FileArgs;
use crate::out::{outln, Out};
use crate::{pcap, ModeArg};

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
    /// Instructions of `bpfconv optimize`'s output, when there is one.
    optimized_insns: Option<usize>,
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
            optimized_insns: None,
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
        ModeArg::Seccomp => bench_seccomp(args, &kinds, &prepared)?,
        ModeArg::Socket => bench_socket(args, &kinds, &prepared)?,
    };
    let mut out = Out::stdout();
    match args.format {
        BenchFormat::Text => out.write_all(text(&results).as_bytes())?,
        BenchFormat::Json => outln!(out, "{}", json(&results))?,
    }
    if let Some(path) = &args.svg {
        let svg = svg(&results).map_err(Failure::rejected)?;
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

/// `arch:name` of a syscall (`x86_64:read`, `x32:read`, `aarch64:#500`).
fn input_name(arch: u32, nr: u32) -> String {
    use cbpf::uapi::x86_64::X32_SYSCALL_BIT;
    let a = seccomp::Arch::from_audit_arch(arch);
    let x32 = a == seccomp::Arch::X86_64
        && nr & X32_SYSCALL_BIT != 0
        && seccomp::syscalls::name(seccomp::Arch::X32, nr).is_some();
    let (shown, table) = if x32 { (seccomp::Arch::X32, seccomp::Arch::X32) } else { (a, a) };
    let arch_name = shown.name().map_or_else(|| format!("{arch:#x}"), str::to_string);
    match seccomp::syscalls::name(table, nr) {
        Some(n) => format!("{arch_name}:{n}"),
        None => format!("{arch_name}:#{}", nr as i32),
    }
}

/// The default inputs: for every arch the filter compares `arch` against
/// (x86_64 when none), one input per number it compares `nr` against
/// (`seccomp::analysis::compared_nrs`, the tests that define its classes
/// of numbers), arguments and instruction pointer 0.
fn named_inputs(prog: &cbpf::Program) -> Result<Vec<cbpf::SeccompData>> {
    use seccomp::analysis::{compared_arches, compared_nrs};
    let mut arches = compared_arches(prog).map_err(Failure::rejected)?;
    if arches.is_empty() {
        arches.push(cbpf::uapi::audit::AUDIT_ARCH_X86_64);
    }
    let mut out = Vec::new();
    for arch in arches {
        for nr in compared_nrs(prog, arch).map_err(Failure::rejected)? {
            out.push(cbpf::SeccompData { nr: nr as i32, arch, instruction_pointer: 0, args: [0; 6] });
            if out.len() >= MAX_INPUTS {
                return Ok(out);
            }
        }
    }
    if out.is_empty() {
        // A filter that never looks at `nr`: one input stands for all.
        out.push(cbpf::SeccompData {
            nr: 0,
            arch: cbpf::uapi::audit::AUDIT_ARCH_X86_64,
            instruction_pointer: 0,
            args: [0; 6],
        });
    }
    Ok(out)
}

/// The inputs of `--vectors`, named `line N`.
fn vector_inputs(path: &str, filter_from_stdin: bool) -> Result<Vec<(String, cbpf::SeccompData)>> {
    use std::io::BufRead;
    if path == "-" && filter_from_stdin {
        return Err(Failure::usage("the filter and --vectors cannot both be read from stdin (`-`)"));
    }
    let mut out = Vec::new();
    for (i, line) in open_input(path)?.lines().enumerate() {
        let line = line.map_err(crate::fail::io(format!("reading {path}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let v = engine::vectors::parse_line(line.trim_start_matches('\u{feff}'), i + 1)
            .map_err(|e| Failure::rejected(format!("{path}: {e}")))?;
        if out.len() >= MAX_INPUTS {
            return Err(Failure::rejected(format!("{path}: more than {MAX_INPUTS} vectors")));
        }
        out.push((format!("line {}", i + 1), v.data));
    }
    if out.is_empty() {
        return Err(Failure::rejected(format!("{path}: no vectors")));
    }
    Ok(out)
}

/// Path lengths and the classic interpreter's answer for a seccomp input.
fn seccomp_input(
    prepared: &Prepared,
    vm: &mut ebpf::Vm,
    ebpf: &ebpf::Program,
    name: String,
    data: cbpf::SeccompData,
) -> Result<Input> {
    let interp = cbpf::Interp::new(prepared.program());
    let bytes = data.to_bytes();
    let mut cbpf_path = 0u64;
    let ret = interp.trace_seccomp(&bytes, |_| cbpf_path += 1)?;
    vm.run_seccomp(ebpf, &bytes)?;
    Ok(Input { name, data, packet: Vec::new(), ret, cbpf_path, ebpf_path: vm.executed(), optimized_path: None })
}

/// `bpfconv optimize`'s output for the filter (proved equal, as that
/// command writes it) and, on each input, the classic instructions it
/// runs: the tree beside the filter as written. `None` (with a note on
/// stderr) when there is no output to show.
fn optimized_paths(prepared: &Prepared, inputs: &mut [Input]) -> Option<usize> {
    let out = match optimize::optimize(prepared.program(), &Default::default()) {
        Ok(out) if out.stats.kept_input.is_none() => out,
        Ok(out) => {
            eprintln!("note: no optimised paths: optimize keeps the input ({})", out.stats.kept_input?);
            return None;
        }
        Err(e) => {
            eprintln!("note: no optimised paths: {e}");
            return None;
        }
    };
    let interp = cbpf::Interp::new(&out.program);
    for input in inputs.iter_mut() {
        let mut path = 0u64;
        let ret = interp.trace_seccomp(&input.data.to_bytes(), |_| path += 1).ok()?;
        // Proved equal; a difference here would be a bug worth hiding nothing.
        if ret != input.ret {
            eprintln!("note: the optimised filter returns {ret:#010x} on {}", input.name);
            return None;
        }
        input.optimized_path = Some(path);
    }
    Some(out.program.len())
}

fn bench_seccomp(args: &BenchArgs, kinds: &[EngineKind], prepared: &Prepared) -> Result<Results> {
    if args.pcap.is_some() {
        return Err(Failure::usage("--pcap needs --mode socket"));
    }
    let chosen = args.vectors.is_some() || args.input.nr.is_some();
    let named: Vec<(String, cbpf::SeccompData)> = if let Some(path) = &args.vectors {
        vector_inputs(path, args.source.file == "-")?
    } else if args.input.nr.is_some() {
        let d = args.input.data()?;
        vec![(input_name(d.arch, d.nr as u32), d)]
    } else {
        named_inputs(prepared.program())?.into_iter().map(|d| (input_name(d.arch, d.nr as u32), d)).collect()
    };
    let ebpf_prog = engine::load_ebpf(prepared.converted())?;
    let mut vm = ebpf::Vm::new();
    let mut inputs: Vec<Input> =
        named.into_iter().map(|(n, d)| seccomp_input(prepared, &mut vm, &ebpf_prog, n, d)).collect::<Result<_>>()?;
    if !chosen {
        if let Some(d) = deepest_arguments(prepared.program(), &inputs) {
            let name = format!("{} deepest", input_name(d.arch, d.nr as u32));
            inputs.push(seccomp_input(prepared, &mut vm, &ebpf_prog, name, d)?);
        }
    }
    let deepest = deepest(&inputs);
    let optimized_insns = optimized_paths(prepared, &mut inputs);

    // Load and check every in-process engine on every input.
    let mut lanes: Vec<(EngineKind, std::result::Result<SeccompEngine<'_>, String>)> = Vec::new();
    for &kind in kinds.iter().filter(|&&k| k != EngineKind::Kernel) {
        let lane = match SeccompEngine::new(kind, prepared) {
            Ok(mut engine) => {
                for input in &inputs {
                    let got = engine
                        .eval_bytes(&mut input.data.to_bytes())
                        .map_err(|e| Failure::rejected(format!("engine {kind} fails on input {}: {e}", input.name)))?;
                    if got != input.ret {
                        return Err(Failure::rejected(format!(
                            "engine {kind} returns {got:#010x} on input {}, the classic interpreter {:#010x}",
                            input.name, input.ret
                        )));
                    }
                }
                Ok(engine)
            }
            Err(e) => Err(e.to_string()),
        };
        lanes.push((kind, lane));
    }
    let want_kernel = kinds.contains(&EngineKind::Kernel);
    let kernel_inputs = if want_kernel { kernel_check(prepared, &inputs) } else { Vec::new() };

    let mut datas: Vec<[u8; 64]> = inputs.iter().map(|i| i.data.to_bytes()).collect();
    let cells_per_round = lanes.iter().filter(|l| l.1.is_ok()).count() * (inputs.len() + 1);
    let (rounds, sample) = plan(args.time, cells_per_round);
    let kernel_tasks = kernel_inputs.iter().filter(|k| k.is_ok()).count() as u64 * 2 + u64::from(want_kernel) * 2;
    let bar = progress(
        (rounds * cells_per_round) as u64 + kernel_tasks,
        args.time + if want_kernel { args.time } else { 0.0 },
    );

    // Calibrate each cell, then time round by round.
    let slots = inputs.len() + 1;
    let mut batches: Vec<Vec<u64>> = Vec::with_capacity(lanes.len());
    for (_, lane) in lanes.iter_mut() {
        let mut per = vec![0u64; slots];
        if let Ok(engine) = lane {
            for (slot, b) in per.iter_mut().enumerate() {
                let range = slot_range(slot, datas.len());
                let Some(view) = datas.get_mut(range) else { continue };
                *b = calibrate(sample, &mut || {
                    let _ = engine.run_batch(view, 1);
                });
            }
        }
        batches.push(per);
    }
    let mut samples: Vec<Vec<Vec<f64>>> = vec![vec![Vec::with_capacity(rounds); slots]; lanes.len()];
    for _ in 0..rounds {
        for slot in 0..slots {
            for (li, (_, lane)) in lanes.iter_mut().enumerate() {
                let Ok(engine) = lane else { continue };
                let range = slot_range(slot, datas.len());
                let evals = range.len() as f64;
                let batch = batches.get(li).and_then(|b| b.get(slot)).copied().unwrap_or(1);
                let Some(view) = datas.get_mut(range) else { continue };
                let start = Instant::now();
                let _ = engine.run_batch(view, batch);
                let ns = start.elapsed().as_secs_f64() * 1e9 / (batch as f64 * evals);
                if let Some(s) = samples.get_mut(li).and_then(|l| l.get_mut(slot)) {
                    s.push(ns);
                }
                bar.inc(1);
            }
        }
    }
    let mut columns: Vec<Column> = lanes
        .iter()
        .zip(&samples)
        .map(|((kind, lane), per_slot)| Column {
            name: kind.name().to_string(),
            cells: per_slot
                .iter()
                .map(|s| match (lane, Stats::from_samples(s)) {
                    (Err(why), _) => Cell::Unavailable(why.clone()),
                    (Ok(_), Some(stats)) => Cell::Measured(stats),
                    (Ok(_), None) => Cell::Unavailable("no samples".to_string()),
                })
                .collect(),
            cached: Vec::new(),
        })
        .collect();
    let mut cache_hit = None;
    let mut iterations = 0;
    if want_kernel {
        iterations = kernel_iterations(args.time, kernel_tasks);
        let (installed, forced, hit) = kernel_columns(prepared, &inputs, &kernel_inputs, iterations, &bar);
        columns.push(installed);
        columns.push(forced);
        cache_hit = Some(hit);
    }
    bar.finish_and_clear();
    Ok(Results {
        cache_hit,
        kernel_iterations: iterations,
        optimized_insns,
        ..Results::new(args, prepared, inputs, deepest, rounds, columns)
    })
}

/// Inputs of slot `slot`: one input, or (the last slot) all of them, the mix.
fn slot_range(slot: usize, n: usize) -> std::ops::Range<usize> {
    if slot < n {
        slot..slot + 1
    } else {
        0..n
    }
}

/// The default inputs give every argument 0, which may stop a syscall's
/// argument checks early: the input of longest classic path over every
/// feasible path of their (arch, nr) classes
/// ([`seccomp::analysis::deepest_input_in`]), when it is longer than each
/// of `inputs`. Past the analysis budget the named inputs stand, and
/// stderr says so.
fn deepest_arguments(prog: &cbpf::Program, inputs: &[Input]) -> Option<cbpf::SeccompData> {
    let classes = inputs.iter().map(|i| (i.data.arch, i.data.nr as u32));
    let longest = inputs.iter().map(|i| i.cbpf_path).max().unwrap_or(0);
    match seccomp::analysis::deepest_input_in(prog, classes, &mut Default::default()) {
        Ok(Some(found)) if found.path > longest => Some(found.data),
        Ok(_) => None,
        Err(e) => {
            eprintln!("note: no search for a deeper input: {e}; the deepest input is the deepest named one");
            None
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

/// Which inputs the kernel can time (x86_64 native calls), each checked
/// against the classic interpreter on the kernel engine first.
fn kernel_check(prepared: &Prepared, inputs: &[Input]) -> Vec<std::result::Result<(), String>> {
    use cbpf::uapi::x86_64::X32_SYSCALL_BIT;
    let mut engine = match SeccompEngine::new(EngineKind::Kernel, prepared) {
        Ok(e) => e,
        Err(e) => return vec![Err(e.to_string()); inputs.len()],
    };
    let datas: Vec<cbpf::SeccompData> = inputs.iter().map(|i| i.data).collect();
    let outcomes = match engine.eval_batch(&datas) {
        Ok(o) => o,
        Err(e) => return vec![Err(e.to_string()); inputs.len()],
    };
    inputs
        .iter()
        .zip(outcomes)
        .map(|(input, outcome)| {
            // x32 numbers (bit 30 of a non-negative nr) would enter another syscall table.
            let x32 = input.data.nr >= 0 && input.data.nr as u32 & X32_SYSCALL_BIT != 0;
            if input.data.arch != cbpf::uapi::audit::AUDIT_ARCH_X86_64 || x32 {
                return Err("the kernel timing issues native x86_64 system calls only".to_string());
            }
            match outcome {
                Outcome::Action(a) if a == input.ret => Ok(()),
                Outcome::Action(a) => {
                    Err(format!("the kernel returns {a:#010x}, the classic interpreter {:#010x}: not timed", input.ret))
                }
                Outcome::NotObservable(why) => Err(why),
            }
        })
        .collect()
}

/// System calls per kernel sample, so the kernel takes about `time` seconds.
fn kernel_iterations(time: f64, tasks: u64) -> u64 {
    // Each task: six loops of `iterations` calls of roughly 300 ns.
    let per_task = time / tasks.max(1) as f64;
    ((per_task / (6.0 * 300e-9)) as u64).clamp(200, 500_000)
}

/// ns per call of `filters` on `nr`, five samples (`kernel::time_syscalls`).
fn syscall_samples(
    filters: &[Vec<cbpf::Insn>],
    nr: u32,
    args: [u64; 6],
    iterations: u64,
) -> std::result::Result<Vec<f64>, String> {
    let args = args.map(kernel::SyscallArg::Value);
    kernel::time_syscalls(filters, i64::from(nr), args, iterations).map(|t| t.samples_ns).map_err(|e| e.to_string())
}

/// `with − without`: the median of the differences of each sample of `with`
/// from the median of `without`, with their range.
fn difference(with: &[f64], without: &[f64]) -> Cell {
    let Some(base) = Stats::from_samples(without) else { return Cell::Unavailable("no samples".to_string()) };
    let diffs: Vec<f64> = with.iter().map(|w| w - base.median).collect();
    match Stats::from_samples(&diffs) {
        Some(s) => Cell::Measured(s),
        None => Cell::Unavailable("no samples".to_string()),
    }
}

/// The kernel columns: as installed (the cache's cost where it skips the
/// filter) and forced (the filter always runs), plus the cache-hit cost.
fn kernel_columns(
    prepared: &Prepared,
    inputs: &[Input],
    usable: &[std::result::Result<(), String>],
    iterations: u64,
    bar: &indicatif::ProgressBar,
) -> (Column, Column, Cell) {
    use cbpf::uapi::audit::AUDIT_ARCH_X86_64;
    let original = prepared.program().original();
    // The cache's own cost: getppid under an always-allow filter (cached
    // for every number) minus getppid unfiltered; the call runs both times.
    const GETPPID: u32 = 110;
    let bitmap = vec![
        cbpf::Insn::stmt(cbpf::opcode::LD_W_ABS, cbpf::uapi::seccomp::OFFSET_NR),
        cbpf::Insn::stmt(cbpf::opcode::RET_K, cbpf::uapi::seccomp::SECCOMP_RET_ALLOW),
    ];
    let hit = match (
        syscall_samples(&[bitmap], GETPPID, [0; 6], iterations),
        syscall_samples(&[], GETPPID, [0; 6], iterations),
    ) {
        (Ok(with), Ok(without)) => difference(&with, &without),
        (Err(e), _) | (_, Err(e)) => Cell::Unavailable(e),
    };
    bar.inc(2);
    let mut forced = Column { name: KERNEL_FORCED.to_string(), cells: Vec::new(), cached: Vec::new() };
    let mut installed = Column { name: "kernel".to_string(), cells: Vec::new(), cached: Vec::new() };
    for (input, ok) in inputs.iter().zip(usable) {
        let nr = input.data.nr as u32;
        let cell = match ok {
            Err(why) => Cell::Unavailable(why.clone()),
            Ok(()) => {
                let refuse_all = [cbpf::Insn::stmt(cbpf::opcode::RET_K, 0)];
                let cell = match (kernel::refusing(original, nr), kernel::refusing(&refuse_all, nr)) {
                    (Some(measured), Some(baseline)) => {
                        match (
                            syscall_samples(&[measured], nr, input.data.args, iterations),
                            syscall_samples(&[baseline], nr, input.data.args, iterations),
                        ) {
                            (Ok(with), Ok(without)) => difference(&with, &without),
                            (Err(e), _) | (_, Err(e)) => Cell::Unavailable(e),
                        }
                    }
                    _ => Cell::Unavailable("four instructions longer than BPF_MAXINSNS".to_string()),
                };
                bar.inc(2);
                cell
            }
        };
        let cached = ok
            .is_ok()
            .then(|| seccomp::cache::seccomp_is_const_allow(original, nr, AUDIT_ARCH_X86_64, AUDIT_ARCH_X86_64));
        installed.cells.push(if cached == Some(true) { hit.clone() } else { cell.clone() });
        installed.cached.push(cached);
        forced.cells.push(cell);
        forced.cached.push(cached);
    }
    // The mix: the mean over the inputs the kernel timed.
    for col in [&mut installed, &mut forced] {
        let measured: Vec<Stats> =
            col.cells.iter().filter_map(|c| if let Cell::Measured(s) = c { Some(*s) } else { None }).collect();
        let n = measured.len() as f64;
        col.cells.push(if measured.is_empty() {
            Cell::Unavailable("no input timed in the kernel".to_string())
        } else {
            Cell::Measured(Stats {
                median: measured.iter().map(|s| s.median).sum::<f64>() / n,
                min: measured.iter().map(|s| s.min).sum::<f64>() / n,
                max: measured.iter().map(|s| s.max).sum::<f64>() / n,
                samples: measured.iter().map(|s| s.samples).min().unwrap_or(0),
            })
        });
        col.cached.push(None);
    }
    (installed, forced, hit)
}

/// Socket filters: the packets of `--pcap`, on the classic and eBPF engines.
fn bench_socket(args: &BenchArgs, kinds: &[EngineKind], prepared: &Prepared) -> Result<Results> {
    if args.vectors.is_some() || args.input.nr.is_some() {
        return Err(Failure::usage("--vectors and --nr are for seccomp filters; socket filters take --pcap"));
    }
    let Some(path) = &args.pcap else {
        return Err(Failure::usage("bench --mode socket needs --pcap FILE"));
    };
    let bytes = read_input(path)?;
    let capture = pcap::parse(&bytes).map_err(|e| Failure::rejected(format!("{path}: {e}")))?;
    let interp = cbpf::Interp::new(prepared.program());
    let ebpf_prog = engine::load_ebpf(prepared.converted())?;
    let mut vm = ebpf::Vm::new();
    let mut inputs = Vec::new();
    for (i, rec) in capture.records.iter().take(MAX_PACKETS).enumerate() {
        let skb = cbpf::Skb::test_bpf(rec.data);
        let mut cbpf_path = 0u64;
        let ret = interp.trace_socket(&skb, |_| cbpf_path += 1)?;
        let ctx = ebpf::SkbContext::new(skb.data, &engine::skb_meta(&skb));
        let got = vm.run(&ebpf_prog, ebpf::Input::Skb(&ctx))? as u32;
        if got != ret {
            return Err(Failure::rejected(format!(
                "engine ebpf returns {got} on packet {i}, the classic interpreter {ret}"
            )));
        }
        inputs.push(Input {
            name: format!("packet {i}"),
            data: cbpf::SeccompData::default(),
            packet: rec.data.to_vec(),
            ret,
            cbpf_path,
            ebpf_path: vm.executed(),
            optimized_path: None,
        });
    }
    if inputs.is_empty() {
        return Err(Failure::rejected(format!("{path}: no packets")));
    }
    let deepest = deepest(&inputs);
    let timed: Vec<EngineKind> =
        kinds.iter().copied().filter(|k| matches!(k, EngineKind::Cbpf | EngineKind::Ebpf)).collect();
    let slots = inputs.len() + 1;
    let (rounds, sample) = plan(args.time, timed.len() * slots);
    let bar = progress((rounds * timed.len() * slots) as u64, args.time);
    let skbs: Vec<cbpf::Skb<'_>> = inputs.iter().map(|i| cbpf::Skb::test_bpf(&i.packet)).collect();
    let metas: Vec<ebpf::SkbMeta> = skbs.iter().map(engine::skb_meta).collect();
    let ctxs: Vec<ebpf::SkbContext> = skbs.iter().zip(&metas).map(|(s, m)| ebpf::SkbContext::new(s.data, m)).collect();
    let run = |kind: EngineKind, range: std::ops::Range<usize>, batch: u64, vm: &mut ebpf::Vm| {
        for _ in 0..batch {
            for i in range.clone() {
                match kind {
                    EngineKind::Cbpf => {
                        if let Some(skb) = skbs.get(i) {
                            let _ = std::hint::black_box(interp.run_socket(std::hint::black_box(skb)));
                        }
                    }
                    _ => {
                        if let Some(ctx) = ctxs.get(i) {
                            let _ =
                                std::hint::black_box(vm.run(&ebpf_prog, ebpf::Input::Skb(std::hint::black_box(ctx))));
                        }
                    }
                }
            }
        }
    };
    let mut batches = vec![vec![1u64; slots]; timed.len()];
    for (k, kind) in timed.iter().enumerate() {
        for slot in 0..slots {
            let b = calibrate(sample, &mut || run(*kind, slot_range(slot, inputs.len()), 1, &mut vm));
            if let Some(cell) = batches.get_mut(k).and_then(|b| b.get_mut(slot)) {
                *cell = b;
            }
        }
    }
    let mut samples = vec![vec![Vec::with_capacity(rounds); slots]; timed.len()];
    for _ in 0..rounds {
        for slot in 0..slots {
            for (k, kind) in timed.iter().enumerate() {
                let range = slot_range(slot, inputs.len());
                let evals = range.len() as f64;
                let batch = batches.get(k).and_then(|b| b.get(slot)).copied().unwrap_or(1);
                let start = Instant::now();
                run(*kind, range, batch, &mut vm);
                let ns = start.elapsed().as_secs_f64() * 1e9 / (batch as f64 * evals);
                if let Some(s) = samples.get_mut(k).and_then(|l: &mut Vec<Vec<f64>>| l.get_mut(slot)) {
                    s.push(ns);
                }
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let mut columns: Vec<Column> = Vec::new();
    for kind in kinds {
        let cells = match timed.iter().position(|k| k == kind) {
            Some(k) => samples
                .get(k)
                .map(|per| {
                    per.iter()
                        .map(|s| {
                            Stats::from_samples(s)
                                .map_or_else(|| Cell::Unavailable("no samples".into()), Cell::Measured)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            None => {
                vec![Cell::Unavailable(format!("bench times socket filters on cbpf and ebpf only (not {kind})")); slots]
            }
        };
        columns.push(Column { name: kind.name().to_string(), cells, cached: Vec::new() });
    }
    Ok(Results::new(args, prepared, inputs, deepest, rounds, columns))
}

/// ns with a decimal point always (the golden test masks `digits.digits`).
fn fmt_ns(ns: f64) -> String {
    if ns.abs() < 10.0 {
        format!("{ns:.2}")
    } else {
        format!("{ns:.1}")
    }
}

/// The result as the filter's mode names it.
fn fmt_ret(mode: cbpf::Mode, ret: u32) -> String {
    match mode {
        cbpf::Mode::Seccomp => seccomp::Action::from_u32(ret).to_string(),
        _ => ret.to_string(),
    }
}

/// One row shown: name, slot (the column index of its cells), result,
/// and the classic, eBPF and optimised paths.
type Row = (String, usize, String, String, String, String);

/// The rows shown: every input, then `deepest` and `mix`.
fn rows(r: &Results) -> Vec<Row> {
    let opt = |p: Option<u64>| p.map_or("-".to_string(), |p| p.to_string());
    let mut rows: Vec<Row> = r
        .inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            (
                input.name.clone(),
                i,
                fmt_ret(r.mode, input.ret),
                input.cbpf_path.to_string(),
                input.ebpf_path.to_string(),
                opt(input.optimized_path),
            )
        })
        .collect();
    if let Some(d) = r.inputs.get(r.deepest) {
        rows.push((
            format!("deepest ({})", d.name),
            r.deepest,
            fmt_ret(r.mode, d.ret),
            d.cbpf_path.to_string(),
            d.ebpf_path.to_string(),
            opt(d.optimized_path),
        ));
    }
    let (c, e, o) = mean_paths(&r.inputs);
    rows.push((
        format!("mix ({} inputs)", r.inputs.len()),
        r.inputs.len(),
        "-".to_string(),
        format!("{c:.1}"),
        format!("{e:.1}"),
        o.map_or("-".to_string(), |o| format!("{o:.1}")),
    ));
    rows
}

/// Mean classic, eBPF and optimised paths (the last when every input has
/// one).
fn mean_paths(inputs: &[Input]) -> (f64, f64, Option<f64>) {
    let n = inputs.len().max(1) as f64;
    let optimized: Option<Vec<u64>> = inputs.iter().map(|i| i.optimized_path).collect();
    (
        inputs.iter().map(|i| i.cbpf_path as f64).sum::<f64>() / n,
        inputs.iter().map(|i| i.ebpf_path as f64).sum::<f64>() / n,
        optimized.map(|o| o.iter().map(|&p| p as f64).sum::<f64>() / n),
    )
}

/// The text table.
fn text(r: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} filter, {} classic / {} eBPF instructions, {} inputs, median of {} rounds (ns per evaluation)",
        r.file,
        r.mode,
        r.insns,
        r.ebpf_insns,
        r.inputs.len(),
        r.rounds
    );
    let rows = rows(r);
    let name_w = rows.iter().map(|row| row.0.len()).max().unwrap_or(5).max(5);
    let act_w = rows.iter().map(|row| row.2.len()).max().unwrap_or(6).max(6);
    let _ = write!(out, "{:<name_w$}  {:<act_w$}  {:>6}  {:>6}  {:>6}", "input", "result", "cbpf#", "ebpf#", "opt#");
    let widths: Vec<usize> = r.columns.iter().map(|c| c.name.len().max(7)).collect();
    for (c, w) in r.columns.iter().zip(&widths) {
        let _ = write!(out, "  {:>w$}", c.name);
    }
    out.push('\n');
    let mut notes: Vec<String> = Vec::new();
    for (name, slot, action, cp, ep, op) in &rows {
        let _ = write!(out, "{name:<name_w$}  {action:<act_w$}  {cp:>6}  {ep:>6}  {op:>6}");
        for (c, w) in r.columns.iter().zip(&widths) {
            let shown = match c.cells.get(*slot) {
                Some(Cell::Measured(s)) => {
                    let cached = c.name == "kernel" && c.cached.get(*slot).copied().flatten() == Some(true);
                    format!("{}{}", fmt_ns(s.median), if cached { "c" } else { "" })
                }
                Some(Cell::Unavailable(why)) => {
                    let n = match notes.iter().position(|n| n == why) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(why.clone());
                            notes.len()
                        }
                    };
                    format!("n/a[{n}]")
                }
                None => "-".to_string(),
            };
            let _ = write!(out, "  {shown:>w$}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "cbpf# / ebpf#: instructions executed by the classic program and by its eBPF conversion.");
    match r.optimized_insns {
        Some(n) => {
            let _ = writeln!(
                out,
                "opt#: classic instructions executed by `bpfconv optimize`'s output ({n} instructions, proved equal): \
                 the dispatch and argument trees beside the filter as written."
            );
        }
        None if r.mode == cbpf::Mode::Seccomp => {
            let _ = writeln!(out, "opt#: no optimised filter (see the note above).");
        }
        None => {}
    }
    if r.columns.iter().any(|c| c.name == KERNEL_FORCED) {
        let _ = writeln!(
            out,
            "kernel-forced: ns per x86_64 system call with the filter installed and run, minus the same call refused by a \
             one-instruction filter ({} calls per sample; every ret refuses, so the call never runs and the \
             constant-action cache never skips the filter). kernel: as installed: where the cache skips the filter \
             (marked c), the cache's own cost (getppid under an always-allow filter minus getppid unfiltered{}).",
            r.kernel_iterations,
            match &r.cache_hit {
                Some(Cell::Measured(s)) => format!(": {} ns", fmt_ns(s.median)),
                _ => String::new(),
            }
        );
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(out, "[{}] {n}", i + 1);
    }
    out
}

/// The JSON document (FORMATS-EXTENSIONS.md, "bench").
fn json(r: &Results) -> Value {
    let rows = rows(r);
    let (mc, me, _) = mean_paths(&r.inputs);
    let mut cells = Vec::new();
    for (i, (_, slot, _, _, _, _)) in rows.iter().enumerate() {
        let (input, cbpf_path, ebpf_path) = if i < r.inputs.len() {
            let x = r.inputs.get(*slot);
            (
                x.map(|x| x.name.clone()).unwrap_or_default(),
                json!(x.map(|x| x.cbpf_path)),
                json!(x.map(|x| x.ebpf_path)),
            )
        } else if *slot == r.deepest && i == r.inputs.len() {
            let x = r.inputs.get(*slot);
            ("deepest".to_string(), json!(x.map(|x| x.cbpf_path)), json!(x.map(|x| x.ebpf_path)))
        } else {
            ("mix".to_string(), json!(mc), json!(me))
        };
        for c in &r.columns {
            let mut cell =
                object(json!({"input": input, "engine": c.name, "cbpf_path": cbpf_path, "ebpf_path": ebpf_path}));
            match c.cells.get(*slot) {
                Some(Cell::Measured(s)) => {
                    cell.insert("ns".into(), json!(s.median));
                    cell.insert("min_ns".into(), json!(s.min));
                    cell.insert("max_ns".into(), json!(s.max));
                    cell.insert("samples".into(), json!(s.samples));
                }
                Some(Cell::Unavailable(why)) => {
                    cell.insert("ns".into(), Value::Null);
                    cell.insert("min_ns".into(), Value::Null);
                    cell.insert("max_ns".into(), Value::Null);
                    cell.insert("unavailable".into(), json!(why));
                }
                None => continue,
            }
            if let Some(Some(cached)) = c.cached.get(*slot) {
                cell.insert("kernel_cached".into(), json!(cached));
            }
            cells.push(Value::Object(cell));
        }
    }
    let inputs: Vec<Value> = r
        .inputs
        .iter()
        .map(|i| {
            let mut v =
                object(json!({"input": i.name, "ret": i.ret, "cbpf_path": i.cbpf_path, "ebpf_path": i.ebpf_path}));
            if let Some(p) = i.optimized_path {
                v.insert("optimized_path".into(), json!(p));
            }
            if r.mode == cbpf::Mode::Seccomp {
                v.insert("arch".into(), json!(i.data.arch));
                v.insert("nr".into(), json!(i.data.nr));
                v.insert("args".into(), json!(i.data.args));
                v.insert("ip".into(), json!(i.data.instruction_pointer));
            }
            Value::Object(v)
        })
        .collect();
    let mut doc = object(json!({
        "filter": r.file,
        "mode": r.mode.to_string(),
        "insns": r.insns,
        "ebpf_insns": r.ebpf_insns,
        "rounds": r.rounds,
        "engines": r.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "inputs": inputs,
        "deepest": r.inputs.get(r.deepest).map(|i| i.name.clone()),
        "cells": cells,
    }));
    if let Some(n) = r.optimized_insns {
        doc.insert("optimized_insns".into(), json!(n));
    }
    if let Some(hit) = &r.cache_hit {
        doc.insert(
            "kernel".into(),
            json!({
                "iterations": r.kernel_iterations,
                "cache_hit_ns": match hit { Cell::Measured(s) => json!(s.median), Cell::Unavailable(_) => Value::Null },
            }),
        );
    }
    Value::Object(doc)
}

/// The map of a `json!({...})` object literal.
fn object(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// Cost per input and engine; the kernel line is the forced cost. Colours
/// follow the fixed engine order (`EngineKind::ALL`, then the kernel's).
fn svg(r: &Results) -> std::result::Result<String, String> {
    use timing::plot::{line_chart_svg, Series, XScale};
    let mut labels: Vec<String> = r.inputs.iter().map(|i| i.name.clone()).collect();
    labels.push("mix".to_string());
    let fixed: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).chain([KERNEL_FORCED]).collect();
    let series: Vec<Series> = r
        .columns
        .iter()
        .filter(|c| c.name != "kernel")
        .map(|c| Series {
            name: c.name.clone(),
            points: c
                .cells
                .iter()
                .enumerate()
                .filter_map(|(i, cell)| match cell {
                    Cell::Measured(s) if s.median > 0.0 => Some((i as f64, s.median)),
                    _ => None,
                })
                .collect(),
            color: fixed.iter().position(|f| *f == c.name).unwrap_or(fixed.len()),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    line_chart_svg(&format!("{}: cost per input", r.file), "input", &XScale::Labels(labels), &series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_fits_the_time() {
        let (rounds, sample) = plan(2.0, 100);
        assert_eq!(rounds, ROUNDS);
        assert!(sample.as_secs_f64() * (rounds * 100) as f64 <= 2.0);
        let (rounds, sample) = plan(0.001, 10_000);
        assert_eq!((rounds, sample), (5, MIN_SAMPLE));
    }

    #[test]
    fn names_say_arch_and_syscall() {
        assert_eq!(input_name(cbpf::uapi::audit::AUDIT_ARCH_X86_64, 0), "x86_64:read");
        assert_eq!(input_name(cbpf::uapi::audit::AUDIT_ARCH_X86_64, 0x4000_0000), "x32:read");
        assert_eq!(input_name(0x1234, 5), "0x1234:#5");
    }
}
