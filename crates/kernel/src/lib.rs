//! The running Linux kernel as a seccomp engine and a socket-filter engine,
//! its eBPF door (`bpf(2)`: verifier, JIT, test runs), benchmark
//! primitives, and filter dumps from live processes.
//!
//! ```text
//! cbpf::Insn[] ─► engine (rewrite rets + ip prologue, fork, seccomp, stub syscalls) ─► Outcome per input
//!             ─► socket (SO_ATTACH_FILTER on an AF_UNIX socketpair, send, recv MSG_TRUNC) ─► Delivery per packet
//!             ─► bench  (install unmodified, time the syscall loop / the attach)
//! ebpf::Insn[] ─► bpf    (BPF_PROG_LOAD through the verifier and JIT, BPF_PROG_TEST_RUN) ─► retval, duration
//! pid ────────► dump   (PTRACE_SEIZE + PTRACE_SECCOMP_GET_FILTER) ─► filters, oldest first
//! ```
//!
//! With `native` (code made at run time), the only crate of the workspace
//! with `unsafe` and libc; all of it lives in the private `sys` module,
//! behind small wrappers. The engine and
//! benchmarks need x86_64 Linux; everything runs in forked children, so the
//! calling process never gets a filter.
//!
//! ```no_run
//! use cbpf::Insn;
//! use kernel::{run_vectors, Input, Outcome, AUDIT_ARCH_X86_64};
//! let allow = [Insn::stmt(0x06, 0x7fff_0000)];
//! let input = Input { arch: AUDIT_ARCH_X86_64, nr: 39, args: [0; 6], ip: 0 };
//! assert_eq!(run_vectors(&allow, &[input]).unwrap(), vec![Outcome::Action(0x7fff_0000)]);
//! ```

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
compile_error!("the kernel crate supports x86_64 Linux only");

pub mod bench;
pub mod bpf;
mod child;
pub mod dump;
pub mod engine;
pub mod socket;
mod sys;

use std::time::Duration;

pub use bench::{attach_time, refusing, time_syscalls, SyscallArg, SyscallTiming, TimingClock, REFUSED};
pub use dump::{dump_filters, DumpError, FilteredProcess};
pub use engine::{
    reads_instruction_pointer, run_vectors, seccomp_attach, seccomp_available, stub_ips, Input, KernelEngine, Outcome,
    StubIps, Unobservable, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, NR_UPROBE, NR_URETPROBE,
};

/// Why a kernel run as a whole failed. Per-input limits are
/// [`Outcome::NotObservable`] instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    #[error("unsupported: {reason}")]
    Unsupported { reason: &'static str },
    #[error("seccomp filters are unavailable on this kernel: {}", errno_text(*.errno))]
    SeccompUnavailable { errno: i32 },
    #[error("the kernel refused the filter ({len} instructions as installed): {}", errno_text(*.errno))]
    FilterRejected { errno: i32, len: usize },
    #[error("filter of {len} instructions is too long for the kernel engine (at most {max})")]
    TooLong { len: usize, max: usize },
    #[error("filter returns {distinct} distinct constants, the kernel engine can tell apart at most {max}")]
    TooManyReturnValues { distinct: usize, max: usize },
    #[error("the child did not finish within {timeout:?} and was killed")]
    Timeout { timeout: Duration },
    #[error("the child died by signal {signal} before running any input")]
    ChildDied { signal: i32 },
    #[error("the child exited with unexpected status {code}")]
    ChildExit { code: i32 },
    #[error("the filter stack killed the benchmarked syscall {nr} (signal {signal})")]
    BenchmarkKilled { signal: i32, nr: i64 },
    #[error("{op} failed: {}", errno_text(*.errno))]
    Os { op: &'static str, errno: i32 },
}

/// An errno as the OS describes it, for error messages.
pub(crate) fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

/// Makes writes to a closed pipe end the process as Unix tools do (default
/// SIGPIPE action) rather than returning `EPIPE`. For command-line front ends.
pub fn default_sigpipe() {
    sys::default_sigpipe();
}
