//! `bench` on a seccomp filter: every in-process engine checked against
//! the classic interpreter on every input, then timed round by round
//! through `SeccompEngine::run_batch` (`timing::rounds`), then the running
//! kernel's JIT (`jit`) and the running kernel's figures (`kernel`).

use std::time::Duration;

use engine::{EngineKind, Prepared, SeccompEngine};
use timing::rounds::{interleaved, interleaved_within, Grid};
use timing::stats::Stats;

use super::inputs::{deepest_arguments, input_name, named_inputs, optimized_paths, seccomp_input, vector_inputs};
use super::kernel::{kernel_check, kernel_columns, kernel_iterations};
use super::{deepest, progress, rounds_made, BenchArgs, Cell, Column, Input, Lane, Lanes, Results, Schedule};
use crate::fail::{Failure, Result};

/// `bench --mode seccomp`.
pub(super) fn bench_seccomp(args: &BenchArgs, kinds: &[EngineKind], prepared: &Prepared) -> Result<Results> {
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
    let interp = cbpf::Interp::new(prepared.program());
    let mut inputs: Vec<Input> =
        named.into_iter().map(|(n, d)| seccomp_input(&interp, &mut vm, &ebpf_prog, n, d)).collect::<Result<_>>()?;
    if !chosen {
        if let Some(d) = deepest_arguments(prepared.program(), &inputs) {
            let name = format!("{} deepest", input_name(d.arch, d.nr as u32));
            inputs.push(seccomp_input(&interp, &mut vm, &ebpf_prog, name, d)?);
        }
    }
    let deepest = deepest(&inputs);
    let optimized_insns = optimized_paths(prepared, &mut inputs);

    // Load and check every in-process engine on every input.
    let mut lanes: Vec<Lane<SeccompEngine<'_>>> = Vec::new();
    for &kind in kinds.iter().filter(|&&k| !matches!(k, EngineKind::Kernel | EngineKind::KernelJit)) {
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
    let fast = lanes.iter().find_map(|(_, lane)| match lane {
        Ok(SeccompEngine::Fast(f)) => Some(super::FastForm::of(f)),
        _ => None,
    });
    let want_kernel = kinds.contains(&EngineKind::Kernel);
    let kernel_inputs = if want_kernel { kernel_check(prepared, &inputs) } else { Vec::new() };

    let mut datas: Vec<[u8; 64]> = inputs.iter().map(|i| i.data.to_bytes()).collect();
    let live = lanes.iter().filter(|l| l.1.is_ok()).count();
    let schedule = Schedule::new(args.time, live, inputs.len());
    let kernel_tasks = kernel_inputs.iter().filter(|k| k.is_ok()).count() as u64 * 2 + u64::from(want_kernel) * 2;
    let bar = progress_of(&schedule, kernel_tasks, args.time, want_kernel);
    let grid = &mut Lanes { lanes: &mut lanes, inputs: datas.as_mut_slice() };
    let budget = Duration::from_secs_f64(args.time);
    let samples = interleaved_within(grid, schedule.rounds, schedule.sample, budget, || bar.inc(1));
    let rounds = rounds_made(&samples, schedule.rounds);
    let call_floor = if lanes.iter().any(|(_, lane)| lane.is_ok()) {
        let floor = interleaved(&mut CallFloor(datas.as_mut_slice()), rounds, schedule.sample, || {});
        floor.first().and_then(|lane| lane.first()).and_then(|s| Stats::from_samples(s))
    } else {
        None
    };
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
    let mut jit = None;
    if kinds.contains(&EngineKind::KernelJit) {
        let (column, summary) = super::jit::seccomp_column(prepared, &inputs, args, rounds, &bar)?;
        columns.push(column);
        jit = Some(summary);
    }
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
        jit,
        optimized_insns,
        fast,
        call_floor,
        ..Results::new(args, prepared, inputs, deepest, rounds, columns)
    })
}

/// A seccomp run's progress bar: a step per timed cell and per kernel
/// task, over `time` seconds for the engines and as long again for the
/// kernel when it runs.
pub(super) fn progress_of(
    schedule: &Schedule,
    kernel_tasks: u64,
    time: f64,
    want_kernel: bool,
) -> indicatif::ProgressBar {
    progress(schedule.steps() + kernel_tasks, time + if want_kernel { time } else { 0.0 })
}

/// The mix of the inputs through the engines' timing loop with a call
/// that does no work ([`engine::call_floor`]): what the loop and a call
/// cost, timed for as many rounds as the engines were.
pub(super) struct CallFloor<'d>(pub(super) &'d mut [[u8; 64]]);

impl Grid for CallFloor<'_> {
    fn lanes(&self) -> usize {
        1
    }

    fn slots(&self) -> usize {
        1
    }

    fn live(&self, _: usize) -> bool {
        true
    }

    fn evals(&self, _: usize) -> usize {
        self.0.len()
    }

    fn run(&mut self, _: usize, _: usize, batch: u64) {
        engine::call_floor(self.0, batch);
    }
}
