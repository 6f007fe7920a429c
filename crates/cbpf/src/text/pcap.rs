//! libpcap's `tcpdump -d` listing, output only.

use crate::insn::{AluOp, Insn, Op, Size, Src};
use crate::opcode::*;

/// libpcap's names for ancillary loads on Linux builds (`offsets[]` in
/// bpf_image.c), indexed by offset from `SKF_AD_OFF`.
const PCAP_ANCILLARY: [(u32, &str); 16] = [
    (SKF_AD_PROTOCOL, "proto"),
    (SKF_AD_PKTTYPE, "type"),
    (SKF_AD_IFINDEX, "ifidx"),
    (SKF_AD_NLATTR, "nla"),
    (SKF_AD_NLATTR_NEST, "nlan"),
    (SKF_AD_MARK, "mark"),
    (SKF_AD_QUEUE, "queue"),
    (SKF_AD_HATYPE, "hatype"),
    (SKF_AD_RXHASH, "rxhash"),
    (SKF_AD_CPU, "cpu"),
    (SKF_AD_ALU_XOR_X, "xor_x"),
    (SKF_AD_VLAN_TAG, "vlan_tci"),
    (SKF_AD_VLAN_TAG_PRESENT, "vlanp"),
    (SKF_AD_PAY_OFFSET, "poff"),
    (SKF_AD_RANDOM, "random"),
    (SKF_AD_VLAN_TPID, "vlan_tpid"),
];

/// `bpf_print_abs_load_operand()`: `[proto]` for a known ancillary offset,
/// else the offset as a signed decimal.
fn abs_operand(k: u32) -> String {
    let name =
        k.checked_sub(SKF_AD_OFF).and_then(|x| PCAP_ANCILLARY.iter().find(|&&(off, _)| off == x)).map(|&(_, n)| n);
    match name {
        Some(n) => format!("[{n}]"),
        None => format!("[{}]", k as i32),
    }
}

/// One line of the listing: mirrors `bpf_image()` in libpcap's bpf_image.c
/// (libpcap 1.10+, built on Linux so ancillary loads print symbolically).
///
/// # Deviations
/// None known. `%d` conversions of the unsigned `k` print it as signed, as
/// C does (`ret #-1`); unknown codes print as `unimp 0xNN`.
fn image(insn: Insn, n: usize) -> String {
    let k = insn.k;
    let sk = k as i32;
    let load = |size: Size| match size {
        Size::W => "ld",
        Size::H => "ldh",
        Size::B => "ldb",
    };
    // The typed view, except the seccomp-internal 0x21, which libpcap does
    // not know.
    let op = insn.op().filter(|op| !matches!(op, Op::LdxAbsSeccomp { .. }));
    let (op, operand): (&str, String) = match op {
        Some(Op::RetK { .. }) => ("ret", format!("#{sk}")),
        Some(Op::RetA) => ("ret", String::new()),
        Some(Op::LdAbs { size, .. }) => (load(size), abs_operand(k)),
        Some(Op::LdLen) => ("ld", "#pktlen".to_string()),
        Some(Op::LdxLen) => ("ldx", "#pktlen".to_string()),
        Some(Op::LdInd { size, .. }) => (load(size), format!("[x + {sk}]")),
        Some(Op::LdImm { .. }) => ("ld", format!("#0x{k:x}")),
        Some(Op::LdxImm { .. }) => ("ldx", format!("#0x{k:x}")),
        Some(Op::LdxMsh { .. }) => ("ldxb", format!("4*([{sk}]&0xf)")),
        Some(Op::LdMem { .. }) => ("ld", format!("M[{sk}]")),
        Some(Op::LdxMem { .. }) => ("ldx", format!("M[{sk}]")),
        Some(Op::St { .. }) => ("st", format!("M[{sk}]")),
        Some(Op::Stx { .. }) => ("stx", format!("M[{sk}]")),
        Some(Op::Ja { .. }) => ("ja", format!("{}", (n as u32).wrapping_add(1).wrapping_add(k) as i32)),
        Some(Op::Jmp { op, src: Src::K, .. }) => (op.mnemonic(), format!("#0x{k:x}")),
        Some(Op::Jmp { op, src: Src::X, .. }) => (op.mnemonic(), "x".to_string()),
        Some(Op::Alu { op, src: Src::X, .. }) => (op.mnemonic(), "x".to_string()),
        // bpf_image() prints the bitwise operands in hex, the others signed.
        Some(Op::Alu { op: op @ (AluOp::And | AluOp::Or | AluOp::Xor), src: Src::K, .. }) => {
            (op.mnemonic(), format!("#0x{k:x}"))
        }
        Some(Op::Alu { op, src: Src::K, .. }) => (op.mnemonic(), format!("#{sk}")),
        Some(Op::Neg) => ("neg", String::new()),
        Some(Op::Tax) => ("tax", String::new()),
        Some(Op::Txa) => ("txa", String::new()),
        Some(Op::LdxAbsSeccomp { .. }) | None => ("unimp", format!("0x{:x}", insn.code)),
    };
    // As bpf_image() does, an unknown code of class JMP still prints its targets.
    let is_cond_jump = insn.has_jump_targets();
    if is_cond_jump {
        format!(
            "({n:03}) {op:<8} {operand:<16} jt {}\tjf {}",
            n + 1 + usize::from(insn.jt),
            n + 1 + usize::from(insn.jf)
        )
    } else if operand.is_empty() {
        format!("({n:03}) {op}")
    } else {
        format!("({n:03}) {op:<8} {operand}")
    }
}

/// Prints `insns` as `tcpdump -d` does (libpcap `bpf_dump()` with option 1):
/// one `bpf_image()` line per instruction, jump targets as absolute indices.
///
/// Output only: nothing reads this format back.
pub fn print_pcap(insns: &[Insn]) -> String {
    let mut out = String::new();
    for (n, &insn) in insns.iter().enumerate() {
        out.push_str(&image(insn, n));
        out.push('\n');
    }
    out
}
