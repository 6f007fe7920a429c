//! The `kernel-jit` engine: the filter's loadable conversion
//! ([`convert::loadable()`]) behind the seccomp XDP harness
//! ([`convert::loadable::xdp`]), loaded through the running kernel's
//! verifier and JIT ([`kernel::bpf`]) and run by `BPF_PROG_TEST_RUN` on a
//! 64-byte packet that is the `struct seccomp_data`.
//!
//! ```text
//! Prepared ─► convert::loadable ─► xdp::seccomp ─► Prog::load(Xdp) ─► test_run(packet) ─► retval
//! ```
//!
//! No system call is filtered, so it answers for every arch and every
//! number (the `kernel` engine only observes native x86_64 calls). What it
//! measures is the filter alone in the kernel's JIT: the `kernel` engine
//! is the whole seccomp path of a real system call.
//!
//! Timing ([`Clock`]): the kernel's own mean per run
//! (`bpf_test_timer_leave()` in net/bpf/test_run.c divides the time of
//! `repeat` back-to-back runs, preemption off, by `repeat`, in whole
//! nanoseconds) of the filter's timing harness, `copies` runs of the
//! filter back to back in one program ([`xdp::seccomp_copies`], `copies`
//! from [`xdp::copies_for`]: 32 for every loadable program up to 30
//! instructions, fewer for longer ones, one from 508), minus that of the same harness around
//! `w0 = 0` ([`xdp::baseline_copies`]) measured in the same round, divided
//! by `copies`: one filter run to 1/`copies` ns, where a single run in
//! whole nanoseconds read 0 or 1 for the cheapest filters. Answers
//! ([`KernelJit::eval`]) come from the single harness ([`xdp::seccomp`]);
//! the timing harness returns the last copy's value, which every round
//! reports so the caller checks it too.
//!
//! The timing harness and its baseline are loaded as tc programs
//! (`BPF_PROG_TYPE_SCHED_CLS`, [`xdp::Context::Tc`]: the same instructions
//! behind a prologue that reads `struct __sk_buff`), the single harness as
//! XDP. Two reasons:
//! - Wall time. An XDP test run with `repeat > 1` registers the program
//!   with the XDP dispatcher for the timed loop and unregisters it after
//!   (`bpf_prog_change_xdp()` in `bpf_prog_test_run_xdp()`, net/bpf/test_run.c):
//!   measured here, about 20 ms of wall time per call whatever `repeat`,
//!   none of it on the kernel's clock. `bench` on Docker's default profile
//!   (931 inputs, at least 3 rounds of one call each) spent 95 s in that
//!   column; a tc test run (`bpf_prog_test_run_skb()`) has no such step:
//!   8.5 s, nearly all of it the 1 ms measurements.
//! - The call the filter gets. The XDP dispatcher calls the program
//!   directly; `bpf_test_run()` of a tc program calls it through
//!   `bpf_prog_run()`, an indirect call (a retpoline where Spectre v2 is
//!   mitigated that way, as on the machine of issue 28), as seccomp does
//!   (`bpf_prog_run_pin_on_cpu()` in `seccomp_run_filters()`,
//!   kernel/seccomp.c). Measured side by side (one copy, whole ns),
//!   long_jumps_large's inputs read about half as much behind the direct
//!   call (path of 54 instructions: 3 ns against 7; mix 5.5–6.6 against
//!   9.6): the direct call lets a run overlap the loop around it, which
//!   the baseline then subtracts.
//!
//! The copies run on one input, so each copy's branches always go the same
//! way. [`CycleClock`] times the cycling harness ([`xdp::seccomp_cycle`]:
//! one copy of the filter looping over up to [`xdp::MAX_CYCLE_INPUTS`]
//! inputs in the packet) instead, the same branches seeing every input in
//! turn, as `bench`'s mix runs the other engines.
//!
//! A round is one call per input plus one for the baseline. One probe of
//! the baseline fixes the `repeat` of [`Clock::round`], long enough that
//! each measurement lasts at least [`MIN_MEASUREMENT`] (every run costs at
//! least the harness alone). That `repeat` makes a costly input's
//! measurement last as many times longer as the input costs more than the
//! harness: a 4096-instruction ladder's deepest input, a hundred times.
//! [`Clock::repeats`] sizes one `repeat` per input instead, from a short
//! probe of each, for [`Clock::round_with`]: what `bench` uses, so that its
//! `--time` bounds the column.

use std::time::Duration;

use cbpf::SeccompData;
use convert::loadable::xdp;
use kernel::bpf::{Prog, ProgType, TestRun};

use crate::{EngineError, Prepared};

/// A harness loaded into the running kernel.
#[derive(Debug)]
pub struct KernelJit {
    prog: Prog,
}

impl KernelJit {
    /// Loads `prepared`'s loadable conversion behind the XDP harness.
    ///
    /// # Errors
    /// [`EngineError::Loadable`] for a socket filter;
    /// [`EngineError::Bpf`] when `bpf(2)` is unavailable here or the
    /// verifier refuses the program (with its reason).
    pub fn new(prepared: &Prepared) -> Result<KernelJit, EngineError> {
        let loadable = convert::loadable(prepared.converted(), prepared.program().mode())?;
        Ok(KernelJit { prog: Prog::load(ProgType::Xdp, &xdp::seccomp(&loadable))? })
    }

    /// The harness around `r0 = 0; exit` ([`xdp::baseline`]): the cost a
    /// timing subtracts.
    pub fn baseline() -> Result<KernelJit, EngineError> {
        Ok(KernelJit { prog: Prog::load(ProgType::Xdp, &xdp::baseline())? })
    }

    /// The filter's value on `packet` (a `struct seccomp_data` as its
    /// arch's kernel lays it out: [`xdp::packet`]).
    pub fn eval_packet(&self, packet: &[u8; xdp::PACKET_LEN]) -> Result<u32, EngineError> {
        Ok(self.prog.retval(packet)?)
    }

    /// The filter's value on `data`.
    pub fn eval(&self, data: &SeccompData) -> Result<u32, EngineError> {
        self.eval_packet(&xdp::packet(data))
    }

    /// The kernel's mean ns per run over `repeat` runs on `packet` (one
    /// input, or the cycling harness's inputs: [`xdp::cycle_packet`]), with
    /// the value the runs returned.
    pub fn duration(&self, packet: &[u8], repeat: u32) -> Result<(u32, u32), EngineError> {
        let out = self.prog.test_run(&TestRun { data: packet, ctx: None, repeat })?;
        Ok((out.retval, out.duration_ns))
    }
}

/// The kernel's clock on a filter's timing harness (module docs: loaded as
/// tc programs): ns per run of the filter above the harness alone.
#[derive(Debug)]
pub struct Clock {
    /// The single harness: the answers.
    single: KernelJit,
    /// `copies` runs of the filter per test run.
    timed: KernelJit,
    /// The same structure around `w0 = 0`.
    baseline: KernelJit,
    copies: usize,
    repeat: u32,
    /// The baseline's mean ns per test run in [`Clock::new`]'s probe.
    baseline_ns: u32,
}

impl Clock {
    /// Loads `prepared`'s single harness, its timing harness and the
    /// timing baseline, and sizes the `repeat` of every measurement from
    /// one probe of the baseline.
    ///
    /// # Errors
    /// As [`KernelJit::new`].
    pub fn new(prepared: &Prepared) -> Result<Clock, EngineError> {
        let loadable = convert::loadable(prepared.converted(), prepared.program().mode())?;
        let copies = xdp::copies_for(&loadable);
        let load = |prog_type: ProgType, insns: &[ebpf::Insn]| -> Result<KernelJit, EngineError> {
            Ok(KernelJit { prog: Prog::load(prog_type, insns)? })
        };
        let single = load(ProgType::Xdp, &xdp::seccomp(&loadable))?;
        let tc = xdp::Context::Tc;
        let timed = load(ProgType::SchedCls, &xdp::seccomp_copies(&loadable, copies, tc)?)?;
        let baseline = load(ProgType::SchedCls, &xdp::baseline_copies(copies, tc))?;
        let (_, mean) = baseline.duration(&[0; xdp::PACKET_LEN], PROBE_REPEAT)?;
        Ok(Clock { single, timed, baseline, copies, repeat: repeat_for(MIN_MEASUREMENT, mean), baseline_ns: mean })
    }

    /// The filter's single harness (for its answers).
    pub fn filter(&self) -> &KernelJit {
        &self.single
    }

    /// The timing harness: `copies` runs of the filter, the last one's value.
    pub fn timed(&self) -> &KernelJit {
        &self.timed
    }

    /// Runs of the filter per test run of the timing harness.
    pub fn copies(&self) -> usize {
        self.copies
    }

    /// Test runs per measurement.
    pub fn repeat(&self) -> u32 {
        self.repeat
    }

    /// One round: the timing baseline's mean ns per test run (on the first
    /// packet), then for each packet the value the timing harness returned
    /// and ns per filter run: its mean per test run minus the baseline's,
    /// divided by [`Clock::copies`] (0 or a little below within noise for
    /// the cheapest filters). Every measurement makes [`Clock::repeat`] runs.
    pub fn round(&self, packets: &[[u8; xdp::PACKET_LEN]]) -> Result<(f64, Vec<(u32, f64)>), EngineError> {
        self.round_with(packets, &Repeats { baseline: self.repeat, packets: vec![self.repeat; packets.len()] })
    }

    /// `repeat`s for measurements of about `measurement` each: the
    /// baseline's from [`Clock::new`]'s probe, each packet's from a probe of
    /// [`PACKET_PROBE_REPEAT`] runs of the timing harness on it.
    ///
    /// # Errors
    /// [`EngineError::Bpf`] when a test run fails.
    pub fn repeats(&self, packets: &[[u8; xdp::PACKET_LEN]], measurement: Duration) -> Result<Repeats, EngineError> {
        let packets = packets
            .iter()
            .map(|p| Ok(repeat_for(measurement, self.timed.duration(p, PACKET_PROBE_REPEAT)?.1)))
            .collect::<Result<_, EngineError>>()?;
        Ok(Repeats { baseline: repeat_for(measurement, self.baseline_ns), packets })
    }

    /// [`Clock::round`] with the `repeat` of each measurement from
    /// `repeats` (one per packet, from [`Clock::repeats`]).
    pub fn round_with(
        &self,
        packets: &[[u8; xdp::PACKET_LEN]],
        repeats: &Repeats,
    ) -> Result<(f64, Vec<(u32, f64)>), EngineError> {
        let first = packets.first().copied().unwrap_or([0; xdp::PACKET_LEN]);
        let packets = packets.iter().map(|p| &p[..]);
        timed_round(&self.timed, &self.baseline, &first, packets, repeats, self.repeat, self.copies)
    }
}

/// The kernel's clock on the cycling harness ([`xdp::seccomp_cycle`],
/// loaded as a tc program like [`Clock`]'s): ns per evaluation of the
/// filter when each test run goes through [`CycleClock::inputs`] inputs in
/// turn, the same branches seeing every one, above the same loop around
/// `w0 = 0`. Inputs are taken in chunks of that many, in order, the last
/// chunk filled up from the first inputs again; a chunk's figure is its
/// mean per test run less the baseline's, over its inputs, and a round's
/// mix the mean of its chunks' figures.
#[derive(Debug)]
pub struct CycleClock {
    timed: KernelJit,
    baseline: KernelJit,
    inputs: usize,
}

/// One test run's packet for [`CycleClock`]: inputs in turn, and the index
/// (among the packets it was made from) of the last, whose value the run
/// returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The inputs' packets one after another ([`xdp::cycle_packet`]).
    pub bytes: Vec<u8>,
    /// The last input's index.
    pub last: usize,
}

impl CycleClock {
    /// Loads the cycling harness of `prepared` over `inputs` inputs, at
    /// most [`xdp::cycle_inputs_for`] its loadable form (fewer for long
    /// filters: the verifier walks the loop once per input), and its
    /// baseline. One attempt: a refusal is the error, not a retry with
    /// fewer inputs (each refusal of a long filter costs seconds).
    ///
    /// # Errors
    /// As [`KernelJit::new`].
    pub fn new(prepared: &Prepared, inputs: usize) -> Result<CycleClock, EngineError> {
        let loadable = convert::loadable(prepared.converted(), prepared.program().mode())?;
        let tc = xdp::Context::Tc;
        let inputs = inputs.clamp(1, xdp::cycle_inputs_for(&loadable));
        let timed = KernelJit { prog: Prog::load(ProgType::SchedCls, &xdp::seccomp_cycle(&loadable, inputs, tc)?)? };
        let baseline = KernelJit { prog: Prog::load(ProgType::SchedCls, &xdp::baseline_cycle(inputs, tc))? };
        Ok(CycleClock { timed, baseline, inputs })
    }

    /// Inputs per test run.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// `packets` in chunks of [`CycleClock::inputs`], in order; the last
    /// chunk is filled up from the first packets; none for no packets.
    pub fn chunks(&self, packets: &[[u8; xdp::PACKET_LEN]]) -> Vec<Chunk> {
        let n = packets.len();
        let mut chunks = Vec::with_capacity(n.div_ceil(self.inputs));
        let mut start = 0;
        while start < n {
            let idx: Vec<usize> = (start..start + self.inputs).map(|i| i % n).collect();
            let inputs: Vec<[u8; xdp::PACKET_LEN]> = idx.iter().filter_map(|&i| packets.get(i).copied()).collect();
            chunks.push(Chunk { bytes: xdp::cycle_packet(&inputs), last: idx.last().copied().unwrap_or(0) });
            start += self.inputs;
        }
        chunks
    }

    /// `repeat`s for measurements of about `measurement` each, from a
    /// probe of [`PACKET_PROBE_REPEAT`] runs of the baseline and of each
    /// chunk.
    ///
    /// # Errors
    /// [`EngineError::Bpf`] when a test run fails.
    pub fn repeats(&self, chunks: &[Chunk], measurement: Duration) -> Result<Repeats, EngineError> {
        let zero = vec![0; self.inputs * xdp::PACKET_LEN];
        let (_, base) = self.baseline.duration(&zero, PACKET_PROBE_REPEAT)?;
        let packets = chunks
            .iter()
            .map(|c| Ok(repeat_for(measurement, self.timed.duration(&c.bytes, PACKET_PROBE_REPEAT)?.1)))
            .collect::<Result<_, EngineError>>()?;
        Ok(Repeats { baseline: repeat_for(measurement, base), packets })
    }

    /// One round: the baseline's mean ns per test run, then for each chunk
    /// the value its test runs returned (the filter's on its last input)
    /// and ns per evaluation above the baseline.
    ///
    /// # Errors
    /// [`EngineError::Bpf`] when a test run fails.
    pub fn round(&self, chunks: &[Chunk], repeats: &Repeats) -> Result<(f64, Vec<(u32, f64)>), EngineError> {
        let zero = vec![0; self.inputs * xdp::PACKET_LEN];
        let packets = chunks.iter().map(|c| &c.bytes[..]);
        timed_round(&self.timed, &self.baseline, &zero, packets, repeats, repeats.baseline, self.inputs)
    }
}

/// One round of a timing harness against its baseline: the baseline's
/// mean ns per test run on `base_packet`, then for each of `packets` the
/// value its test runs returned and its mean per test run less the
/// baseline's, over the `per` filter runs of a test run. Each measurement
/// makes its `repeats` entry's runs (`default` past their end).
fn timed_round<'p>(
    timed: &KernelJit,
    baseline: &KernelJit,
    base_packet: &[u8],
    packets: impl Iterator<Item = &'p [u8]>,
    repeats: &Repeats,
    default: u32,
    per: usize,
) -> Result<(f64, Vec<(u32, f64)>), EngineError> {
    let (_, base) = baseline.duration(base_packet, repeats.baseline)?;
    let base = f64::from(base);
    let per = per.max(1) as f64;
    let runs = packets
        .enumerate()
        .map(|(i, p)| {
            let repeat = repeats.packets.get(i).copied().unwrap_or(default);
            timed.duration(p, repeat).map(|(ret, ns)| (ret, (f64::from(ns) - base) / per))
        })
        .collect::<Result<_, _>>()?;
    Ok((base, runs))
}

/// The `repeat` of each measurement of a round ([`Clock::repeats`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeats {
    /// The baseline's.
    pub baseline: u32,
    /// Each packet's, in order.
    pub packets: Vec<u32>,
}

/// Runs for a measurement of at least `measurement` of runs of `mean` ns
/// (the kernel rounds its mean down: the estimate errs long).
fn repeat_for(measurement: Duration, mean: u32) -> u32 {
    let repeat = measurement.as_nanos().div_ceil(u128::from(mean.max(1)));
    u32::try_from(repeat).unwrap_or(MAX_REPEAT).clamp(1, MAX_REPEAT)
}

/// Runs of [`Clock::new`]'s probe of the baseline.
pub const PROBE_REPEAT: u32 = 10_000;
/// Runs of [`Clock::repeats`]'s probe of each packet: about a microsecond
/// for a cheap filter, a few hundred for a 4096-instruction one.
pub const PACKET_PROBE_REPEAT: u32 = 64;
/// The shortest measurement [`Clock::repeats`] is asked for by `bench`
/// when `--time` is short for its inputs: still hundreds of runs of a
/// cheap filter, each mean in whole ns.
pub const SHORTEST_MEASUREMENT: Duration = Duration::from_micros(50);
/// The most runs one measurement makes.
pub const MAX_REPEAT: u32 = 100_000_000;
/// How long one timed measurement lasts at least (the kernel's time).
pub const MIN_MEASUREMENT: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement's runs cover its length at the probe's mean, rounded
    /// up; a mean of 0 (below the kernel's whole ns) counts as 1 ns; the
    /// count stays within 1..=MAX_REPEAT.
    #[test]
    fn repeat_covers_the_measurement() {
        assert_eq!(repeat_for(Duration::from_millis(1), 15), 66_667);
        assert_eq!(repeat_for(Duration::from_micros(50), 2_000), 25);
        assert_eq!(repeat_for(Duration::from_micros(50), 0), 50_000);
        assert_eq!(repeat_for(Duration::from_micros(1), 5_000), 1);
        assert_eq!(repeat_for(Duration::from_secs(10), 1), MAX_REPEAT);
    }
}
