//! Readable listings of eBPF programs, in the text of the kernel verifier log
//! and `bpftool prog dump xlated`.
//!
//! Users diff our listings against the kernel's, so each line is the exact
//! text `print_bpf_insn()` in kernel/bpf/disasm.c (Linux 6.18) prints:
//! `(61) r0 = *(u32 *)(r6 +4)`, `(15) if r0 == 0x3b goto pc+2`,
//! `(b4) w0 = 2147418112`, `(85) call bpf_ktime_get_ns#5`. A whole program is
//! printed the way bpftool does it: `   0: (ac) w0 ^= w0`, one line per
//! instruction, the second slot of a `ld_imm64` folded into the first.
//!
//! ```
//! use ebpf::{listing, Insn};
//! let prog = [Insn::new(0xac, 0, 0, 0, 0), Insn::new(0x95, 0, 0, 0, 0)];
//! assert_eq!(listing::listing(&prog), "   0: (ac) w0 ^= w0\n   1: (95) exit\n");
//! ```

use std::fmt::Write as _;

use crate::abi::skb::helper;
use crate::isa::insn::Insn;
use crate::isa::op::{AluOp, AtomicOp, CallKind, Endian, JmpCond, Op, Operand, Size, Width};
use crate::isa::opcode::{
    BPF_ABS, BPF_ALU, BPF_ALU64, BPF_ATOMIC, BPF_CALL, BPF_DIV, BPF_END, BPF_EXIT, BPF_IMM, BPF_IND, BPF_JA, BPF_JMP,
    BPF_JMP32, BPF_LD, BPF_LDX, BPF_MEM, BPF_MEMSX, BPF_MOD, BPF_MOV, BPF_NEG, BPF_PSEUDO_CALL, BPF_ST, BPF_STX, BPF_X,
};

/// Resolves a helper id to its name, for `call` instructions whose id the
/// kernel's own table does not know (the `cb_call` callback of
/// `struct bpf_insn_cbs`). Return `None` to fall back to `unknown`.
pub type HelperNameFn = fn(i32) -> Option<&'static str>;

/// `BPF_PSEUDO_KFUNC_CALL`: src_reg of a call to a kernel function.
const BPF_PSEUDO_KFUNC_CALL: u8 = 2;
/// `BPF_JCOND` (kernel-internal jump op, used by `may_goto`).
const BPF_JCOND: u8 = 0xe0;
/// `BPF_MAY_GOTO`: src_reg of a `BPF_JCOND`.
const BPF_MAY_GOTO: u8 = 0;
/// `BPF_ADDR_SPACE_CAST`: off of an `addr_space_cast` (`ALU64|MOV|X`).
const BPF_ADDR_SPACE_CAST: i16 = 1;
/// `BPF_NOSPEC` mode of class `BPF_ST` (kernel-internal, not UAPI).
const BPF_NOSPEC: u8 = 0xc0;

/// The kernel's `func_id_str[]` (kernel/bpf/disasm.c, Linux 6.18): the names
/// of the helpers `__BPF_FUNC_MAPPER` in include/uapi/linux/bpf.h defines, one
/// a line in id order after the file's `#` comment lines. Pure data, so it
/// lives in a data file; the list is frozen upstream (new kernel functions
/// are kfuncs).
const FUNC_ID_STR: &str = include_str!("func_id_str.txt");

/// The names of [`FUNC_ID_STR`], in id order.
fn func_id_names() -> impl Iterator<Item = &'static str> {
    FUNC_ID_STR.lines().filter(|line| !line.is_empty() && !line.starts_with('#'))
}

/// Name the kernel prints for helper `id` (`func_id_name()` in kernel/bpf/disasm.c
/// without its `unknown` fallback): `Some("bpf_ktime_get_ns")` for 5.
pub fn kernel_helper_name(id: i32) -> Option<&'static str> {
    usize::try_from(id).ok().and_then(|i| func_id_names().nth(i))
}

/// Names of the socket-filter helpers our converter calls ([`crate::abi::skb::helper`]),
/// the kernel function each id stands for. Use it as the [`HelperNameFn`] when
/// listing converted socket filters: `call bpf_skb_load_helper_32#4099`.
pub fn skb_helper_name(id: i32) -> Option<&'static str> {
    match id {
        helper::SKB_LOAD_8 => Some("bpf_skb_load_helper_8"),
        helper::SKB_LOAD_16 => Some("bpf_skb_load_helper_16"),
        helper::SKB_LOAD_32 => Some("bpf_skb_load_helper_32"),
        helper::SKB_GET_NLATTR => Some("bpf_skb_get_nlattr"),
        helper::SKB_GET_NLATTR_NEST => Some("bpf_skb_get_nlattr_nest"),
        helper::GET_RAW_CPU_ID => Some("bpf_get_raw_cpu_id"),
        helper::SKB_GET_PAY_OFFSET => Some("bpf_skb_get_pay_offset"),
        helper::USER_RND_U32 => Some("bpf_user_rnd_u32"),
        _ => None,
    }
}

/// A [`HelperNameFn`] that knows no extra names.
fn no_helper_names(_: i32) -> Option<&'static str> {
    None
}

/// Formats one instruction as the kernel verifier prints it, without the
/// trailing newline. `next` is the following slot, read only when `insn` is a
/// `ld_imm64` (its high 32 bits). Helper ids outside the kernel's table print
/// as `unknown`; see [`format_insn_with`].
pub fn format_insn(insn: &Insn, next: Option<&Insn>) -> String {
    format_insn_with(insn, next, no_helper_names)
}

/// [`format_insn`] with a resolver for helper ids the kernel table does not
/// name (the kernel consults its table first, then the callback).
///
/// Mirrors `print_bpf_insn()` in kernel/bpf/disasm.c (Linux 6.18), as called by
/// bpftool with `allow_ptr_leaks` true and no `cb_imm`.
///
/// # Deviations
/// - A `ld_imm64` without a second slot (`next` is `None`) prints
///   `(18) BUG_ld_imm64_truncated` where the kernel would read past the end
///   (its verifier rejects such programs before printing).
/// - `BPF_LDX|BPF_MEMSX|BPF_DW` (0x99) prints its size as `s64`; the kernel
///   indexes past the end of `bpf_ldsx_string[]` there.
/// - A `NULL` operator string (ALU ops 0xe0/0xf0, jump ops 0xe0/0xf0) prints
///   `(null)`, as the kernel's `vsnprintf()` does.
/// - The resolver is consulted only for helper calls (src_reg 0 and
///   unknown to the kernel table, or any other non-pseudo src_reg); the
///   kernel's `cb_call` also sees `call pc+N` instructions.
pub fn format_insn_with(insn: &Insn, next: Option<&Insn>, helper_name: HelperNameFn) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_insn(&mut out, insn, next, helper_name);
    out
}

/// A bpftool-style listing: one line per instruction, `% 4d: ` index prefix,
/// every line ending in `\n`. A `ld_imm64` prints once, at its first slot, and
/// the index skips its second slot. Helper ids outside the kernel's table
/// print as `unknown`; see [`listing_with`].
pub fn listing(insns: &[Insn]) -> String {
    listing_with(insns, no_helper_names)
}

/// [`listing`] with a helper-name resolver ([`skb_helper_name`] for
/// converted socket filters).
///
/// Mirrors `dump_xlated_plain()` in tools/bpf/bpftool/xlated_dumper.c
/// (Linux 6.18) without the `opcodes` byte dump.
///
/// # Deviations
/// - Calls print through [`format_insn_with`], not bpftool's `print_call()`
///   (which resolves kernel addresses of JITed programs).
pub fn listing_with(insns: &[Insn], helper_name: HelperNameFn) -> String {
    let mut out = String::new();
    let mut pc = 0;
    while let Some(insn) = insns.get(pc) {
        let next = insns.get(pc + 1);
        let _ = writeln!(out, "{pc:4}: {}", format_insn_with(insn, next, helper_name));
        pc += if Op::is_wide(*insn) { 2 } else { 1 };
    }
    out
}

/// The program as a C initializer of `struct bpf_insn`
/// (include/uapi/linux/bpf.h) named `name`, each record with its listing
/// line as a comment: for a loader written in C
/// (`bpf_prog_load(type, name, license, NAME, n, opts)`).
pub fn c_array(insns: &[Insn], name: &str, helper_name: HelperNameFn) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "/* {} instructions (struct bpf_insn, include/uapi/linux/bpf.h) */", insns.len());
    let _ = writeln!(out, "struct bpf_insn {name}[] = {{");
    for (pc, insn) in insns.iter().enumerate() {
        let _ = writeln!(
            out,
            "\t{{ .code = 0x{:02x}, .dst_reg = {}, .src_reg = {}, .off = {}, .imm = {} }}, /* {pc:4}: {} */",
            insn.code,
            insn.dst(),
            insn.src(),
            insn.off,
            insn.imm,
            format_insn_with(insn, insns.get(pc + 1), helper_name).replace("*/", "* /")
        );
    }
    out.push_str("};\n");
    out
}

/// The body of [`format_insn_with`], writing into an empty `out` (the `BUG_`
/// cases clear the opcode prefix): the [`Op`] printed with the kernel
/// symbols of the op tables, or, for an encoding [`Op::decode`] refuses,
/// the kernel's text for its raw fields ([`write_raw`]).
fn write_insn(out: &mut String, insn: &Insn, next: Option<&Insn>, helper_name: HelperNameFn) -> std::fmt::Result {
    write!(out, "({:02x}) ", insn.code)?;
    match Op::decode(*insn, next.copied()) {
        Ok(op) => write_op(out, &op, insn, helper_name),
        Err(_) => write_raw(out, insn, next, helper_name),
    }
}

/// `print_bpf_insn()` for a decoded instruction. Fields the op does not use
/// are not printed, but for a call, whose name the kernel resolves from the
/// raw `src` and `imm` whatever the opcode (`call %rN` included).
fn write_op(out: &mut String, op: &Op, insn: &Insn, helper_name: HelperNameFn) -> std::fmt::Result {
    match *op {
        Op::Alu { width, op, dst, src } => {
            let r = width.kernel_reg_prefix();
            match src {
                Operand::X(src) => write!(out, "{r}{dst} {} {r}{src}", op.kernel()),
                Operand::K(imm) => write!(out, "{r}{dst} {} {imm}", op.kernel()),
            }
        }
        Op::Neg { width, dst } => {
            let r = width.kernel_reg_prefix();
            write!(out, "{r}{dst} = -{r}{dst}")
        }
        Op::MovSx { width, dst, src, from } => {
            let r = width.kernel_reg_prefix();
            write!(out, "{r}{dst} = ({}){r}{src}", from.kernel_signed())
        }
        Op::End { endian, dst, bits } => {
            let name = match endian {
                Endian::ToLe => "le",
                Endian::ToBe => "be",
                Endian::Swap => "bswap",
            };
            write!(out, "r{dst} = {name}{bits} r{dst}")
        }
        Op::Stx { size, dst, src, off } => write!(out, "*({} *)(r{dst} {off:+}) = r{src}", size.kernel()),
        Op::Atomic { size, op, dst, src, off } => {
            let ty = size.kernel();
            let bits = if size == Size::DW { "64" } else { "" };
            match (op, op.alu()) {
                (_, Some(alu)) if !op.fetches() => {
                    write!(out, "lock *({ty} *)(r{dst} {off:+}) {} r{src}", alu.kernel())
                }
                (_, Some(alu)) => {
                    let name = alu.mnemonic();
                    write!(out, "r{src} = atomic{bits}_fetch_{name}(({ty} *)(r{dst} {off:+}), r{src})")
                }
                (AtomicOp::Cmpxchg, _) => {
                    write!(out, "r0 = atomic{bits}_cmpxchg(({ty} *)(r{dst} {off:+}), r0, r{src})")
                }
                (AtomicOp::Xchg, _) => write!(out, "r{src} = atomic{bits}_xchg(({ty} *)(r{dst} {off:+}), r{src})"),
                (AtomicOp::LoadAcq, _) => write!(out, "r{dst} = load_acquire(({ty} *)(r{src} {off:+}))"),
                _ => write!(out, "store_release(({ty} *)(r{dst} {off:+}), r{src})"),
            }
        }
        Op::St { size, dst, off, imm } => write!(out, "*({} *)(r{dst} {off:+}) = {imm}", size.kernel()),
        Op::Ldx { size, dst, src, off } => write!(out, "r{dst} = *({} *)(r{src} {off:+})", size.kernel()),
        Op::Ldsx { size, dst, src, off } => write!(out, "r{dst} = *({} *)(r{src} {off:+})", size.kernel_signed()),
        Op::LdAbs { size, imm } => write!(out, "r0 = *({} *)skb[{imm}]", size.kernel()),
        Op::LdInd { size, src, imm } => write!(out, "r0 = *({} *)skb[r{src} + {imm}]", size.kernel()),
        Op::LdImm64 { dst, imm } => write!(out, "r{dst} = {imm:#x}"),
        Op::Call { .. } | Op::Callx { .. } => {
            let name = func_get_name(insn, helper_name);
            if insn.src() == BPF_PSEUDO_CALL {
                write!(out, "call pc{name}")
            } else {
                write!(out, "call {name}#{}", insn.imm)
            }
        }
        Op::Ja { off } => write!(out, "goto pc{off:+}"),
        Op::Gotol { imm } => write!(out, "gotol pc{imm:+}"),
        Op::Exit => write!(out, "exit"),
        Op::Jmp { width, cond, dst, src, off } => {
            let r = width.kernel_reg_prefix();
            match src {
                Operand::X(src) => write!(out, "if {r}{dst} {} {r}{src} goto pc{off:+}", cond.kernel()),
                Operand::K(imm) => write!(out, "if {r}{dst} {} {:#x} goto pc{off:+}", cond.kernel(), imm as u32),
            }
        }
    }
}

/// `bpf_alu_string[]`, indexed by `BPF_OP(code) >> 4`: the op table's
/// symbols; `(null)` where the kernel table has a hole.
fn alu_string(op: u8) -> &'static str {
    match op {
        BPF_NEG => "neg",
        BPF_END => "endian",
        _ => AluOp::ALL.into_iter().find(|o| o.bits() == op && o.off() == 0).map_or("(null)", AluOp::kernel),
    }
}

/// `bpf_jmp_string[]`, indexed by `BPF_OP(code) >> 4`: the op table's
/// symbols and `jmp`, `call`, `exit`.
fn jmp_string(op: u8) -> &'static str {
    match op {
        BPF_JA => "jmp",
        BPF_CALL => "call",
        BPF_EXIT => "exit",
        _ => JmpCond::ALL.into_iter().find(|c| c.bits() == op).map_or("(null)", JmpCond::kernel),
    }
}

/// `is_sdiv_smod()`.
fn is_sdiv_smod(insn: &Insn) -> bool {
    let op = insn.code & 0xf0;
    (op == BPF_DIV || op == BPF_MOD) && insn.off == 1
}

/// `is_movsx()`.
fn is_movsx(insn: &Insn) -> bool {
    insn.code & 0xf0 == BPF_MOV && matches!(insn.off, 8 | 16 | 32)
}

/// `is_addr_space_cast()`.
fn is_addr_space_cast(insn: &Insn) -> bool {
    insn.code == (BPF_ALU64 | BPF_MOV | BPF_X) && insn.off == BPF_ADDR_SPACE_CAST
}

/// `__func_get_name()`: the name printed after `call`.
fn func_get_name(insn: &Insn, helper_name: HelperNameFn) -> String {
    if insn.src() == 0 {
        if let Some(name) = kernel_helper_name(insn.imm) {
            return name.to_owned();
        }
    }
    if insn.src() != BPF_PSEUDO_CALL {
        if let Some(name) = helper_name(insn.imm) {
            return name.to_owned();
        }
    }
    match insn.src() {
        BPF_PSEUDO_CALL => format!("{:+}", insn.imm),
        BPF_PSEUDO_KFUNC_CALL => "kernel-function".to_owned(),
        _ => "unknown".to_owned(),
    }
}

/// The [`Op`] the kernel prints an encoding [`Op::decode`] refuses as, if
/// it prints it as one: the instruction read without the field that made
/// it invalid (an out-of-range width, `off` or `imm`, an `X` bit the
/// operation has no form for, an atomic at a size that has none). `None`
/// for what only the kernel's raw printer knows ([`write_raw`]).
fn nearest_op(insn: &Insn, next: Option<&Insn>) -> Option<Op> {
    let code = insn.code;
    let class = insn.class();
    let (dst, src, off, imm) = (insn.dst(), insn.src(), insn.off, insn.imm);
    let (op, mode, size) = (code & 0xf0, code & 0xe0, Size::of(code));
    let x = code & BPF_X == BPF_X;
    let operand = if x { Operand::X(src) } else { Operand::K(imm) };
    Some(match class {
        BPF_ALU | BPF_ALU64 => {
            let width = if class == BPF_ALU { Width::W32 } else { Width::W64 };
            if op == BPF_END {
                let endian = match (width, x) {
                    (Width::W64, _) => Endian::Swap,
                    (Width::W32, true) => Endian::ToBe,
                    (Width::W32, false) => Endian::ToLe,
                };
                Op::End { endian, dst, bits: imm }
            } else if op == BPF_NEG {
                Op::Neg { width, dst }
            } else if is_addr_space_cast(insn) {
                return None;
            } else if x && is_movsx(insn) {
                let from = match off {
                    8 => Size::B,
                    16 => Size::H,
                    _ => Size::W,
                };
                Op::MovSx { width, dst, src, from }
            } else {
                let alu_off = i16::from(is_sdiv_smod(insn));
                let alu = AluOp::ALL.into_iter().find(|a| a.bits() == op && a.off() == alu_off)?;
                Op::Alu { width, op: alu, dst, src: operand }
            }
        }
        BPF_STX if mode == BPF_ATOMIC => Op::Atomic { size, op: AtomicOp::from_bits(imm)?, dst, src, off },
        BPF_ST if mode == BPF_MEM => Op::St { size, dst, off, imm },
        BPF_LDX if mode == BPF_MEM => Op::Ldx { size, dst, src, off },
        BPF_LDX if mode == BPF_MEMSX => Op::Ldsx { size, dst, src, off },
        BPF_LD if mode == BPF_ABS => Op::LdAbs { size, imm },
        BPF_LD if mode == BPF_IND => Op::LdInd { size, src, imm },
        BPF_LD if mode == BPF_IMM && size == Size::DW => {
            Op::LdImm64 { dst, imm: (u64::from(next?.imm as u32) << 32) | u64::from(imm as u32) }
        }
        // `print_bpf_insn()` names any call by its raw `src` and `imm`.
        BPF_JMP | BPF_JMP32 if op == BPF_CALL => Op::Call { kind: CallKind::Helper, imm },
        _ if code == BPF_JMP | BPF_JA => Op::Ja { off },
        _ if code == BPF_JMP32 | BPF_JA => Op::Gotol { imm },
        _ if code == BPF_JMP | BPF_EXIT => Op::Exit,
        BPF_JMP | BPF_JMP32 if !(code == BPF_JMP | BPF_JCOND && src == BPF_MAY_GOTO) => {
            let width = if class == BPF_JMP32 { Width::W32 } else { Width::W64 };
            let cond = JmpCond::ALL.into_iter().find(|c| c.bits() == op)?;
            Op::Jmp { width, cond, dst, src: operand, off }
        }
        _ => return None,
    })
}

/// `print_bpf_insn()` for an encoding [`Op::decode`] refuses (the kernel
/// prints those too), after the opcode prefix: as the op it reads as
/// ([`nearest_op`], printed by [`write_op`]), or the forms only the raw
/// printer has: the holes of the kernel's string tables (`(null)`), its
/// internal instructions (`addr_space_cast`, `nospec`, `may_goto`) and its
/// `BUG_` lines. Cases in the kernel's order.
fn write_raw(out: &mut String, insn: &Insn, next: Option<&Insn>, helper_name: HelperNameFn) -> std::fmt::Result {
    if let Some(op) = nearest_op(insn, next) {
        return write_op(out, &op, insn, helper_name);
    }
    let code = insn.code;
    let class = insn.class();
    let (dst, src, off, imm) = (insn.dst(), insn.src(), insn.off, insn.imm);
    let op = code & 0xf0;
    let mode = code & 0xe0;
    if class == BPF_ALU || class == BPF_ALU64 {
        let r = if class == BPF_ALU { 'w' } else { 'r' };
        if is_addr_space_cast(insn) {
            let (dst_as, src_as) = ((imm as u32) >> 16, imm as u16);
            write!(out, "r{dst} = addr_space_cast(r{src}, {dst_as}, {src_as})")
        } else if code & BPF_X == BPF_X {
            write!(out, "{r}{dst} {} {r}{src}", alu_string(op))
        } else {
            write!(out, "{r}{dst} {} {imm}", alu_string(op))
        }
    } else if class == BPF_STX {
        out.clear();
        write!(out, "BUG_{code:02x}")
    } else if class == BPF_ST {
        if mode == BPF_NOSPEC {
            write!(out, "nospec")
        } else {
            out.clear();
            write!(out, "BUG_st_{code:02x}")
        }
    } else if class == BPF_LDX {
        out.clear();
        write!(out, "BUG_ldx_{code:02x}")
    } else if class == BPF_LD {
        if mode == BPF_IMM && Size::of(code) == Size::DW {
            write!(out, "BUG_ld_imm64_truncated")
        } else {
            out.clear();
            write!(out, "BUG_ld_{code:02x}")
        }
    } else {
        // BPF_JMP or BPF_JMP32: the eight classes are exhausted here.
        let r = if class == BPF_JMP32 { 'w' } else { 'r' };
        if code == BPF_JMP | BPF_JCOND && src == BPF_MAY_GOTO {
            write!(out, "may_goto pc{off:+}")
        } else if code & BPF_X == BPF_X {
            write!(out, "if {r}{dst} {} {r}{src} goto pc{off:+}", jmp_string(op))
        } else {
            write!(out, "if {r}{dst} {} {:#x} goto pc{off:+}", jmp_string(op), imm as u32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn func_id_str_holds_the_212_helper_names_of_6_18() {
        let names: Vec<&str> = func_id_names().collect();
        assert_eq!(names.len(), 212);
        assert_eq!(names.last(), Some(&"bpf_cgrp_storage_delete"));
        assert_eq!(kernel_helper_name(211), Some("bpf_cgrp_storage_delete"));
        for name in &names {
            let rest = name.strip_prefix("bpf_").unwrap_or_else(|| panic!("{name} lacks bpf_"));
            assert!(rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{name}");
        }
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a name stands twice");
    }
}
