//! Disassembler to the bpf_conformance / uBPF assembly syntax of [`crate::asm`].
//!
//! The output re-assembles to the same bytes: `assemble(&disassemble(p)?) == p`.
//! An instruction the syntax cannot express (a non-zero field the
//! instruction does not use, an opcode with no mnemonic) is an error rather
//! than text that would assemble to something else; the kernel-style
//! [`crate::listing`] prints any instruction.
//!
//! ```
//! use ebpf::{asm::assemble, disasm::disassemble};
//! let prog = assemble("mov %r0, 1\njeq %r1, 5, +1\nexit\nexit").unwrap();
//! assert_eq!(disassemble(&prog).unwrap(), "mov %r0, 1\njeq %r1, 5, +1\nexit\nexit\n");
//! ```

use crate::asm::MOVSX_OPS;
use crate::isa::insn::{Insn, Pc};
use crate::isa::op::{reserved_field, AtomicOp, CallKind, Op, OpError, Operand, Size};

/// Why an instruction has no text in the assembly syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DisasmError {
    #[error("instruction {pc}: opcode {code:#04x} has no mnemonic")]
    UnknownOpcode { pc: Pc, code: u8 },
    #[error("instruction {pc}: opcode {code:#04x} has a non-zero unused {field} field")]
    UnusedField { pc: Pc, code: u8, field: &'static str },
    #[error("instruction {pc}: {code:#04x} with {field} = {value} has no mnemonic")]
    UnsupportedVariant { pc: Pc, code: u8, field: &'static str, value: i64 },
    #[error("instruction {pc}: lddw has no valid second slot")]
    TruncatedLddw { pc: Pc },
}

/// Disassembles a whole program, one instruction per line, each ending in
/// `\n`; `lddw` takes one line for its two slots. Jump targets are printed
/// as `+N`/`-N` slot offsets.
///
/// # Errors
/// The first instruction that has no text (see [`DisasmError`]).
pub fn disassemble(insns: &[Insn]) -> Result<String, DisasmError> {
    let mut out = String::new();
    let mut pc = 0;
    while pc < insns.len() {
        let (text, slots) = disassemble_one(insns, pc)?;
        out.push_str(&text);
        out.push('\n');
        pc += slots;
    }
    Ok(out)
}

/// Disassembles the instruction at `pc`, returning its text and how many
/// slots it takes (2 for `lddw`, else 1).
///
/// # Errors
/// See [`DisasmError`]. A `pc` past the end of `insns` is reported as
/// [`DisasmError::TruncatedLddw`].
pub fn disassemble_one(insns: &[Insn], pc: usize) -> Result<(String, usize), DisasmError> {
    let Some(&insn) = insns.get(pc) else {
        return Err(DisasmError::TruncatedLddw { pc: Pc(pc) });
    };
    let at = Pc(pc);
    let code = insn.code;
    let unknown = DisasmError::UnknownOpcode { pc: at, code };
    let variant = |field, value: i64| DisasmError::UnsupportedVariant { pc: at, code, field, value };
    let next = insns.get(pc + 1).copied();
    // The syntax reports a non-zero unused field before an unsupported
    // variant: the error says which family (END, a call) the instruction
    // is, whose unused fields come first.
    if let Err(e) = Op::decode(insn, next) {
        let set = |field: &str| match field {
            "dst" => insn.dst() != 0,
            "src" => insn.src() != 0,
            _ => insn.off != 0,
        };
        if let Some(&field) = e.family().unused_before_variant().iter().find(|f| set(f)) {
            return Err(DisasmError::UnusedField { pc: at, code, field });
        }
    }
    let op = Op::decode(insn, next).map_err(|e| match e {
        OpError::IncompleteLdImm64 | OpError::BadLdImm64SecondSlot => DisasmError::TruncatedLddw { pc: at },
        OpError::BadOffset { off, .. } => variant("off", off.into()),
        // Byte-sized atomics exist only as load-acquire / store-release,
        // which have no text.
        OpError::BadImmediate { .. } if matches!(op_size(insn), Some(Size::B | Size::H)) => unknown.clone(),
        OpError::BadImmediate { imm, .. } => variant("imm", imm.into()),
        OpError::UnsupportedCall { src } => variant("src", src.into()),
        OpError::UnknownOpcode { .. } => unknown.clone(),
    })?;
    match op {
        // `off` of a binary ALU op selects the operation: not an unused field.
        Op::Alu { op: alu, .. } if insn.off != alu.off() => return Err(variant("off", insn.off.into())),
        // The syntax has `lock` forms for 32- and 64-bit atomics only, and
        // none for load-acquire / store-release.
        Op::Atomic { size: Size::B | Size::H, .. } => return Err(unknown),
        Op::Atomic { op: atomic, .. } if atomic.mnemonic().is_none() => {
            return Err(variant("imm", atomic.bits().into()))
        }
        _ => {}
    }
    if let Some(field) = reserved_field(&op, insn) {
        return Err(DisasmError::UnusedField { pc: at, code, field });
    }
    Ok((format_op(&op).ok_or(unknown)?, op.slots()))
}

/// The size of a `BPF_STX | BPF_ATOMIC` instruction, if `insn` is one.
fn op_size(insn: Insn) -> Option<Size> {
    let probe = Insn { imm: AtomicOp::LoadAcq.bits(), ..insn };
    match Op::decode(probe, None) {
        Ok(Op::Atomic { size, .. }) => Some(size),
        _ => None,
    }
}

fn reg(r: u8) -> String {
    format!("%r{r}")
}

/// A 32-bit immediate: small and negative values in decimal, others in hex
/// (both re-assemble to the same bits).
fn imm(value: i32) -> String {
    if (-10..=10).contains(&value) || (value < 0 && value != i32::MIN) {
        value.to_string()
    } else {
        format!("{:#x}", value as u32)
    }
}

/// `[%rN]`, `[%rN+off]`, `[%rN-off]`.
fn mem(r: u8, off: i16) -> String {
    match off {
        0 => format!("[%r{r}]"),
        o if o > 0 => format!("[%r{r}+{o}]"),
        o => format!("[%r{r}{o}]"),
    }
}

/// A jump offset, always signed.
fn target(off: i32) -> String {
    format!("{off:+}")
}

fn operand(src: Operand) -> String {
    match src {
        Operand::K(k) => imm(k),
        Operand::X(r) => reg(r),
    }
}

/// The text of `op`, or `None` if the syntax has no mnemonic for it
/// (load-acquire and store-release).
fn format_op(op: &Op) -> Option<String> {
    Some(match *op {
        Op::Alu { width, op, dst, src } => {
            format!("{}{} {}, {}", op.mnemonic(), width.mnemonic_suffix(), reg(dst), operand(src))
        }
        Op::Neg { width, dst } => format!("neg{} {}", width.mnemonic_suffix(), reg(dst)),
        Op::MovSx { width, dst, src, from } => {
            let (name, ..) = MOVSX_OPS.iter().find(|(_, w, f)| *w == width && *f == from)?;
            format!("{name} {}, {}", reg(dst), reg(src))
        }
        Op::End { endian, dst, bits } => format!("{}{bits} {}", endian.mnemonic(), reg(dst)),
        Op::Ja { off } => format!("ja {}", target(off.into())),
        Op::Gotol { imm } => format!("ja32 {}", target(imm)),
        Op::Jmp { width, cond, dst, src, off } => {
            let suffix = width.mnemonic_suffix();
            format!("{}{suffix} {}, {}, {}", cond.mnemonic(), reg(dst), operand(src), target(off.into()))
        }
        Op::Call { kind: CallKind::Helper, imm: id } => format!("call {}", imm(id)),
        Op::Call { kind: CallKind::Local, imm: rel } => format!("call local {}", target(rel)),
        Op::Call { kind: CallKind::Kfunc, imm: id } => format!("call runtime {}", imm(id)),
        Op::Callx { dst } => format!("call {}", reg(dst)),
        Op::Exit => "exit".to_owned(),
        Op::LdImm64 { dst, imm: value } => format!("lddw {}, {value:#x}", reg(dst)),
        Op::LdAbs { size, imm: k } => format!("ldabs{} {}", size.mnemonic(), imm(k)),
        Op::LdInd { size, src, imm: k } => format!("ldind{} {}, {}", size.mnemonic(), reg(src), imm(k)),
        Op::Ldx { size, dst, src, off } => format!("ldx{} {}, {}", size.mnemonic(), reg(dst), mem(src, off)),
        Op::Ldsx { size, dst, src, off } => format!("ldxs{} {}, {}", size.mnemonic(), reg(dst), mem(src, off)),
        Op::St { size, dst, off, imm: k } => format!("st{} {}, {}", size.mnemonic(), mem(dst, off), imm(k)),
        Op::Stx { size, dst, src, off } => format!("stx{} {}, {}", size.mnemonic(), mem(dst, off), reg(src)),
        Op::Atomic { size, op, dst, src, off } => {
            let width = if size == Size::W { "32" } else { "" };
            let name = op.mnemonic()?;
            format!("lock {name}{width} {}, {}", mem(dst, off), reg(src))
        }
    })
}
