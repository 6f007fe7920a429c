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

/// `sizeof(struct __sk_buff)` (include/uapi/linux/bpf.h, Linux 6.18): the
/// context of a socket or tc test run.
pub const SK_BUFF_SIZE: usize = 192;
/// `offsetof(struct __sk_buff, mark)`.
const SK_BUFF_MARK: usize = 8;

/// A `struct __sk_buff` context for a socket or tc test run that sets
/// `skb->mark`, the one field classic filters read that
/// `convert___skb_to_skb()` (net/bpf/test_run.c) takes from the context;
/// every other field it takes (priority, ifindex, cb, tstamp, ...) stays 0,
/// its default.
pub fn skb_ctx(mark: u32) -> [u8; SK_BUFF_SIZE] {
    let mut ctx = [0u8; SK_BUFF_SIZE];
    if let Some(field) = ctx.get_mut(SK_BUFF_MARK..SK_BUFF_MARK + 4) {
        field.copy_from_slice(&mark.to_ne_bytes());
    }
    ctx
}

/// `ETH_HLEN`: the shortest packet a test run takes (`bpf_test_init()`).
pub const MIN_PACKET: usize = 14;

/// The longest packet a test run of `prog_type` takes whole, on 4 KiB
/// pages: `bpf_prog_test_run_skb()` refuses more than `PAGE_SIZE` less
/// `NET_SKB_PAD + NET_IP_ALIGN` (64 + 0 on x86-64) of headroom and the
/// aligned `struct skb_shared_info` (320) of tailroom;
/// `bpf_prog_test_run_xdp()` puts what exceeds `PAGE_SIZE` less
/// `XDP_PACKET_HEADROOM` (256) and that tailroom into fragments, which a
/// program loaded without `BPF_F_XDP_HAS_FRAGS` does not see.
pub fn max_packet(prog_type: ProgType) -> usize {
    const PAGE: usize = 4096;
    const SHARED_INFO: usize = 320;
    match prog_type {
        ProgType::Xdp => PAGE - 256 - SHARED_INFO,
        ProgType::SocketFilter | ProgType::SchedCls => PAGE - 64 - SHARED_INFO,
    }
}

/// Why a test run of `prog_type` refuses `frame` (`EINVAL`), or `None`
/// when it takes it whole: shorter than [`MIN_PACKET`], longer than
/// [`max_packet`], or (socket and tc) an IPv4 or IPv6 frame too short for
/// its IP header (`bpf_prog_test_run_skb()` reads the addresses for its
/// socket; since the stable fix "bpf: reject short IPv4/IPv6 inputs in
/// bpf_prog_test_run_skb", in Linux 6.18.y, it refuses such frames).
pub fn test_run_refuses(prog_type: ProgType, frame: &[u8]) -> Option<String> {
    let len = frame.len();
    if len < MIN_PACKET {
        return Some(format!("{prog_type} test runs take at least {MIN_PACKET} bytes, not {len}"));
    }
    if len > max_packet(prog_type) {
        return Some(format!("{prog_type} test runs take at most {} bytes whole, not {len}", max_packet(prog_type)));
    }
    if prog_type != ProgType::Xdp {
        let ip_header = match frame.get(12..14) {
            Some([0x08, 0x00]) => 20,
            Some([0x86, 0xdd]) => 40,
            _ => 0,
        };
        if len < MIN_PACKET + ip_header {
            return Some(format!(
                "{prog_type} test runs refuse an IP frame shorter than its {ip_header}-byte header ({len} bytes)"
            ));
        }
    }
    None
}

/// The loopback device's `ifindex`: the device of every test run here
/// (no context names another).
pub const LOOPBACK_IFINDEX: i32 = 1;
/// `ARPHRD_LOOPBACK` (include/uapi/linux/if_arp.h): the loopback's `dev->type`.
const ARPHRD_LOOPBACK: u16 = 772;

/// The `sk_buff` a socket or tc test run builds around `frame`, as the
/// classic interpreter models one: what a classic filter would read of it.
///
/// Mirrors `bpf_prog_test_run_skb()` (net/bpf/test_run.c) and
/// `eth_type_trans()` / `eth_skb_pkt_type()` (net/ethernet/eth.c,
/// include/linux/etherdevice.h), Linux 6.18: the device is the loopback
/// (its address 00:00:00:00:00:00), the MAC header at the frame, the
/// network header 14 bytes in; `protocol` is the EtherType when it is at
/// least `ETH_P_802_3_MIN` (0x600), else `ETH_P_802_3` for an IPX-style
/// 0xFFFF payload and `ETH_P_802_2` otherwise; `pkt_type` is
/// `PACKET_HOST` for the loopback's own address (all zeros),
/// `PACKET_MULTICAST` for every group address (the loopback's broadcast
/// address is all zeros too, so ff:ff:ff:ff:ff:ff is not
/// `PACKET_BROADCAST` there) and `PACKET_OTHERHOST` for the rest; `mark`
/// from the context ([`skb_ctx`]); queue, hash and VLAN fields 0 (nothing
/// sets them). The frame is at least [`MIN_PACKET`]
/// bytes (shorter ones are refused).
///
/// # Deviations
/// CPU and random values are left 0: no test run can pin them.
pub fn test_run_skb(frame: &[u8], mark: u32) -> cbpf::Skb<'_> {
    const ETH_P_802_3_MIN: u16 = 0x0600;
    const ETH_P_802_3: u16 = 0x0001;
    const ETH_P_802_2: u16 = 0x0004;
    let be16 = |at: usize| match frame.get(at..at + 2) {
        Some(&[hi, lo]) => Some(u16::from_be_bytes([hi, lo])),
        _ => None,
    };
    let h_proto = be16(12).unwrap_or(0);
    let protocol = if h_proto >= ETH_P_802_3_MIN {
        h_proto
    } else if be16(14) == Some(0xffff) {
        ETH_P_802_3
    } else {
        ETH_P_802_2
    };
    // eth_skb_pkt_type() against the loopback, whose `dev_addr` and
    // `broadcast` are both all zeros (gen_lo_setup() sets neither): a
    // destination of zeros is the device's own, and no group address,
    // ff:ff:ff:ff:ff:ff included, equals its broadcast address, so a test
    // run never sees PACKET_BROADCAST.
    let dest = frame.get(..6).unwrap_or(&[]);
    let pkt_type = if dest.iter().all(|&b| b == 0) {
        0 // PACKET_HOST
    } else if dest.first().is_some_and(|b| b & 1 != 0) {
        2 // PACKET_MULTICAST
    } else {
        3 // PACKET_OTHERHOST
    };
    cbpf::Skb {
        protocol,
        pkt_type,
        dev: Some(cbpf::NetDevice { ifindex: LOOPBACK_IFINDEX, hatype: ARPHRD_LOOPBACK }),
        mark,
        network_offset: MIN_PACKET.min(frame.len()),
        mac_offset: Some(0),
        // Nothing else is set: queue, hash and VLAN stay 0, as on the
        // AF_UNIX path's fresh skb.
        ..crate::socket::unix_dgram_skb(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_types_have_their_bpftool_names() {
        let shown = [ProgType::SocketFilter, ProgType::SchedCls, ProgType::Xdp].map(|t| (t.to_string(), t.raw()));
        assert_eq!(shown, [("socket".to_string(), 1), ("tc".to_string(), 3), ("xdp".to_string(), 6)]);
    }

    /// The reason is the last line before the verifier's statistics.
    #[test]
    fn the_reason_skips_the_verifiers_trailer() {
        let log = "0: R1=ctx() R10=fp0\n0: (ac) w0 ^= w0\nR0 !read_ok\n\
                   processed 1 insns (limit 1000000) max_states_per_insn 0 total_states 0\n\n\
                   verification time 12 usec\nstack depth 0\n  \n";
        let refused = BpfError::Rejected { prog_type: ProgType::Xdp, len: 2, errno: libc::EACCES, log: log.into() };
        assert_eq!(refused.reason(), Some("R0 !read_ok"));
        for trailer in ["processed 1 insns", "verification time 3 usec", "stack depth 8", " ", ""] {
            assert!(is_log_trailer(trailer), "{trailer:?}");
        }
        assert!(!is_log_trailer("R0 !read_ok"));
        assert_eq!(BpfError::TooLong { len: 2, max: 1 }.reason(), None);
    }
}
