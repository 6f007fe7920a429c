//! The `kernel-jit` engine: the filter's loadable conversion
//! ([`convert::loadable`]) behind the seccomp XDP harness
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
//! Timing: [`KernelJit::duration`] is the kernel's own mean per run
//! (`bpf_test_timer_leave()` in net/bpf/test_run.c divides the time of
//! `repeat` back-to-back runs, preemption off, by `repeat`, in whole
//! nanoseconds); [`KernelJit::baseline`] is the same harness around
//! `r0 = 0; exit`, whose duration a timing subtracts; [`KernelJit::repeat_for`]
//! sizes `repeat` so one measurement lasts long enough.

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

    /// The kernel's mean ns per run over `repeat` runs on `packet`, with
    /// the value the runs returned.
    pub fn duration(&self, packet: &[u8; xdp::PACKET_LEN], repeat: u32) -> Result<(u32, u32), EngineError> {
        let out = self.prog.test_run(&TestRun { data: packet, ctx: None, repeat })?;
        Ok((out.retval, out.duration_ns))
    }

    /// A `repeat` for which one [`KernelJit::duration`] on `packet` lasts
    /// at least `at_least`: from a probe of [`PROBE_REPEAT`] runs, doubled
    /// until a measurement's mean times its repeat reaches it.
    pub fn repeat_for(&self, packet: &[u8; xdp::PACKET_LEN], at_least: Duration) -> Result<u32, EngineError> {
        let want = at_least.as_nanos().max(1);
        let (_, mean) = self.duration(packet, PROBE_REPEAT)?;
        // A mean of 0 ns (the kernel rounds down) counts as 1.
        let mut repeat = u32::try_from(want.div_ceil(u128::from(mean.max(1)))).unwrap_or(MAX_REPEAT);
        repeat = repeat.clamp(PROBE_REPEAT, MAX_REPEAT);
        for _ in 0..8 {
            let (_, mean) = self.duration(packet, repeat)?;
            if u128::from(mean) * u128::from(repeat) >= want || repeat == MAX_REPEAT {
                break;
            }
            repeat = repeat.saturating_mul(2).min(MAX_REPEAT);
        }
        Ok(repeat)
    }
}

/// Runs of [`KernelJit::repeat_for`]'s first probe.
pub const PROBE_REPEAT: u32 = 1_000;
/// The most runs one measurement makes (about a second at 10 ns a run).
pub const MAX_REPEAT: u32 = 100_000_000;
/// How long one timed measurement lasts at least: `bpfconv bench` and the
/// tables size `repeat` with it.
pub const MIN_MEASUREMENT: Duration = Duration::from_millis(1);
