//! The running kernel's eBPF door: `bpf(2)` program loads through the
//! verifier (and, with the JIT on, the JIT) and `BPF_PROG_TEST_RUN`.
//!
//! ```text
//! &[ebpf::Insn] ─► Prog::load(type)  ── verifier refuses ─► BpfError::Rejected { errno, log tail }
//!                      │
//!                      └─► Prog::test_run(&TestRun { data, ctx, repeat }) ─► TestRunOutput { retval, duration_ns, data, ctx }
//! ```
//!
//! A [`Prog`] owns its file descriptor and closes it on drop; nothing is
//! attached anywhere, so loading and running leave no trace on the host.
//! Loading needs `CAP_BPF` (plus `CAP_NET_ADMIN` for the network program
//! types) or root; [`available`] says whether this process has what it
//! takes, and callers skip (visibly) when it does not.
//!
//! ```no_run
//! use ebpf::Insn;
//! use kernel::bpf::{Prog, ProgType, TestRun};
//! // r0 = 2 (XDP_PASS); exit
//! let prog = Prog::load(ProgType::Xdp, &[Insn::new(0xb7, 0, 0, 0, 2), Insn::new(0x95, 0, 0, 0, 0)])?;
//! let out = prog.test_run(&TestRun { data: &[0u8; 64], ctx: None, repeat: 1 })?;
//! assert_eq!(out.retval, 2);
//! # Ok::<(), kernel::bpf::BpfError>(())
//! ```

use std::ffi::CStr;
use std::fmt;
use std::os::fd::OwnedFd;

use crate::errno_text;
use crate::sys;

pub mod memory;

/// The program types bpfconv loads (`enum bpf_prog_type`,
/// include/uapi/linux/bpf.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProgType {
    /// `BPF_PROG_TYPE_SOCKET_FILTER`: the context is a `struct __sk_buff`;
    /// the test run starts the packet at its network header
    /// (`bpf_prog_test_run_skb()` pulls the Ethernet header as a socket's
    /// receive path does).
    SocketFilter,
    /// `BPF_PROG_TYPE_SCHED_CLS` (tc): a `struct __sk_buff` whose data
    /// starts at the Ethernet header, with direct packet access.
    SchedCls,
    /// `BPF_PROG_TYPE_XDP`: a `struct xdp_md`, data at the frame.
    Xdp,
}

impl ProgType {
    /// The `enum bpf_prog_type` value.
    pub const fn raw(self) -> u32 {
        match self {
            ProgType::SocketFilter => 1,
            ProgType::SchedCls => 3,
            ProgType::Xdp => 6,
        }
    }

    /// The name libbpf's section names and bpftool use (`socket`, `tc`, `xdp`).
    pub const fn name(self) -> &'static str {
        match self {
            ProgType::SocketFilter => "socket",
            ProgType::SchedCls => "tc",
            ProgType::Xdp => "xdp",
        }
    }
}

impl fmt::Display for ProgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many trailing lines of the verifier's log an error keeps.
const LOG_TAIL_LINES: usize = 12;
/// The log buffer of a refused load's second attempt. The kernel's log is
/// rotating (Linux 6.4+): when the text outgrows the buffer it keeps the
/// end, which holds the reason.
const LOG_BYTES: usize = 1 << 20;
/// The license the programs are loaded under: GPL-compatible for
/// `license_is_gpl_compatible()`, so no helper is refused for it.
const LICENSE: &CStr = c"Dual MIT/GPL";
/// `BPF_MAXINSNS` for unprivileged loads; privileged ones may have a
/// million, but nothing bpfconv makes comes near this.
pub const MAX_INSNS: usize = 1_000_000;

/// Why a `bpf(2)` operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BpfError {
    /// The process may not load programs of this type (`EPERM`: no
    /// `CAP_BPF`/`CAP_NET_ADMIN`), or the kernel has no `bpf(2)`.
    #[error("bpf(2) is unavailable here for {prog_type} programs: {}", errno_text(*.errno))]
    Unavailable { prog_type: ProgType, errno: i32 },
    /// The verifier (or the load's other checks) refused the program.
    #[error("the kernel's verifier refused the {prog_type} program ({len} insns): {}{}", errno_text(*.errno), log_suffix(.log))]
    Rejected { prog_type: ProgType, len: usize, errno: i32, log: String },
    /// A program of more instructions than the kernel takes.
    #[error("{len} instructions is more than a program may have ({max})")]
    TooLong { len: usize, max: usize },
    /// `BPF_PROG_TEST_RUN` failed (an input the program type cannot take:
    /// a packet under 14 bytes, a context with fields the test run
    /// refuses, ...).
    #[error("BPF_PROG_TEST_RUN of the {prog_type} program failed: {}", errno_text(*.errno))]
    TestRun { prog_type: ProgType, errno: i32 },
    /// Memory longer than an XDP test run's packet holds ([`memory`]).
    #[error("{len} bytes of memory is more than an XDP test run's packet holds ({max})")]
    MemoryTooLong { len: usize, max: usize },
    /// Memory too short for [`memory::Args::WithEnd`]: the test run pads
    /// it, so the packet's end would not be the memory's.
    #[error("{len} bytes of memory is less than the {min} a program given the memory's end needs")]
    MemoryTooShort { len: usize, min: usize },
    /// A [`memory::MemoryProg`] run on memory of another length than it
    /// was loaded (and verified) for.
    #[error("the program was loaded for {expected} bytes of memory, not {len}")]
    MemoryLength { len: usize, expected: usize },
    /// The [`memory`] harness's epilogue did not store `r0` (a bug of the
    /// harness: the packet is built to pass its checks).
    #[error("the harness did not bring r0 out (retval {retval:#x})")]
    NoResult { retval: u32 },
}

fn log_suffix(log: &str) -> String {
    if log.is_empty() {
        String::new()
    } else {
        format!("; verifier log (last lines):\n{log}")
    }
}

impl BpfError {
    /// The verifier's reason, for a [`BpfError::Rejected`]: the log's last
    /// line that says something (`unreachable insn 332`, `R0 !read_ok`).
    pub fn reason(&self) -> Option<&str> {
        match self {
            BpfError::Rejected { log, .. } => log.lines().rev().find(|l| !is_log_trailer(l)),
            _ => None,
        }
    }
}

/// The lines the verifier prints after its verdict (statistics), which
/// say nothing about why a program was refused.
fn is_log_trailer(line: &str) -> bool {
    let line = line.trim();
    line.is_empty()
        || line.starts_with("processed ")
        || line.starts_with("verification time")
        || line.starts_with("stack depth")
}

/// A loaded eBPF program. Dropping it closes its descriptor, which frees
/// the program (nothing else holds it).
#[derive(Debug)]
pub struct Prog {
    fd: OwnedFd,
    prog_type: ProgType,
    len: usize,
}

/// One `BPF_PROG_TEST_RUN`.
#[derive(Debug, Clone, Copy)]
pub struct TestRun<'a> {
    /// The packet (at least 14 bytes, `ETH_HLEN`, and at most a page less
    /// the test run's head- and tailroom).
    pub data: &'a [u8],
    /// The context the run starts from, where the type takes one
    /// (`struct __sk_buff` for socket and tc programs: the fields
    /// `convert___skb_to_skb()` accepts; `struct xdp_md` for XDP).
    pub ctx: Option<&'a [u8]>,
    /// How many times the kernel runs the program back to back (0 = 1);
    /// `duration_ns` is the mean.
    pub repeat: u32,
}

/// What a test run returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRunOutput {
    /// The program's return value (`r0`, truncated to 32 bits by the test
    /// run).
    pub retval: u32,
    /// The kernel's own mean time per run in ns (`bpf_test_timer_leave()`:
    /// time spent / repeat, with preemption off and no system call inside).
    pub duration_ns: u32,
    /// The packet after the last run.
    pub data: Vec<u8>,
    /// The context after the run (empty when none was given).
    pub ctx: Vec<u8>,
}

/// Room for a packet to grow in a test run's output (a program may push
/// headers; the test run also re-pushes the Ethernet header of a socket
/// program).
const DATA_OUT_SLACK: usize = 256;

impl Prog {
    /// Loads `insns` as a program of `prog_type` through the verifier.
    /// On refusal the load is tried again with the verifier's log on, so
    /// the error carries its last lines (the reason), while an accepted
    /// program never pays for a log.
    pub fn load(prog_type: ProgType, insns: &[ebpf::Insn]) -> Result<Prog, BpfError> {
        if insns.len() > MAX_INSNS {
            return Err(BpfError::TooLong { len: insns.len(), max: MAX_INSNS });
        }
        let bytes = ebpf::encode(insns);
        let name = b"bpfconv";
        match sys::bpf::prog_load(prog_type.raw(), &bytes, LICENSE, name, &mut []) {
            Ok(fd) => Ok(Prog { fd, prog_type, len: insns.len() }),
            Err(errno @ (libc::EPERM | libc::ENOSYS)) => Err(BpfError::Unavailable { prog_type, errno }),
            Err(first) => {
                let mut log = vec![0u8; LOG_BYTES];
                // A verdict that differs with the log on (it should not)
                // is reported as the first attempt's errno with that log.
                let errno = match sys::bpf::prog_load(prog_type.raw(), &bytes, LICENSE, name, &mut log) {
                    Ok(fd) => return Ok(Prog { fd, prog_type, len: insns.len() }),
                    Err(libc::ENOSPC) => first,
                    Err(e) => e,
                };
                Err(BpfError::Rejected { prog_type, len: insns.len(), errno, log: log_tail(&log) })
            }
        }
    }

    /// The program's type.
    pub fn prog_type(&self) -> ProgType {
        self.prog_type
    }

    /// How many instructions were loaded.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: the kernel refuses empty programs.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs the program with `BPF_PROG_TEST_RUN`.
    pub fn test_run(&self, run: &TestRun<'_>) -> Result<TestRunOutput, BpfError> {
        let mut data = vec![0u8; run.data.len() + DATA_OUT_SLACK];
        let mut ctx = vec![0u8; run.ctx.map_or(0, <[u8]>::len)];
        let r = sys::bpf::prog_test_run(&self.fd, run.data, &mut data, run.ctx, &mut ctx, run.repeat)
            .map_err(|errno| BpfError::TestRun { prog_type: self.prog_type, errno })?;
        data.truncate(r.data_size_out as usize);
        ctx.truncate(r.ctx_size_out as usize);
        Ok(TestRunOutput { retval: r.retval, duration_ns: r.duration_ns, data, ctx })
    }

    /// The program's return value on `data` (one run, no context, the
    /// packet not copied back): the cheap call a differential loop makes.
    pub fn retval(&self, data: &[u8]) -> Result<u32, BpfError> {
        sys::bpf::prog_test_run(&self.fd, data, &mut [], None, &mut [], 1)
            .map(|r| r.retval)
            .map_err(|errno| BpfError::TestRun { prog_type: self.prog_type, errno })
    }
}

/// The last [`LOG_TAIL_LINES`] lines of a NUL-terminated log buffer.
fn log_tail(log: &[u8]) -> String {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(log.get(..end).unwrap_or_default());
    let skip = text.lines().count().saturating_sub(LOG_TAIL_LINES);
    text.lines().skip(skip).collect::<Vec<_>>().join("\n")
}

/// Whether this process can load and test-run an XDP program (the
/// strictest of the types here: it needs `CAP_NET_ADMIN` besides
/// `CAP_BPF`). Callers skip through the test suites' skip helper when
/// this fails.
pub fn available() -> Result<(), BpfError> {
    let pass = [ebpf::Insn::new(0xb7, 0, 0, 0, 2), ebpf::Insn::new(0x95, 0, 0, 0, 0)];
    let prog = Prog::load(ProgType::Xdp, &pass)?;
    match prog.test_run(&TestRun { data: &[0u8; 64], ctx: None, repeat: 1 })?.retval {
        2 => Ok(()),
        _ => Err(BpfError::TestRun { prog_type: ProgType::Xdp, errno: libc::EIO }),
    }
}
