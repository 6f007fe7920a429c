//! The `kernel-jit` engine for socket filters: the filter converted for a
//! hook ([`hook::convert`], `--verdict value`), loaded through the running
//! kernel's verifier and JIT ([`kernel::bpf`]) as an XDP, tc or socket
//! program, and run by `BPF_PROG_TEST_RUN` on each packet.
//!
//! ```text
//! cbpf::Program ─► hook::convert(target, value) ─► Prog::load(type) ─► test_run(frame, ctx: mark) ─► retval
//! ```
//!
//! A test run builds its own skb around the frame
//! ([`kernel::bpf::test_run_skb`]: the loopback device, `eth_type_trans()`'s
//! protocol and packet type, the mark from the context; for XDP
//! [`hook::ancillary::xdp_skb`] with the loopback's receive queue 0). When
//! the filter's verdict on the caller's skb depends on metadata that skb
//! does not have (another protocol, packet type, device, VLAN tag, CPU or
//! random number, a wire length longer than the bytes), the engine says
//! the packet is not observable rather than answer for another packet
//! ([`kernel::socket::unobservable_on`]); so it does for a frame shorter
//! than 14 bytes or longer than a test run takes whole.

use cbpf::{Program, Skb};
use hook::{Hooked, Options, Target, Verdict};
use kernel::bpf::{Prog, ProgType, TestRun};

use crate::{EngineError, SocketOutcome};

/// The program type of a hook target.
pub fn prog_type(target: Target) -> ProgType {
    match target {
        Target::Xdp => ProgType::Xdp,
        Target::Tc => ProgType::SchedCls,
        Target::Socket => ProgType::SocketFilter,
    }
}

/// The loopback's receive queue an XDP test run runs on.
const XDP_RX_QUEUE: u32 = 0;

/// A socket filter loaded into the running kernel for one hook.
#[derive(Debug)]
pub struct HookJit {
    prog: Prog,
    target: Target,
    program: Program,
    hooked: Hooked,
}

impl HookJit {
    /// Converts `program` for `target` (the classic value as the return
    /// value) and loads it.
    ///
    /// # Errors
    /// [`EngineError::Hook`] when the hook has no value for an ancillary
    /// load the filter makes; [`EngineError::Bpf`] when `bpf(2)` is
    /// unavailable here or the verifier refuses the program.
    pub fn new(program: &Program, target: Target) -> Result<HookJit, EngineError> {
        let hooked = hook::convert(program, &Options { target, verdict: Verdict::Value })?;
        let prog = Prog::load(prog_type(target), &hooked.insns)?;
        Ok(HookJit { prog, target, program: program.clone(), hooked })
    }

    /// `r0 = 0; exit` in the program type of `target` ([`Baseline`]).
    fn baseline(target: Target) -> Result<Prog, EngineError> {
        use ebpf::filter_h::{exit_insn, mov32_imm};
        Ok(Prog::load(prog_type(target), &[mov32_imm(0, 0), exit_insn()])?)
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The converted program.
    pub fn hooked(&self) -> &Hooked {
        &self.hooked
    }

    /// The skb the test run's program reads as its classic filter would,
    /// for `frame` with `mark` in the context.
    pub fn kernel_skb<'a>(&self, frame: &'a [u8], mark: u32) -> Skb<'a> {
        match self.target {
            Target::Xdp => hook::ancillary::xdp_skb(frame, kernel::bpf::LOOPBACK_IFINDEX as u32, XDP_RX_QUEUE),
            Target::Tc | Target::Socket => kernel::bpf::test_run_skb(frame, mark),
        }
    }

    /// Why the test run cannot reproduce the filter's verdict on `skb`,
    /// or `None` when it can.
    pub fn unobservable(&self, skb: &Skb<'_>) -> Option<String> {
        if let Some(why) = kernel::bpf::test_run_refuses(prog_type(self.target), skb.data) {
            return Some(why);
        }
        if skb.headlen < skb.data.len() && self.target == Target::Xdp {
            return Some("the packet has paged data; an XDP frame here is linear".into());
        }
        let theirs = self.kernel_skb(skb.data, skb.mark);
        let path = format!("the {} test run", self.target);
        kernel::socket::unobservable_on(&self.program, skb, &theirs, &path)
    }

    /// The filter's value on `frame` with `mark` in the context (tc and
    /// socket; XDP has none), as the kernel computes it.
    pub fn run(&self, frame: &[u8], mark: u32) -> Result<u32, EngineError> {
        Ok(self.duration(frame, mark, 1)?.0)
    }

    /// The kernel's value and mean ns per run over `repeat` runs on `frame`.
    pub fn duration(&self, frame: &[u8], mark: u32, repeat: u32) -> Result<(u32, u32), EngineError> {
        let ctx = kernel::bpf::skb_ctx(mark);
        let ctx = (self.target != Target::Xdp && mark != 0).then_some(&ctx[..]);
        let out = self.prog.test_run(&TestRun { data: frame, ctx, repeat })?;
        Ok((out.retval, out.duration_ns))
    }

    /// The filter's verdict on `skb`, or why the test run cannot give it.
    pub fn eval(&self, skb: &Skb<'_>) -> Result<SocketOutcome, EngineError> {
        if let Some(why) = self.unobservable(skb) {
            return Ok(SocketOutcome::NotObservable(why));
        }
        Ok(SocketOutcome::Ret(self.run(skb.data, skb.mark)?))
    }
}

/// Runs of [`repeat_for`]'s first probe.
pub const PROBE_REPEAT: u32 = 1_000;
/// The most runs one measurement makes.
pub const MAX_REPEAT: u32 = 100_000_000;
/// How long one timed measurement lasts at least.
pub const MIN_MEASUREMENT: std::time::Duration = std::time::Duration::from_millis(1);

/// A `repeat` for which one measurement (`mean_ns(repeat)`: the kernel's
/// mean ns per run over `repeat` runs) lasts at least `at_least`: from a
/// probe of [`PROBE_REPEAT`] runs, doubled until mean × repeat reaches it.
pub fn repeat_for(
    mut mean_ns: impl FnMut(u32) -> Result<u32, EngineError>,
    at_least: std::time::Duration,
) -> Result<u32, EngineError> {
    let want = at_least.as_nanos().max(1);
    // A mean of 0 ns (the kernel rounds down) counts as 1.
    let mean = mean_ns(PROBE_REPEAT)?;
    let mut repeat = u32::try_from(want.div_ceil(u128::from(mean.max(1)))).unwrap_or(MAX_REPEAT);
    repeat = repeat.clamp(PROBE_REPEAT, MAX_REPEAT);
    for _ in 0..8 {
        let mean = mean_ns(repeat)?;
        if u128::from(mean) * u128::from(repeat) >= want || repeat == MAX_REPEAT {
            break;
        }
        repeat = repeat.saturating_mul(2).min(MAX_REPEAT);
    }
    Ok(repeat)
}

/// The same harness around `r0 = 0; exit` for a target: what a timing of
/// [`HookJit::duration`] subtracts (measured on the same frame and context).
#[derive(Debug)]
pub struct Baseline {
    prog: Prog,
    target: Target,
}

impl Baseline {
    /// Loads the baseline program of `target`'s type.
    pub fn new(target: Target) -> Result<Baseline, EngineError> {
        Ok(Baseline { prog: HookJit::baseline(target)?, target })
    }

    /// Its mean ns per run over `repeat` runs on `frame` with `mark`.
    pub fn duration(&self, frame: &[u8], mark: u32, repeat: u32) -> Result<u32, EngineError> {
        let ctx = kernel::bpf::skb_ctx(mark);
        let ctx = (self.target != Target::Xdp && mark != 0).then_some(&ctx[..]);
        Ok(self.prog.test_run(&TestRun { data: frame, ctx, repeat })?.duration_ns)
    }
}
