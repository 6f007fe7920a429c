//! Classic BPF filters as eBPF programs for a hook: XDP, tc (`sched_cls`)
//! and socket programs that the Linux 6.18 verifier accepts and that
//! return, on every packet, what the classic filter returns; and the
//! same code as a fragment to splice into a larger program
//! ([`fragment`]).
//!
//! ```text
//! cbpf::Program ─► analysis (reachable pcs, frame offsets, X's range, guard plan)
//!               ─► codegen (one generator; a Layout per target / fragment) ─► Vec<ebpf::Insn>
//! ```
//!
//! This is the second code generator beside the kernel mirror
//! (`convert`, which builds the kernel's private form byte for byte and
//! stays a mirror); both build their instructions with
//! [`ebpf::filter_h`]'s constructors.
//!
//! What each target sees and returns:
//!
//! | target | packet | loads | returns |
//! |---|---|---|---|
//! | [`Target::Xdp`] | the frame from its MAC header (`xdp_md.data`) | direct access behind guards | `XDP_PASS` for a non-zero classic result, `XDP_DROP` for 0; with [`Verdict::Value`] the classic value |
//! | [`Target::Tc`] | the frame from its MAC header (`__sk_buff.data`); non-linear bytes are pulled in when a guard fails | direct access behind guards | `TC_ACT_OK` / `TC_ACT_SHOT`; or the value |
//! | [`Target::Socket`] | `skb->data` at the network header, a 14-byte Ethernet header before it (`BPF_PROG_TEST_RUN`, a receive path that pulled the MAC header) | `LD_ABS`/`LD_IND` at `SKF_LL_OFF + k`: frame offsets mean the same bytes as in XDP and tc | the value (the bytes to keep) |
//!
//! Classic semantics kept on every target: A and X start at 0; a load
//! that fails (past the frame, or in no `SKF_*_OFF` region) makes the
//! filter return 0; `div x`/`mod x` with X = 0 return 0; `M[]` is 16 words
//! on the stack; negative offsets (`SKF_NET_OFF`, `SKF_LL_OFF`) read what
//! they read in the kernel; ancillary loads read the hook's context
//! ([`ancillary`]) or are refused with a typed error.
//!
//! ```
//! use hook::{Options, Target, Verdict};
//! // tcpdump -dd 'ip': ldh [12]; jeq #0x800 jt 2 jf 3; ret #262144; ret #0
//! let insns = [
//!     cbpf::Insn::stmt(0x28, 12),
//!     cbpf::Insn::jump(0x15, 0x800, 0, 1),
//!     cbpf::Insn::stmt(0x06, 0x40000),
//!     cbpf::Insn::stmt(0x06, 0),
//! ];
//! let program = cbpf::validate(&insns, cbpf::Mode::Socket)?;
//! let xdp = hook::convert(&program, &Options::new(Target::Xdp))?;
//! assert_eq!(xdp.guards.as_ref().map(|g| g.len()), Some(1)); // one guard of 14 bytes
//! let text = hook::listing(&program, &xdp);
//! assert!(text.contains("if r2 > r9 goto"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Deviations
//! - Direct access (xdp, tc, fragments): the network header is at frame
//!   offset 14 (`SKF_NET_OFF`), and a load that ends past offset 65535
//!   fails (the verifier tracks packet ranges up to `MAX_PACKET_OFF`).
//! - Socket: a frame offset of 1 MiB or more fails (the `SKF_LL_OFF`
//!   window is 1 MiB); `ld len` adds 14 to `skb->len`.
//! - tc: a guard that fails on a non-linear skb pulls the bytes with
//!   `bpf_skb_pull_data()`, which makes the head writable (a cloned skb's
//!   head is copied); if that fails (no memory) the filter returns 0.
//! - `SKF_AD_IFINDEX` on an skb without a device reads 0 where the
//!   classic program returns A (no hook runs on such an skb).

use std::fmt;
use std::ops::Range;

use ebpf::opcode::{R0, R2, R3, R6, R7, R8, R9};
use ebpf::Insn;

pub mod analysis;
pub mod ancillary;
mod codegen;
pub mod fragment;

pub use analysis::GuardPlan;
pub use ancillary::Ancillary;
pub use fragment::Fragment;

use codegen::{Ending, Layout, Packet, Pull};

/// The hook a program is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// `BPF_PROG_TYPE_XDP`.
    Xdp,
    /// `BPF_PROG_TYPE_SCHED_CLS` (tc's `cls_bpf`, direct action).
    Tc,
    /// `BPF_PROG_TYPE_SOCKET_FILTER` (`SO_ATTACH_BPF`).
    Socket,
}

impl Target {
    /// Every target, in the order tables print them.
    pub const ALL: [Target; 3] = [Target::Xdp, Target::Tc, Target::Socket];

    /// `xdp`, `tc`, `socket`: also the ELF section libbpf loads it from.
    pub const fn name(self) -> &'static str {
        match self {
            Target::Xdp => "xdp",
            Target::Tc => "tc",
            Target::Socket => "socket",
        }
    }

    /// The return value for "accept" (`true`) or "drop": `XDP_PASS` /
    /// `XDP_DROP` (enum xdp_action), `TC_ACT_OK` / `TC_ACT_SHOT`
    /// (include/uapi/linux/pkt_cls.h); a socket keeps 1 byte or none.
    pub const fn verdict(self, accept: bool) -> i32 {
        match (self, accept) {
            (Target::Xdp, true) => 2,
            (Target::Xdp, false) => 1,
            (Target::Tc, true) => 0,
            (Target::Tc, false) => 2,
            (Target::Socket, true) => 1,
            (Target::Socket, false) => 0,
        }
    }

    /// The article of its name, for messages (`an xdp program`).
    fn article(self) -> &'static str {
        match self {
            Target::Xdp => "an",
            Target::Tc | Target::Socket => "a",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an xdp or tc program returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The hook's action: accept for a non-zero classic result, drop for 0.
    Action,
    /// The classic return value itself (for tests, and callers that map
    /// it themselves); what socket programs always return.
    Value,
}

/// How to convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub target: Target,
    pub verdict: Verdict,
}

impl Options {
    /// `target` with its default verdict: [`Verdict::Action`] for xdp and
    /// tc, [`Verdict::Value`] for socket.
    pub const fn new(target: Target) -> Options {
        let verdict = match target {
            Target::Socket => Verdict::Value,
            Target::Xdp | Target::Tc => Verdict::Action,
        };
        Options { target, verdict }
    }
}

/// Why a filter has no program for a hook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// An ancillary load whose value the hook does not have.
    #[error("pc {pc}: ancillary load {load} has no value in {} {target} program", target.article())]
    NoValue { pc: usize, load: Ancillary, target: Target },
    /// A fragment reads only the packet: no context, no helper calls.
    #[error("pc {pc}: {what} needs the hook's context or a helper call, which a fragment does not make")]
    NotInFragment { pc: usize, what: &'static str },
    /// A jump across more instructions than an eBPF offset holds.
    #[error("pc {pc}: a jump across {distance} instructions does not fit the 16-bit offset")]
    JumpTooFar { pc: usize, distance: i64 },
    /// Seccomp filters convert to the XDP harness only (`--target xdp`).
    #[error("a seccomp filter has no {target} program (only xdp: the packet is the struct seccomp_data)")]
    Seccomp { target: Target },
    /// The seccomp filter's loadable conversion failed.
    #[error("{0}")]
    Loadable(String),
    /// `--verdict action` for a program that returns a value.
    #[error("{0} programs return the filter's value (--verdict value)")]
    VerdictIsValue(&'static str),
    /// A fragment's registers or stack are not usable.
    #[error("fragment: {0}")]
    BadFragment(String),
}

/// A classic program converted for a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooked {
    /// The eBPF program.
    pub insns: Vec<Insn>,
    pub options: Options,
    /// The instructions before the first classic instruction's.
    pub prologue: usize,
    /// The eBPF instructions each classic pc became (`None`: unreachable).
    pub pc_map: Vec<Option<Range<usize>>>,
    /// Where the packet guards are (direct access targets).
    pub guards: Option<GuardPlan>,
}

/// The licence string written into ELF objects (`license` section) and
/// passed to `BPF_PROG_LOAD`: GPL-compatible (`license_is_gpl_compatible()`),
/// so no helper is refused for it. The programs call only helpers any
/// licence may use (`bpf_get_smp_processor_id`, `bpf_get_prandom_u32`,
/// `bpf_skb_pull_data`).
pub const LICENSE: &str = "Dual MIT/GPL";

/// The stack: `M[]` in the 64 bytes below the frame pointer, then tc's
/// slots for A and an offset across `bpf_skb_pull_data()`.
const MEM: i16 = -64;
const A_SLOT: i16 = -72;
const OFFSET_SLOT: i16 = -80;

/// Converts a socket filter for `options.target` (seccomp filters: see
/// [`convert_seccomp`]).
pub fn convert(program: &cbpf::Program, options: &Options) -> Result<Hooked, HookError> {
    if program.mode() == cbpf::Mode::Seccomp {
        return convert_seccomp(program, options);
    }
    use ebpf::filter_h::{ldx_mem, mov32_imm, mov64_reg};
    use ebpf::op::Size;
    let target = options.target;
    if target == Target::Socket && options.verdict == Verdict::Action {
        return Err(HookError::VerdictIsValue("socket"));
    }
    let (start, end) = (R8, R9);
    let direct = Packet::Direct { start, end };
    let (data, data_end) = match target {
        Target::Xdp => (ancillary::XDP_DATA, ancillary::XDP_DATA_END),
        _ => (ancillary::SKB_DATA, ancillary::SKB_DATA_END),
    };
    // ctx in r6, A = r0, X = r7 (as the kernel's conversion has them).
    let mut prologue = vec![mov64_reg(R6, ebpf::opcode::R1)];
    if target != Target::Socket {
        prologue.push(ldx_mem(Size::W, start, R6, data));
        prologue.push(ldx_mem(Size::W, end, R6, data_end));
    }
    prologue.push(mov32_imm(R0, 0));
    prologue.push(mov32_imm(R7, 0));
    let layout = Layout {
        a: R0,
        x: R7,
        t0: R2,
        // The socket layout keeps A in a callee-saved register around LD_ABS.
        t1: if target == Target::Socket { R9 } else { R3 },
        mem: MEM,
        packet: if target == Target::Socket { Packet::LdAbs } else { direct },
        ctx: Some(R6),
        target: Some(target),
        ending: Ending::Return(options.verdict),
        helpers: true,
        pull: (target == Target::Tc).then_some(Pull { a_slot: A_SLOT, offset_slot: OFFSET_SLOT }),
    };
    let generated = codegen::generate(program, &layout, &prologue)?;
    Ok(Hooked {
        insns: generated.insns,
        options: *options,
        prologue: prologue.len(),
        pc_map: generated.pc_map,
        guards: generated.guards,
    })
}

/// A seccomp filter for `--target xdp`: its kernel-exact conversion made
/// loadable ([`mod@convert::loadable`]) behind the seccomp XDP harness
/// ([`convert::loadable::xdp`], the same program the `kernel-jit` engine
/// runs), whose packet is the 64-byte `struct seccomp_data` as the
/// filter's arch lays it out ([`convert::loadable::xdp::packet`]); it
/// returns the filter's value (`--verdict value`: a seccomp action has no
/// XDP verdict). The pc map is the loadable form's.
pub fn convert_seccomp(program: &cbpf::Program, options: &Options) -> Result<Hooked, HookError> {
    use convert::loadable::xdp;
    if options.target != Target::Xdp {
        return Err(HookError::Seccomp { target: options.target });
    }
    if options.verdict == Verdict::Action {
        return Err(HookError::VerdictIsValue("seccomp filters"));
    }
    let converted =
        convert::convert(program, &convert::Options::default()).map_err(|e| HookError::Loadable(e.to_string()))?;
    let loadable = convert::loadable(&converted, program.mode()).map_err(|e| HookError::Loadable(e.to_string()))?;
    let shift = |r: Range<usize>| r.start + xdp::PROLOGUE_LEN..r.end + xdp::PROLOGUE_LEN;
    let pc_map: Vec<Option<Range<usize>>> =
        (0..program.len()).map(|pc| loadable.pc_map.range(cbpf::Pc(pc)).filter(|r| !r.is_empty()).map(shift)).collect();
    let first = pc_map.iter().flatten().next().map_or(xdp::PROLOGUE_LEN, |r| r.start);
    Ok(Hooked { insns: xdp::seccomp(&loadable), options: *options, prologue: first, pc_map, guards: None })
}

/// Each classic instruction followed by the eBPF it became (the style of
/// `convert`'s side-by-side listing), the prologue first and the
/// out-of-line code (tc's slow paths, the `fail` block) last.
pub fn listing(program: &cbpf::Program, hooked: &Hooked) -> String {
    use std::fmt::Write as _;
    let insns = &hooked.insns;
    let mut out = String::new();
    let write_range = |out: &mut String, range: Range<usize>| {
        for epc in range {
            let Some(insn) = insns.get(epc) else { break };
            let hex: Vec<String> = insn.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
            let text = ebpf::listing::format_insn(insn, insns.get(epc + 1));
            let _ = writeln!(out, "{epc:4}: {}  {text}", hex.join(" "));
        }
    };
    let _ = writeln!(out, "      ; {} program ({:?} verdict), prologue", hooked.options.target, hooked.options.verdict);
    write_range(&mut out, 0..hooked.prologue.min(insns.len()));
    let classic = cbpf::text::print_pcap(program.original());
    let mut last = hooked.prologue;
    for (pc, line) in classic.lines().enumerate() {
        match hooked.pc_map.get(pc).cloned().flatten() {
            Some(range) => {
                let guard = hooked.guards.as_ref().and_then(|g| g.guard(pc));
                let note = guard.map(|l| format!("  (guard: {l} bytes)")).unwrap_or_default();
                let _ = writeln!(out, "      ; {line}{note}");
                last = last.max(range.end);
                write_range(&mut out, range);
            }
            None => {
                let _ = writeln!(out, "      ; {line}  (unreachable: not emitted)");
            }
        }
    }
    if last < insns.len() {
        let _ = writeln!(out, "      ; out of line: slow paths, fail");
        write_range(&mut out, last..insns.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip and udp` (`tcpdump -dd` shape) on each target, pinned: one
    /// guard of 24 bytes covers both loads (the path that skips the second
    /// returns 0); tc's failed guard pulls non-linear bytes out of line;
    /// the socket program reads the frame through `SKF_LL_OFF`.
    #[test]
    fn ip_and_udp_on_each_target() {
        let insns = [
            cbpf::Insn::stmt(0x28, 12),
            cbpf::Insn::jump(0x15, 0x800, 0, 3),
            cbpf::Insn::stmt(0x30, 23),
            cbpf::Insn::jump(0x15, 17, 0, 1),
            cbpf::Insn::stmt(0x06, 0x40000),
            cbpf::Insn::stmt(0x06, 0),
        ];
        let program = cbpf::validate(&insns, cbpf::Mode::Socket).unwrap();
        let listing = |target| {
            let hooked = convert(&program, &Options { target, verdict: Verdict::Value }).unwrap();
            ebpf::listing::listing(&hooked.insns)
        };
        // XDP and tc differ in where the packet's bounds come from (pcs 1
        // and 2) and in what a failed guard does (pc 17 on); the filter
        // between is the same.
        let filter = concat!(
            "   3: (b4) w0 = 0\n",
            "   4: (b4) w7 = 0\n",
            "   5: (bf) r2 = r8\n",
            "   6: (07) r2 += 24\n",
            "   7: (2d) if r2 > r9 goto pc+9\n",
            "   8: (69) r0 = *(u16 *)(r8 +12)\n",
            "   9: (dc) r0 = be16 r0\n",
            "  10: (56) if w0 != 0x800 goto pc+4\n",
            "  11: (71) r0 = *(u8 *)(r8 +23)\n",
            "  12: (56) if w0 != 0x11 goto pc+2\n",
            "  13: (b4) w0 = 262144\n",
            "  14: (95) exit\n",
            "  15: (b4) w0 = 0\n",
            "  16: (95) exit\n",
        );
        assert_eq!(
            listing(Target::Xdp),
            [
                "   0: (bf) r6 = r1\n",
                "   1: (61) r8 = *(u32 *)(r6 +0)\n",
                "   2: (61) r9 = *(u32 *)(r6 +4)\n",
                filter,
                "  17: (b4) w0 = 0\n",
                "  18: (95) exit\n",
            ]
            .concat()
        );
        assert_eq!(
            listing(Target::Tc),
            [
                "   0: (bf) r6 = r1\n",
                "   1: (61) r8 = *(u32 *)(r6 +76)\n",
                "   2: (61) r9 = *(u32 *)(r6 +80)\n",
                filter,
                concat!(
                    "  17: (61) r2 = *(u32 *)(r6 +0)\n",
                    "  18: (a6) if w2 < 0x18 goto pc+11\n",
                    "  19: (7b) *(u64 *)(r10 -72) = r0\n",
                    "  20: (bf) r1 = r6\n",
                    "  21: (b4) w2 = 24\n",
                    "  22: (85) call bpf_skb_pull_data#39\n",
                    "  23: (61) r8 = *(u32 *)(r6 +76)\n",
                    "  24: (61) r9 = *(u32 *)(r6 +80)\n",
                    "  25: (79) r0 = *(u64 *)(r10 -72)\n",
                    "  26: (bf) r2 = r8\n",
                    "  27: (07) r2 += 24\n",
                    "  28: (2d) if r2 > r9 goto pc+1\n",
                    "  29: (05) goto pc-22\n",
                    "  30: (b4) w0 = 0\n",
                    "  31: (95) exit\n",
                ),
            ]
            .concat()
        );
        assert_eq!(
            listing(Target::Socket),
            concat!(
                "   0: (bf) r6 = r1\n",
                "   1: (b4) w0 = 0\n",
                "   2: (b4) w7 = 0\n",
                "   3: (28) r0 = *(u16 *)skb[-2097140]\n",
                "   4: (56) if w0 != 0x800 goto pc+4\n",
                "   5: (30) r0 = *(u8 *)skb[-2097129]\n",
                "   6: (56) if w0 != 0x11 goto pc+2\n",
                "   7: (b4) w0 = 262144\n",
                "   8: (95) exit\n",
                "   9: (b4) w0 = 0\n",
                "  10: (95) exit\n",
            )
        );
    }

    #[test]
    fn verdicts_and_the_typed_error() {
        let program = cbpf::validate(&[cbpf::Insn::stmt(0x06, 7)], cbpf::Mode::Socket).unwrap();
        let xdp = convert(&program, &Options::new(Target::Xdp)).unwrap();
        assert_eq!(ebpf::listing::listing(&xdp.insns[xdp.prologue..]), "   0: (b4) w0 = 2\n   1: (95) exit\n");
        assert_eq!(
            convert(&program, &Options { target: Target::Socket, verdict: Verdict::Action }),
            Err(HookError::VerdictIsValue("socket"))
        );
        // ld #pkttype at pc 1.
        let pkttype = [cbpf::Insn::stmt(0x00, 0), cbpf::Insn::stmt(0x20, 0xffff_f004), cbpf::Insn::stmt(0x16, 0)];
        let program = cbpf::validate(&pkttype, cbpf::Mode::Socket).unwrap();
        let e = convert(&program, &Options::new(Target::Xdp)).unwrap_err();
        assert_eq!(e.to_string(), "pc 1: ancillary load SKF_AD_PKTTYPE has no value in an xdp program");
        assert!(convert(&program, &Options::new(Target::Tc)).is_ok());
    }
}
