//! `bench`'s `kernel-jit` figures: the filter run by the running kernel's
//! JIT through `BPF_PROG_TEST_RUN`, the kernel's own mean ns per run less
//! the same harness around `r0 = 0` measured in the same round. Seccomp
//! filters run as their loadable conversion behind the seccomp harness,
//! timed as a tc program ([`engine::kernel_jit`]); socket filters once per hook target
//! ([`engine::hook_jit`]).

use std::time::Instant;

use engine::{EngineKind, Prepared};
use timing::stats::Stats;

use super::{kernel_mix, BenchArgs, Cell, Column, Input, ROUNDS};
use crate::fail::{Failure, Result};

/// Fewest rounds of a `kernel-jit` column, whatever `--time` says.
const MIN_ROUNDS: usize = 3;

/// What the seccomp `kernel-jit` column measured besides its cells.
#[derive(Debug, Clone)]
pub(super) struct JitSummary {
    /// Rounds made (0 when the engine is unavailable).
    pub(super) rounds: usize,
    /// The timing harness's own mean ns per test run.
    pub(super) baseline: Cell,
    /// Runs of the filter per test run ([`convert::loadable::xdp::copies_for`]);
    /// `None` when the engine is unavailable.
    pub(super) copies: Option<usize>,
    /// The mix with the inputs in turn ([`cycled_mix`]): ns per evaluation,
    /// each round's the mean of its chunks.
    pub(super) cycled_mix: Cell,
    /// Inputs per test run of the cycling harness; `None` when it did not run.
    pub(super) cycle_inputs: Option<usize>,
}

/// The seccomp `kernel-jit` column ([`engine::kernel_jit::Clock`]): each
/// round times the timing harness alone, then every input, each a
/// `BPF_PROG_TEST_RUN` lasting about 1 ms of the kernel's time (down to
/// 50 µs when `--time` is short for 3 rounds of the inputs), each
/// test run `copies` runs of the filter; an input's sample is its mean ns
/// per test run above the harness's divided by `copies`, the mix's the
/// mean of the round's input samples. Rounds: `rounds`, fewer (at least 3)
/// once they have taken `--time` seconds (each call costs the XDP
/// dispatcher's update, and a busy machine's waits, in wall time only).
/// Returns the column and its summary; a disagreement with the classic
/// interpreter (of the single harness, and of the timing harness every
/// round) is an error, as for every engine.
pub(super) fn seccomp_column(
    prepared: &Prepared,
    inputs: &[Input],
    args: &BenchArgs,
    rounds: usize,
    bar: &indicatif::ProgressBar,
) -> Result<(Column, JitSummary)> {
    let name = EngineKind::KernelJit.name().to_string();
    let clock = match engine::kernel_jit::Clock::new(prepared) {
        Ok(clock) => clock,
        Err(e) => {
            let why = e.to_string();
            let cells = vec![Cell::Unavailable(why.clone()); inputs.len() + 1];
            let summary = JitSummary {
                rounds: 0,
                baseline: Cell::Unavailable(why.clone()),
                copies: None,
                cycled_mix: Cell::Unavailable(why),
                cycle_inputs: None,
            };
            return Ok((Column { name, cells, cached: Vec::new() }, summary));
        }
    };
    let packets: Vec<[u8; 64]> = inputs.iter().map(|i| i.data.to_bytes()).collect();
    let disagree = |input: &Input, got: u32| {
        Failure::rejected(format!(
            "engine kernel-jit returns {got:#010x} on input {}, the classic interpreter {:#010x}",
            input.name, input.ret
        ))
    };
    for (input, packet) in inputs.iter().zip(&packets) {
        match clock.filter().eval_packet(packet) {
            Ok(got) if got == input.ret => {}
            Ok(got) => return Err(disagree(input, got)),
            Err(e) => return Err(Failure::rejected(format!("engine kernel-jit fails on input {}: {e}", input.name))),
        }
    }
    let rounds = rounds.max(MIN_ROUNDS);
    let measurement = measurement(args.time, packets.len());
    // Each input's `repeat` sized for it (a costly input's runs last longer
    // than the harness's).
    let repeats = clock
        .repeats(&packets, std::time::Duration::from_secs_f64(measurement))
        .map_err(|e| Failure::rejected(format!("engine {name}: {e}")))?;
    bar.inc_length(rounds as u64);
    let mut samples = vec![Vec::with_capacity(rounds); inputs.len() + 1];
    let mut harness = Vec::with_capacity(rounds);
    let start = Instant::now();
    while more_rounds(harness.len(), rounds, start.elapsed().as_secs_f64(), args.time) {
        let (base, runs) =
            clock.round_with(&packets, &repeats).map_err(|e| Failure::rejected(format!("engine {name}: {e}")))?;
        harness.push(base);
        for ((input, (got, ns)), s) in inputs.iter().zip(&runs).zip(&mut samples) {
            if *got != input.ret {
                return Err(disagree(input, *got));
            }
            s.push(*ns);
        }
        if let Some(mix) = samples.last_mut() {
            mix.push(mean_ns(&runs));
        }
        bar.inc(1);
    }
    let column = Column { name, cells: samples.iter().map(|s| cell(s)).collect(), cached: Vec::new() };
    let (cycled_mix, cycle_inputs) = cycled_mix(prepared, inputs, &packets, args, harness.len(), measurement)?;
    let summary = JitSummary {
        rounds: harness.len(),
        baseline: cell(&harness),
        copies: Some(clock.copies()),
        cycled_mix,
        cycle_inputs,
    };
    Ok((column, summary))
}

/// Seconds each `BPF_PROG_TEST_RUN` measurement lasts: as long as `time`
/// allows for 3 rounds of the harness and `inputs` inputs, from 50 µs to
/// 1 ms (`engine::kernel_jit::SHORTEST_MEASUREMENT`, `MIN_MEASUREMENT`).
pub(super) fn measurement(time: f64, inputs: usize) -> f64 {
    (time / (3 * (inputs + 1)) as f64).clamp(
        engine::kernel_jit::SHORTEST_MEASUREMENT.as_secs_f64(),
        engine::kernel_jit::MIN_MEASUREMENT.as_secs_f64(),
    )
}

/// The `kernel-jit` mix with the inputs in turn ([`engine::kernel_jit::CycleClock`]):
/// `rounds` rounds (fewer, at least 3, once they have taken `--time`
/// seconds) of every chunk of the inputs, each test run's value checked
/// against the classic interpreter's on the chunk's last input. Unavailable
/// with the reason when the cycling harness does not load.
fn cycled_mix(
    prepared: &Prepared,
    inputs: &[Input],
    packets: &[[u8; 64]],
    args: &BenchArgs,
    rounds: usize,
    measurement: f64,
) -> Result<(Cell, Option<usize>)> {
    let clock = match engine::kernel_jit::CycleClock::new(prepared, packets.len()) {
        Ok(clock) => clock,
        Err(e) => return Ok((Cell::Unavailable(e.to_string()), None)),
    };
    let name = EngineKind::KernelJit.name();
    let chunks = clock.chunks(packets);
    let repeats = clock
        .repeats(&chunks, std::time::Duration::from_secs_f64(measurement))
        .map_err(|e| Failure::rejected(format!("engine {name} (inputs in turn): {e}")))?;
    let mut mixes = Vec::with_capacity(rounds.max(MIN_ROUNDS));
    let start = Instant::now();
    while more_rounds(mixes.len(), rounds, start.elapsed().as_secs_f64(), args.time) {
        let (_, runs) = clock
            .round(&chunks, &repeats)
            .map_err(|e| Failure::rejected(format!("engine {name} (inputs in turn): {e}")))?;
        for (chunk, (got, _)) in chunks.iter().zip(&runs) {
            let Some(input) = inputs.get(chunk.last) else { continue };
            if *got != input.ret {
                return Err(Failure::rejected(format!(
                    "engine {name} (inputs in turn) returns {got:#010x} on input {}, the classic interpreter {:#010x}",
                    input.name, input.ret
                )));
            }
        }
        mixes.push(mean_ns(&runs));
    }
    Ok((cell(&mixes), Some(clock.inputs())))
}

/// Whether a `kernel-jit` loop makes another round after `done`: up to
/// `asked` (at least [`MIN_ROUNDS`]), and past the minimum only while
/// `elapsed` seconds are under `time`.
pub(super) fn more_rounds(done: usize, asked: usize, elapsed: f64, time: f64) -> bool {
    done < asked.max(MIN_ROUNDS) && (done < MIN_ROUNDS || elapsed < time)
}

/// A round's sample of a mix: the mean of its test runs' ns.
pub(super) fn mean_ns(runs: &[(u32, f64)]) -> f64 {
    runs.iter().map(|r| r.1).sum::<f64>() / runs.len().max(1) as f64
}

fn cell(samples: &[f64]) -> Cell {
    Stats::from_samples(samples).map_or_else(|| Cell::Unavailable("no samples".into()), Cell::Measured)
}

/// `kernel-jit` on a socket filter: one column per hook target
/// (`kernel-jit:xdp`, `kernel-jit:tc`, `kernel-jit:socket`), the filter
/// converted for it ([`hook::convert`]) and run by the running kernel's JIT
/// through `BPF_PROG_TEST_RUN`. A cell is the kernel's own mean ns per run
/// (`duration`, `repeat` sized once per target for at least a millisecond)
/// less the same program type's `r0 = 0; exit` measured in the same round;
/// each input's result is checked against the classic interpreter first,
/// and a packet the test run cannot reproduce (other metadata, outside the
/// sizes it takes) is unavailable with the reason. The mix is the mean of
/// the inputs timed. Rounds: as many as `--time` seconds per target allow,
/// 3 to [`ROUNDS`] (an XDP test run of more than one run swaps the XDP
/// dispatcher, tens of milliseconds a call outside the timed runs).
pub(super) fn socket_columns(prepared: &Prepared, inputs: &[Input], time: f64) -> Result<Vec<Column>> {
    use engine::hook_jit::{repeat_for, Baseline, HookJit, MIN_MEASUREMENT};
    let mut columns = Vec::new();
    for target in hook::Target::ALL {
        let name = format!("{}:{target}", EngineKind::KernelJit);
        let loaded = HookJit::new(prepared.program(), target).and_then(|j| Ok((j, Baseline::new(target)?)));
        let (jit, base) = match loaded {
            Ok(pair) => pair,
            Err(e) => {
                let cells = vec![Cell::Unavailable(e.to_string()); inputs.len() + 1];
                columns.push(Column { name, cells, cached: Vec::new() });
                continue;
            }
        };
        // Every result first; the cells of packets the test run cannot
        // reproduce say why.
        let mut timed = Vec::new();
        let mut cells = Vec::with_capacity(inputs.len() + 1);
        for (i, input) in inputs.iter().enumerate() {
            let skb = cbpf::Skb::test_bpf(&input.packet);
            match jit.eval(&skb)? {
                engine::SocketOutcome::Ret(r) if r == input.ret => {
                    timed.push((i, skb.mark));
                    cells.push(Cell::Unavailable(String::new()));
                }
                engine::SocketOutcome::Ret(r) => {
                    return Err(Failure::rejected(format!(
                        "engine {name} returns {r} on input {}, the classic interpreter {}",
                        input.name, input.ret
                    )))
                }
                other => cells.push(Cell::Unavailable(other.to_string())),
            }
        }
        let packet = |i: usize| inputs.get(i).map_or(&[][..], |input| &input.packet[..]);
        let Some(&(first, first_mark)) = timed.first() else {
            cells.push(Cell::Unavailable("no input timed in the kernel".to_string()));
            columns.push(Column { name, cells, cached: Vec::new() });
            continue;
        };
        let call = Instant::now();
        let repeat = repeat_for(|r| Ok(jit.duration(packet(first), first_mark, r)?.1), MIN_MEASUREMENT)?;
        let rounds = hook_rounds(time, call.elapsed().as_secs_f64(), timed.len());
        let mut samples = vec![Vec::with_capacity(rounds); timed.len()];
        for _ in 0..rounds {
            let baseline = f64::from(base.duration(packet(first), first_mark, repeat)?);
            for (&(i, mark), s) in timed.iter().zip(samples.iter_mut()) {
                s.push(above(jit.duration(packet(i), mark, repeat)?.1, baseline));
            }
        }
        for (&(i, _), s) in timed.iter().zip(&samples) {
            if let (Some(stats), Some(cell)) = (Stats::from_samples(s), cells.get_mut(i)) {
                *cell = Cell::Measured(stats);
            }
        }
        let mix = kernel_mix(&cells);
        cells.push(mix);
        columns.push(Column { name, cells, cached: Vec::new() });
    }
    Ok(columns)
}

/// Rounds of a hook target's column: as many as fit in `time` seconds, at
/// one test run of the baseline and of each of `timed` inputs a round,
/// each costing a third of `sizing` (the seconds `repeat_for` took to size
/// `repeat`, about three test runs), from [`MIN_ROUNDS`] to [`ROUNDS`].
pub(super) fn hook_rounds(time: f64, sizing: f64, timed: usize) -> usize {
    let per_call = sizing / 3.0;
    ((time / (per_call * (timed + 1) as f64)) as usize).clamp(MIN_ROUNDS, ROUNDS)
}

/// A hook target's sample: the kernel's mean ns per run of the filter above
/// the baseline's in the same round.
pub(super) fn above(ns: u32, baseline: f64) -> f64 {
    f64::from(ns) - baseline
}
