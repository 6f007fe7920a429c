//! `bench` on a socket filter: the packets of `--pcap`, each engine that
//! runs socket filters in process (the classic and eBPF interpreters)
//! checked against the classic interpreter through `SocketEngine`, then
//! timed round by round through `SocketEngine::run_batch`
//! (`timing::rounds`); `kernel-jit` for each hook target (`jit`).

use std::time::Duration;

use engine::{EngineKind, Prepared, SocketBatch, SocketEngine};
use timing::rounds::interleaved_within;
use timing::stats::Stats;

use super::{deepest, progress, rounds_made, BenchArgs, Cell, Column, Input, Lanes, Results, Schedule, MAX_PACKETS};
use crate::fail::{Failure, Result};
use crate::io::read_input;
use crate::pcap;

/// `bench --mode socket`.
pub(super) fn bench_socket(args: &BenchArgs, kinds: &[EngineKind], prepared: &Prepared) -> Result<Results> {
    if args.vectors.is_some() || args.input.nr.is_some() {
        return Err(Failure::usage("--vectors and --nr are for seccomp filters; socket filters take --pcap"));
    }
    let Some(path) = &args.pcap else {
        return Err(Failure::usage("bench --mode socket needs --pcap FILE"));
    };
    let bytes = read_input(path)?;
    let capture = pcap::parse(&bytes).map_err(|e| Failure::rejected(format!("{path}: {e}")))?;
    // The classic interpreter's answer and both path lengths, per packet.
    let interp = cbpf::Interp::new(prepared.program());
    let ebpf_prog = engine::load_ebpf(prepared.converted())?;
    let mut vm = ebpf::Vm::new();
    let mut inputs = Vec::new();
    for (i, rec) in capture.records.iter().take(MAX_PACKETS).enumerate() {
        let skb = cbpf::Skb::test_bpf(rec.data);
        let mut cbpf_path = 0u64;
        let ret = interp.trace_socket(&skb, |_| cbpf_path += 1)?;
        let ctx = ebpf::SkbContext::new(skb.data, &engine::skb_meta(&skb));
        vm.run(&ebpf_prog, ebpf::Input::Skb(&ctx))?;
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
    let mut batch = SocketBatch::new(inputs.iter().map(|i| cbpf::Skb::test_bpf(&i.packet)).collect());
    // Load and check each timed engine on every packet.
    let mut lanes = Vec::new();
    for &kind in kinds.iter().filter(|k| matches!(k, EngineKind::Cbpf | EngineKind::Ebpf)) {
        let mut engine = SocketEngine::new(kind, prepared)?;
        for (i, input) in inputs.iter().enumerate() {
            let got = engine.run(&cbpf::Skb::test_bpf(&input.packet))?;
            if got != input.ret {
                return Err(Failure::rejected(format!(
                    "engine {kind} returns {got} on packet {i}, the classic interpreter {}",
                    input.ret
                )));
            }
        }
        lanes.push((kind, Ok(engine)));
    }
    let schedule = Schedule::new(args.time, lanes.len(), inputs.len());
    let bar = progress(schedule.steps(), args.time);
    let grid = &mut Lanes { lanes: &mut lanes, inputs: &mut batch };
    let budget = Duration::from_secs_f64(args.time);
    let samples = interleaved_within(grid, schedule.rounds, schedule.sample, budget, || bar.inc(1));
    let rounds = rounds_made(&samples, schedule.rounds);
    bar.finish_and_clear();
    let mut columns: Vec<Column> = Vec::new();
    for kind in kinds {
        if *kind == EngineKind::KernelJit {
            columns.extend(super::jit::socket_columns(prepared, &inputs, args.time)?);
            continue;
        }
        let cells = match lanes.iter().position(|(k, _)| k == kind) {
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
                vec![
                    Cell::Unavailable(format!(
                        "bench times socket filters on cbpf, ebpf and kernel-jit only (not {kind})"
                    ));
                    inputs.len() + 1
                ]
            }
        };
        columns.push(Column { name: kind.name().to_string(), cells, cached: Vec::new() });
    }
    Ok(Results::new(args, prepared, inputs, deepest, rounds, columns))
}
