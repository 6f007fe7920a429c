//! Side-by-side listings: each classic instruction followed by the eBPF
//! instructions the converter made of it.
//!
//! The eBPF side is the kernel's own text (`print_bpf_insn()`, via
//! [`ebpf::listing`]) preceded by the 8 raw bytes, so a listing can be diffed
//! against `bpftool prog dump xlated opcodes` and shows the fields the text
//! hides (the `src_reg = 7` the kernel copies into ALU-with-constant
//! instructions, for example):
//!
//! ```text
//!       ; prologue
//!    0: ac 00 00 00 00 00 00 00  (ac) w0 ^= w0
//!    1: ac 77 00 00 00 00 00 00  (ac) w7 ^= w7
//!    2: bf 16 00 00 00 00 00 00  (bf) r6 = r1
//!       ; 0: ld [4]
//!    3: 61 60 04 00 00 00 00 00  (61) r0 = *(u32 *)(r6 +4)
//! ```
//!
//! The classic side is printed in the style of `tcpdump -d` (absolute jump
//! targets, `jt N jf M`) with bpf_asm's names for ancillary loads, from the
//! program as the user wrote it ([`cbpf::Program::original`]): seccomp's
//! internal rewrites (`ld [k]` → `LDX|W|ABS`) are shown as written.

use std::fmt::Write as _;

use cbpf::opcode as c;

use crate::filter::Converted;

/// The side-by-side listing of `prog` and its conversion `conv`.
///
/// Every line ends in `\n`. Classic instructions are comment lines
/// `      ; PC: TEXT`; eBPF lines are `EPC: BYTES  TEXT` with the index
/// right-aligned in 4 columns like bpftool.
pub fn side_by_side(prog: &cbpf::Program, conv: &Converted) -> String {
    let mut out = String::new();
    let insns = &conv.insns;
    let write_range = |out: &mut String, range: std::ops::Range<usize>| {
        for epc in range {
            let Some(insn) = insns.get(epc) else { break };
            let bytes = insn.to_bytes();
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let text = ebpf::listing::format_insn_with(insn, insns.get(epc + 1), ebpf::listing::skb_helper_name);
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{epc:4}: {}  {text}", hex.join(" "));
        }
    };
    let prologue = conv.pc_map.prologue_len();
    let _ = writeln!(out, "      ; prologue");
    write_range(&mut out, 0..prologue);
    for (pc, insn) in prog.original().iter().enumerate() {
        let _ = writeln!(out, "      ; {pc}: {}", classic_text(insn, pc));
        if let Some(range) = conv.pc_map.range(cbpf::Pc(pc)) {
            write_range(&mut out, range);
        }
    }
    out
}

/// bpf_asm's name for an ancillary offset `x` (`k - SKF_AD_OFF`), where it has one.
fn ancillary_name(x: u32) -> Option<&'static str> {
    Some(match x {
        c::SKF_AD_PROTOCOL => "proto",
        c::SKF_AD_PKTTYPE => "type",
        c::SKF_AD_IFINDEX => "ifidx",
        c::SKF_AD_NLATTR => "nla",
        c::SKF_AD_NLATTR_NEST => "nlan",
        c::SKF_AD_MARK => "mark",
        c::SKF_AD_QUEUE => "queue",
        c::SKF_AD_HATYPE => "hatype",
        c::SKF_AD_RXHASH => "rxhash",
        c::SKF_AD_CPU => "cpu",
        c::SKF_AD_VLAN_TAG => "vlan_tci",
        c::SKF_AD_VLAN_TAG_PRESENT => "vlan_avail",
        c::SKF_AD_PAY_OFFSET => "poff",
        c::SKF_AD_RANDOM => "rand",
        c::SKF_AD_VLAN_TPID => "vlan_tpid",
        _ => return None,
    })
}

/// One classic instruction at index `pc`, `tcpdump -d` style. Codes outside
/// the classic set print as `.word 0xCODE jt jf k`.
pub fn classic_text(insn: &cbpf::Insn, pc: usize) -> String {
    use cbpf::{Op, Src};
    let Some(op) = insn.op() else {
        return format!(".word {:#06x} {} {} {:#x}", insn.code, insn.jt, insn.jf, insn.k);
    };
    let size_prefix = |size: cbpf::Size| match size {
        cbpf::Size::W => "ld",
        cbpf::Size::H => "ldh",
        cbpf::Size::B => "ldb",
    };
    let operand = |src: Src, k: u32| match src {
        Src::K => format!("#{k:#x}"),
        Src::X => "x".to_owned(),
    };
    match op {
        Op::LdImm { k } => format!("ld #{k:#x}"),
        Op::LdxImm { k } => format!("ldx #{k:#x}"),
        Op::LdMem { k } => format!("ld M[{k}]"),
        Op::LdxMem { k } => format!("ldx M[{k}]"),
        Op::St { k } => format!("st M[{k}]"),
        Op::Stx { k } => format!("stx M[{k}]"),
        Op::LdAbs { size, k } => match k.checked_sub(c::SKF_AD_OFF).and_then(ancillary_name) {
            Some(name) => format!("{} #{name}", size_prefix(size)),
            None => format!("{} [{}]", size_prefix(size), offset_text(k)),
        },
        Op::LdInd { size, k } => format!("{} [x + {}]", size_prefix(size), offset_text(k)),
        Op::LdLen => "ld #len".to_owned(),
        Op::LdxLen => "ldx #len".to_owned(),
        Op::LdxMsh { k } => format!("ldxb 4*([{}]&0xf)", offset_text(k)),
        Op::LdxAbsSeccomp { k } => format!("ldx_abs [{k}] (seccomp-internal 0x21)"),
        Op::Alu { op, src, k } => format!("{} {}", op.mnemonic(), operand(src, k)),
        Op::Neg => "neg".to_owned(),
        Op::Ja { k } => format!("ja {}", pc as u64 + 1 + u64::from(k)),
        Op::Jmp { op, src, k, jt, jf } => format!(
            "{} {} jt {} jf {}",
            op.mnemonic(),
            operand(src, k),
            pc + 1 + usize::from(jt),
            pc + 1 + usize::from(jf)
        ),
        Op::RetK { k } => format!("ret #{k:#x}"),
        Op::RetA => "ret a".to_owned(),
        Op::Tax => "tax".to_owned(),
        Op::Txa => "txa".to_owned(),
    }
}

/// A packet offset: decimal when small, hex (as u32) for the negative bases.
fn offset_text(k: u32) -> String {
    if k < 0x1_0000 {
        k.to_string()
    } else {
        format!("{k:#x}")
    }
}
