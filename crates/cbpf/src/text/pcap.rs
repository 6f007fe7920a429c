//! libpcap's `tcpdump -d` listing, output only.

use crate::insn::Insn;
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
    let (op, operand): (&str, String) = match insn.code {
        RET_K => ("ret", format!("#{sk}")),
        RET_A => ("ret", String::new()),
        LD_W_ABS => ("ld", abs_operand(k)),
        LD_H_ABS => ("ldh", abs_operand(k)),
        LD_B_ABS => ("ldb", abs_operand(k)),
        LD_W_LEN => ("ld", "#pktlen".to_string()),
        LDX_W_LEN => ("ldx", "#pktlen".to_string()),
        LD_W_IND => ("ld", format!("[x + {sk}]")),
        LD_H_IND => ("ldh", format!("[x + {sk}]")),
        LD_B_IND => ("ldb", format!("[x + {sk}]")),
        LD_IMM => ("ld", format!("#0x{k:x}")),
        LDX_IMM => ("ldx", format!("#0x{k:x}")),
        LDX_B_MSH => ("ldxb", format!("4*([{sk}]&0xf)")),
        LD_MEM => ("ld", format!("M[{sk}]")),
        LDX_MEM => ("ldx", format!("M[{sk}]")),
        ST => ("st", format!("M[{sk}]")),
        STX => ("stx", format!("M[{sk}]")),
        JMP_JA => ("ja", format!("{}", (n as u32).wrapping_add(1).wrapping_add(k) as i32)),
        JMP_JGT_K => ("jgt", format!("#0x{k:x}")),
        JMP_JGE_K => ("jge", format!("#0x{k:x}")),
        JMP_JEQ_K => ("jeq", format!("#0x{k:x}")),
        JMP_JSET_K => ("jset", format!("#0x{k:x}")),
        JMP_JGT_X => ("jgt", "x".to_string()),
        JMP_JGE_X => ("jge", "x".to_string()),
        JMP_JEQ_X => ("jeq", "x".to_string()),
        JMP_JSET_X => ("jset", "x".to_string()),
        ALU_ADD_X => ("add", "x".to_string()),
        ALU_SUB_X => ("sub", "x".to_string()),
        ALU_MUL_X => ("mul", "x".to_string()),
        ALU_DIV_X => ("div", "x".to_string()),
        ALU_MOD_X => ("mod", "x".to_string()),
        ALU_AND_X => ("and", "x".to_string()),
        ALU_OR_X => ("or", "x".to_string()),
        ALU_XOR_X => ("xor", "x".to_string()),
        ALU_LSH_X => ("lsh", "x".to_string()),
        ALU_RSH_X => ("rsh", "x".to_string()),
        ALU_ADD_K => ("add", format!("#{sk}")),
        ALU_SUB_K => ("sub", format!("#{sk}")),
        ALU_MUL_K => ("mul", format!("#{sk}")),
        ALU_DIV_K => ("div", format!("#{sk}")),
        ALU_MOD_K => ("mod", format!("#{sk}")),
        ALU_AND_K => ("and", format!("#0x{k:x}")),
        ALU_OR_K => ("or", format!("#0x{k:x}")),
        ALU_XOR_K => ("xor", format!("#0x{k:x}")),
        ALU_LSH_K => ("lsh", format!("#{sk}")),
        ALU_RSH_K => ("rsh", format!("#{sk}")),
        ALU_NEG => ("neg", String::new()),
        MISC_TAX => ("tax", String::new()),
        MISC_TXA => ("txa", String::new()),
        code => ("unimp", format!("0x{code:x}")),
    };
    let is_cond_jump = insn.code & 0x07 == BPF_JMP && insn.code & 0xf0 != BPF_JA;
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
