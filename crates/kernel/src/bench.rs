//! Benchmark primitives for the published tables: the cost of a system call
//! under a stack of real seccomp filters, and the cost of attaching one.
//!
//! Filters are installed unmodified, in a forked child, so the numbers are
//! the kernel's own (constant-action cache included).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use cbpf::Insn;

use crate::child;
use crate::sys::{self, get, put, Exit, Failed};
use crate::KernelError;

/// Timed runs per measurement; the median is reported.
pub const REPEATS: usize = 5;
/// A benchmark child may run this long before it is killed.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Size of the zeroed buffer behind [`SyscallArg::ZeroedBuffer`].
pub const BUFFER_LEN: usize = 256;

/// One system call argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallArg {
    /// This exact register value.
    Value(u64),
    /// A pointer to a zeroed, writable [`BUFFER_LEN`]-byte buffer (e.g. the
    /// name argument of `fremovexattr` in the classic `syscall(199, ...)`
    /// workload, which faults with a NULL pointer).
    ZeroedBuffer,
}

/// Which clock timed the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingClock {
    /// `CLOCK_THREAD_CPUTIME_ID`, read by the looping thread around the loop.
    ThreadCpu,
    /// Used when the filter stack kills or denies `clock_gettime` itself (as
    /// filters that allow a single syscall do): the total CPU time of a child
    /// looping 2N times minus that of one looping N times, both from
    /// `wait4()`'s rusage (microsecond resolution), which cancels the fixed
    /// cost of fork, filter install and exit. CPU time, like `ThreadCpu`, so
    /// the load of other processes does not inflate it.
    ChildCpuDifference,
}

/// Result of [`time_syscalls`].
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallTiming {
    /// Median over the repeats of the time per call.
    pub per_call: Duration,
    /// Time per call of each repeat, in run order.
    pub samples: Vec<Duration>,
    /// The clock used.
    pub clock: TimingClock,
    /// Nanoseconds per call of each repeat, unrounded (`samples` are whole
    /// nanoseconds; a filter's cost is often a few).
    pub samples_ns: Vec<f64>,
}

/// Times `iterations` calls of `syscall(nr, args)` in a forked child that
/// first installs `filters` (oldest first, unmodified; an empty slice
/// measures the unfiltered cost).
///
/// The loop runs five times after one warm-up; the median per-call
/// time is returned. The child's result of the syscall is ignored, but a
/// stack that kills it is an error ([`KernelError::BenchmarkKilled`]).
pub fn time_syscalls(
    filters: &[Vec<Insn>],
    nr: i64,
    args: [SyscallArg; 6],
    iterations: u64,
) -> Result<SyscallTiming, KernelError> {
    crate::engine::seccomp_available()?;
    let iterations = iterations.max(1);
    let progs: Vec<Vec<libc::sock_filter>> = filters.iter().map(|f| sys::to_sock_filters(f)).collect();
    let mut buffer = Box::new([0_u8; BUFFER_LEN]);
    let buffer_addr = buffer.as_mut_ptr() as u64;
    let regs = args.map(|a| match a {
        SyscallArg::Value(v) => v,
        SyscallArg::ZeroedBuffer => buffer_addr,
    });
    let work = Workload { progs: &progs, nr, regs, iterations };
    match time_in_child(work)? {
        Some(t) => Ok(t),
        None => time_by_difference(work),
    }
}

/// What a timing child does: installs `progs`, then makes system call `nr`
/// with `regs` `iterations` times.
#[derive(Clone, Copy)]
struct Workload<'a> {
    progs: &'a [Vec<libc::sock_filter>],
    nr: i64,
    regs: [u64; 6],
    iterations: u64,
}

/// `Ok(None)`: the clock itself was unusable under the filters.
fn time_in_child(work: Workload<'_>) -> Result<Option<SyscallTiming>, KernelError> {
    let Workload { progs, nr, regs, iterations } = work;
    let clock_id = libc::CLOCK_THREAD_CPUTIME_ID;
    // words[0] = clock worked once, [1] = setup errno, [2] = samples done,
    // [3..] = nanoseconds of each run (warm-up first).
    let shared = child::shared_results(3 + REPEATS + 1)?;
    let words = shared.words();
    let child = || -> i32 {
        if let Err(step) = setup_child(words, progs) {
            return step.code();
        }
        for run in 0..=REPEATS {
            let Some(t0) = sys::clock_ns(clock_id) else {
                return Failed::Clock.code();
            };
            put(words, 0, 1);
            call_repeatedly(nr, regs, iterations);
            let Some(t1) = sys::clock_ns(clock_id) else {
                return Failed::Clock.code();
            };
            put(words, 3 + run, t1.saturating_sub(t0));
            put(words, 2, run as u64 + 1);
        }
        0
    };
    // SAFETY: the closure uses only async-signal-safe wrappers (prctl,
    // seccomp, clock_gettime, syscall) and shared atomics prepared before.
    let pid = unsafe { sys::fork_child(child) }.map_err(|errno| KernelError::Os { op: "fork", errno })?;
    let exit = child::wait_for(pid, TIMEOUT)?;
    let clock_ok = get(words, 0) == 1;
    let done = get(words, 2) as usize;
    if done < REPEATS + 1 {
        match exit {
            Exit::Failed(Failed::Clock) => return Ok(None),
            Exit::Failed(_) => return Err(setup_error(get(words, 1) as i32)),
            Exit::Signal(_) if !clock_ok => return Ok(None),
            Exit::Signal(signal) => return Err(KernelError::BenchmarkKilled { signal, nr }),
            Exit::Code(code) => return Err(KernelError::ChildExit { code }),
        }
    }
    // Completed: a death afterwards (the filter killing exit_group) is fine.
    let samples: Vec<Duration> =
        (1..=REPEATS).map(|run| Duration::from_nanos(get(words, 3 + run) / iterations)).collect();
    let samples_ns = (1..=REPEATS).map(|run| get(words, 3 + run) as f64 / iterations as f64).collect();
    Ok(Some(SyscallTiming { per_call: median(&samples), samples, clock: TimingClock::ThreadCpu, samples_ns }))
}

/// The [`TimingClock::ChildCpuDifference`] measurement.
fn time_by_difference(work: Workload<'_>) -> Result<SyscallTiming, KernelError> {
    let iterations = work.iterations;
    let mut samples = Vec::with_capacity(REPEATS);
    let mut samples_ns = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let once = loop_cpu(work)?;
        let twice = loop_cpu(Workload { iterations: iterations.saturating_mul(2), ..work })?;
        let extra = twice.saturating_sub(once);
        samples
            .push(Duration::from_nanos(u64::try_from(extra.as_nanos() / u128::from(iterations)).unwrap_or(u64::MAX)));
        samples_ns.push(extra.as_nanos() as f64 / iterations as f64);
    }
    Ok(SyscallTiming { per_call: median(&samples), samples, clock: TimingClock::ChildCpuDifference, samples_ns })
}

/// Total CPU time of a child that runs `work`, reading no clock itself.
fn loop_cpu(work: Workload<'_>) -> Result<Duration, KernelError> {
    let Workload { progs, nr, regs, iterations } = work;
    // words[0] = loop finished, [1] = setup errno.
    let shared = child::shared_results(2)?;
    let words = shared.words();
    let child = || -> i32 {
        if let Err(step) = setup_child(words, progs) {
            return step.code();
        }
        call_repeatedly(nr, regs, iterations);
        put(words, 0, 1);
        0
    };
    // SAFETY: async-signal-safe closure (prctl, seccomp, the syscall, shared
    // atomics), all data prepared before the fork.
    let pid = unsafe { sys::fork_child(child) }.map_err(|errno| KernelError::Os { op: "fork", errno })?;
    let reaped = match sys::wait_child_usage(pid, TIMEOUT) {
        Ok(Some(r)) => r,
        Ok(None) => {
            sys::kill_child(pid);
            return Err(KernelError::Timeout { timeout: TIMEOUT });
        }
        Err(errno) => {
            sys::kill_child(pid);
            return Err(KernelError::Os { op: "waitpid", errno });
        }
    };
    if get(words, 0) == 1 {
        // A death afterwards (the filter killing exit_group) is fine.
        return Ok(reaped.cpu);
    }
    Err(match reaped.exit {
        Exit::Failed(_) => setup_error(get(words, 1) as i32),
        Exit::Code(code) => KernelError::ChildExit { code },
        Exit::Signal(signal) => KernelError::BenchmarkKilled { signal, nr },
    })
}

/// Median wall time of `seccomp(SECCOMP_SET_MODE_FILTER)` attaching `filter`
/// (after `PR_SET_NO_NEW_PRIVS`), over five fresh children, timed with
/// `CLOCK_MONOTONIC` through the vDSO so the filter cannot interfere.
pub fn attach_time(filter: &[Insn]) -> Result<Duration, KernelError> {
    crate::engine::seccomp_available()?;
    let prog = sys::to_sock_filters(filter);
    let mut samples = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let ns = child::install_in_child(&prog)?.map_err(setup_error)?;
        samples.push(Duration::from_nanos(ns));
    }
    Ok(median(&samples))
}

/// What [`refusing`] makes the filtered call return: `SECCOMP_RET_ERRNO | EPERM`.
pub const REFUSED: u32 = cbpf::uapi::seccomp::SECCOMP_RET_ERRNO | 1;

/// `filter` made safe to time on calls of `nr`: the call itself never runs,
/// and the timing child's own calls (clock, exit) are not filtered.
///
/// Prepends `ld [nr]; jeq #nr, 1, 0; ret ALLOW; ld #0` (other numbers are
/// allowed; the measured one enters the filter with `A = 0` as the kernel
/// starts it) and rewrites every `ret` (`ret #k` and `ret a`) to
/// `ret #`[`REFUSED`], so the call returns `-EPERM` after the filter ran
/// its full path for those arguments. Jumps are relative, so they keep their
/// targets. No `ret` returns ALLOW for `nr`, so the kernel's
/// constant-action cache (`seccomp_cache_prepare_bitmap()`) never skips the
/// filter for it: the timing is always the filter's evaluation. Subtract
/// [`refusing`] of a one-instruction filter (`ret #0`) timed the same way to
/// cancel the prologue and the refused call's own cost. `None` when the
/// result would exceed `BPF_MAXINSNS`.
pub fn refusing(filter: &[Insn], nr: u32) -> Option<Vec<Insn>> {
    use cbpf::opcode::{JMP_JEQ_K, LD_IMM, LD_W_ABS, RET_K};
    use cbpf::uapi::seccomp::{OFFSET_NR, SECCOMP_RET_ALLOW};
    let mut out = vec![
        Insn::stmt(LD_W_ABS, OFFSET_NR),
        Insn::jump(JMP_JEQ_K, nr, 1, 0),
        Insn::stmt(RET_K, SECCOMP_RET_ALLOW),
        Insn::stmt(LD_IMM, 0),
    ];
    out.extend(filter.iter().map(|i| match i.op() {
        Some(cbpf::Op::RetK { .. } | cbpf::Op::RetA) => Insn::stmt(RET_K, REFUSED),
        _ => *i,
    }));
    (out.len() <= cbpf::opcode::BPF_MAXINSNS).then_some(out)
}

/// In a forked child: hardens it and installs `progs` (with none, the
/// baseline, it sets nothing); on failure stores the errno in `words[1]`
/// and returns the step that failed.
fn setup_child(words: &[AtomicU64], progs: &[Vec<libc::sock_filter>]) -> Result<(), Failed> {
    sys::harden_child(false);
    if progs.is_empty() {
        return Ok(());
    }
    sys::enter_filters(progs.iter().map(Vec::as_slice)).map_err(|(step, e)| {
        put(words, 1, e as u64);
        step
    })
}

/// In a forked child: `iterations` calls of syscall `nr` with `regs`, the
/// measured loop (inlined so the child's timing is the loop's alone).
#[inline(always)]
fn call_repeatedly(nr: i64, regs: [u64; 6], iterations: u64) {
    for _ in 0..iterations {
        // SAFETY: this child exists only to run this call; pointer
        // arguments point at the live zeroed buffer.
        std::hint::black_box(unsafe { sys::raw_syscall(nr, std::hint::black_box(regs)) });
    }
}

fn setup_error(errno: i32) -> KernelError {
    KernelError::Os { op: "install benchmark filters", errno }
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::{Interp, Mode, SeccompData};

    /// The refusing variant takes the original's path (plus three executed
    /// prologue instructions) and refuses only the measured number.
    #[test]
    fn refusing_keeps_the_path_and_refuses_only_nr() {
        let text = "ld [4]\njeq #0xc000003e, ok, kill\nok: ld [0]\njeq #39, allow, other\nallow: ret #0x7fff0000\nother: ld [16]\njset #1, kill, allow2\nallow2: ret a\nkill: ret #0";
        let insns = cbpf::text::parse(text.as_bytes(), cbpf::Format::Asm).unwrap();
        let original = Interp::new(&cbpf::validate(&insns, Mode::Seccomp).unwrap());
        for (nr, arg) in [(39, 0), (40, 0), (40, 1)] {
            let rewritten = refusing(&insns, nr).unwrap();
            let interp = Interp::new(&cbpf::validate(&rewritten, Mode::Seccomp).unwrap());
            let d =
                SeccompData { nr: nr as i32, arch: 0xc000_003e, instruction_pointer: 0, args: [arg, 0, 0, 0, 0, 0] }
                    .to_bytes();
            let (mut before, mut after) = (0, 0);
            original.trace_seccomp(&d, |_| before += 1).unwrap();
            assert_eq!(interp.trace_seccomp(&d, |_| after += 1).unwrap(), REFUSED);
            assert_eq!(after, before + 3);
            let other = SeccompData { nr: nr as i32 + 1, ..SeccompData::default() }.to_bytes();
            assert_eq!(interp.run_seccomp(&other).unwrap(), cbpf::uapi::seccomp::SECCOMP_RET_ALLOW);
        }
        assert!(refusing(&vec![Insn::stmt(cbpf::opcode::RET_K, 0); 4093], 1).is_none());
        // ERRNO(EPERM): the call fails at once, the timing child lives on.
        assert_eq!(REFUSED, 0x0005_0001);
    }

    #[test]
    fn the_median_is_the_middle_sample() {
        let ns = |v: &[u64]| v.iter().map(|&n| Duration::from_nanos(n)).collect::<Vec<_>>();
        assert_eq!(median(&ns(&[5, 1, 4, 2, 3])), Duration::from_nanos(3));
        assert_eq!(median(&ns(&[9, 7])), Duration::from_nanos(9));
        assert_eq!(median(&[]), Duration::ZERO);
    }
}
