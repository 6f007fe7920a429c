//! Readable seccomp disassembly in the style of seccomp-tools
//! (`bpfconv disasm --format seccomp`):
//!
//! ```text
//!  line  CODE  JT   JF      K
//! =================================
//!  0000: 0x20 0x00 0x00 0x00000004  A = arch
//!  0001: 0x15 0x00 0x03 0xc000003e  if (A != ARCH_X86_64) goto 0005
//!  0002: 0x20 0x00 0x00 0x00000000  A = sys_number
//!  0003: 0x15 0x00 0x01 0x0000006e  if (A != getppid) goto 0005
//!  0004: 0x06 0x00 0x00 0x7fff0000  return ALLOW
//!  0005: 0x06 0x00 0x00 0x80000000  return KILL_PROCESS
//! ```
//!
//! Every line carries the raw `code jt jf k` columns, so [`crate::asm::assemble`]
//! gives back the exact bytes of any program, valid or not. The text after
//! them is for people; it is also accepted alone by the assembler.
//!
//! Syscall numbers are named after the arch the filter has established on the
//! path to that instruction: [`arch_flow`] is a forward data flow of "which
//! `AUDIT_ARCH` value has `seccomp_data.arch` been compared equal to on every
//! path here". Where no arch is established, [`DisasmOptions::default_arch`]
//! is used; without one (or without a table for the arch), numbers are hex.

use std::fmt::Write as _;

use cbpf::{AluOp, Insn, JmpOp, Op, Size, Src};

use crate::action::Action;
use crate::arch::Arch;
use crate::data::{OFFSET_ARCH, OFFSET_NR};

/// The two header lines seccomp-tools prints.
pub const HEADER: &str = " line  CODE  JT   JF      K\n=================================\n";

/// What `A` is known to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AValue {
    /// `seccomp_data.nr`, unmodified.
    Nr,
    /// `seccomp_data.arch`, unmodified.
    Arch,
    /// Anything else.
    Other,
}

/// Facts that hold on every path reaching an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathFacts {
    /// The `AUDIT_ARCH` value `seccomp_data.arch` was found equal to, if the
    /// same on every path.
    pub arch: Option<u32>,
    /// What `A` holds on entry to the instruction.
    pub a: AValue,
}

impl PathFacts {
    fn meet(self, other: PathFacts) -> PathFacts {
        PathFacts {
            arch: if self.arch == other.arch { self.arch } else { None },
            a: if self.a == other.a { self.a } else { AValue::Other },
        }
    }
}

/// Forward data flow over `insns`: the facts on entry to each instruction,
/// `None` where it is unreachable. Classic jumps only go forward, so one pass
/// in program order is exact. Out-of-range jump targets are ignored.
pub fn arch_flow(insns: &[Insn]) -> Vec<Option<PathFacts>> {
    let mut facts: Vec<Option<PathFacts>> = vec![None; insns.len()];
    if let Some(first) = facts.first_mut() {
        *first = Some(PathFacts { arch: None, a: AValue::Other });
    }
    let flow_to = |facts: &mut Vec<Option<PathFacts>>, target: u64, f: PathFacts| {
        if let Some(slot) = usize::try_from(target).ok().and_then(|t| facts.get_mut(t)) {
            *slot = Some(match *slot {
                Some(old) => old.meet(f),
                None => f,
            });
        }
    };
    for (pc, insn) in insns.iter().enumerate() {
        let Some(here) = facts.get(pc).copied().flatten() else { continue };
        let next = pc as u64 + 1;
        let mut after = here;
        match insn.op() {
            Some(Op::LdAbs { size: Size::W, k }) | Some(Op::LdxAbsSeccomp { k }) => {
                after.a = match k {
                    OFFSET_NR => AValue::Nr,
                    OFFSET_ARCH => AValue::Arch,
                    _ => AValue::Other,
                };
            }
            Some(Op::Ja { k }) => {
                flow_to(&mut facts, next + u64::from(k), here);
                continue;
            }
            Some(Op::Jmp { op, src, k, jt, jf }) => {
                let mut taken = here;
                if op == JmpOp::Jeq && src == Src::K && here.a == AValue::Arch {
                    taken.arch = Some(k);
                }
                flow_to(&mut facts, next + u64::from(jt), taken);
                flow_to(&mut facts, next + u64::from(jf), here);
                continue;
            }
            Some(Op::RetK { .. } | Op::RetA) | None => continue,
            Some(op) if op.writes_a() => after.a = AValue::Other,
            Some(_) => {}
        }
        flow_to(&mut facts, next, after);
    }
    facts
}

/// Options of [`disasm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DisasmOptions {
    /// Arch used to name syscalls where the filter has not established one.
    pub default_arch: Option<Arch>,
}

/// The arch whose table names syscall numbers at an instruction: the one
/// established on every path, else the default.
pub(crate) fn naming_arch(facts: Option<PathFacts>, default_arch: Option<Arch>) -> Option<Arch> {
    match facts.and_then(|f| f.arch) {
        Some(value) => Some(Arch::from_audit_arch(value)),
        None => default_arch,
    }
}

/// The text of `seccomp_data` at offset `k` (what `A = ...` reads).
pub(crate) fn field_name(k: u32) -> String {
    match k {
        0 => "sys_number".to_string(),
        4 => "arch".to_string(),
        8 => "instruction_pointer".to_string(),
        12 => "instruction_pointer >> 32".to_string(),
        16..=63 if k % 4 == 0 => {
            let i = (k - 16) / 8;
            if (k - 16) % 8 == 0 {
                format!("args[{i}]")
            } else {
                format!("args[{i}] >> 32")
            }
        }
        _ => format!("data[{k:#x}]"),
    }
}

/// The compound-assignment operator of an ALU op.
pub(crate) fn alu_symbol(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+=",
        AluOp::Sub => "-=",
        AluOp::Mul => "*=",
        AluOp::Div => "/=",
        AluOp::Or => "|=",
        AluOp::And => "&=",
        AluOp::Lsh => "<<=",
        AluOp::Rsh => ">>=",
        AluOp::Mod => "%=",
        AluOp::Xor => "^=",
    }
}

/// The text of one instruction at `pc` (no raw columns).
pub fn insn_text(pc: usize, insn: Insn, facts: Option<PathFacts>, default_arch: Option<Arch>) -> String {
    let target = |off: u64| format!("{:04}", pc as u64 + 1 + off);
    let Some(op) = insn.op() else {
        return format!("unknown opcode {:#06x}", insn.code);
    };
    match op {
        Op::LdImm { k } => format!("A = {k:#x}"),
        Op::LdxImm { k } => format!("X = {k:#x}"),
        Op::LdMem { k } => format!("A = mem[{k}]"),
        Op::LdxMem { k } => format!("X = mem[{k}]"),
        Op::St { k } => format!("mem[{k}] = A"),
        Op::Stx { k } => format!("mem[{k}] = X"),
        Op::LdAbs { size: Size::W, k } | Op::LdxAbsSeccomp { k } => format!("A = {}", field_name(k)),
        Op::LdAbs { size: Size::H, k } => format!("ldh [{k:#x}]"),
        Op::LdAbs { size: Size::B, k } => format!("ldb [{k:#x}]"),
        Op::LdInd { size, k } => {
            let m = match size {
                Size::W => "ld",
                Size::H => "ldh",
                Size::B => "ldb",
            };
            format!("{m} [x + {k:#x}]")
        }
        Op::LdLen => "A = len".to_string(),
        Op::LdxLen => "X = len".to_string(),
        Op::LdxMsh { k } => format!("ldxb 4*([{k:#x}]&0xf)"),
        Op::Alu { op, src: Src::X, .. } => format!("A {} X", alu_symbol(op)),
        Op::Alu { op, src: Src::K, k } => format!("A {} {k:#x}", alu_symbol(op)),
        Op::Neg => "A = -A".to_string(),
        Op::Ja { k } => format!("goto {}", target(u64::from(k))),
        Op::Jmp { op, src, k, jt, jf } => {
            let value = match src {
                Src::X => "X".to_string(),
                Src::K => operand_name(k, facts, default_arch),
            };
            let (pos, neg) = match op {
                JmpOp::Jeq => (format!("A == {value}"), format!("A != {value}")),
                JmpOp::Jgt => (format!("A > {value}"), format!("A <= {value}")),
                JmpOp::Jge => (format!("A >= {value}"), format!("A < {value}")),
                JmpOp::Jset => (format!("A & {value}"), format!("!(A & {value})")),
            };
            let (jt, jf) = (u64::from(jt), u64::from(jf));
            if jf == 0 {
                format!("if ({pos}) goto {}", target(jt))
            } else if jt == 0 {
                format!("if ({neg}) goto {}", target(jf))
            } else {
                format!("if ({pos}) goto {} else goto {}", target(jt), target(jf))
            }
        }
        Op::RetK { k } => format!("return {}", Action::from_u32(k)),
        Op::RetA => "return A".to_string(),
        Op::Tax => "X = A".to_string(),
        Op::Txa => "A = X".to_string(),
    }
}

/// The constant of a comparison: an `ARCH_*` name when `A` holds the arch, a
/// syscall name when `A` holds `nr` and the naming arch's table has it, else hex.
fn operand_name(k: u32, facts: Option<PathFacts>, default_arch: Option<Arch>) -> String {
    match facts.map(|f| f.a) {
        Some(AValue::Arch) => {
            if let Some(name) = Arch::from_audit_arch(k).macro_name() {
                return format!("ARCH_{name}");
            }
        }
        Some(AValue::Nr) => {
            if let Some(name) =
                naming_arch(facts, default_arch).and_then(crate::syscalls::table).and_then(|t| t.name(k))
            {
                return name.to_string();
            }
        }
        _ => {}
    }
    format!("{k:#x}")
}

/// The seccomp-tools-style listing of `insns`, header included.
pub fn disasm(insns: &[Insn], options: DisasmOptions) -> String {
    let facts = arch_flow(insns);
    let mut out = String::from(HEADER);
    for (pc, &insn) in insns.iter().enumerate() {
        let text = insn_text(pc, insn, facts.get(pc).copied().flatten(), options.default_arch);
        let _ =
            writeln!(out, " {pc:04}: {:#04x} {:#04x} {:#04x} {:#010x}  {text}", insn.code, insn.jt, insn.jf, insn.k);
    }
    out
}

/// Only the text column, one instruction per line (no header, no raw
/// columns): the input form the assembler also accepts.
pub fn disasm_text(insns: &[Insn], options: DisasmOptions) -> String {
    let facts = arch_flow(insns);
    let mut out = String::new();
    for (pc, &insn) in insns.iter().enumerate() {
        let _ = writeln!(out, "{}", insn_text(pc, insn, facts.get(pc).copied().flatten(), options.default_arch));
    }
    out
}
