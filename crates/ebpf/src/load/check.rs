//! The structural checks of [`crate::load`] (every invariant its module
//! docs list) and the pre-decoding of each instruction into its
//! [`Step`], one instruction at a time.

use crate::abi::helpers::HelperFn;
use crate::isa::insn::{Insn, Pc};
use crate::isa::op::{self as isa, AluOp, AtomicOp, CallKind, Endian, OpError, Operand, Size, Width};
use crate::isa::opcode::{R0, R10};
use crate::load::ir::{alu_kind, jmp_kind, of_width, Step, StepKind, ZERO_REG};
use crate::load::{LoadError, LoadOptions};

pub(crate) struct Decoder<'a> {
    pub(crate) insns: &'a [Insn],
    pub(crate) second: &'a [bool],
    pub(crate) opts: &'a LoadOptions,
    pub(crate) helpers: &'a [(i32, HelperFn)],
}

fn op(kind: StepKind, dst: u8, src: u8, a: u32, imm: u64) -> Step {
    Step { kind, dst, src, size: 0, a, imm }
}

impl Decoder<'_> {
    fn reg(&self, pc: usize, r: u8) -> Result<u8, LoadError> {
        if r > R10 {
            Err(LoadError::BadRegister { pc: Pc(pc), reg: r })
        } else {
            Ok(r)
        }
    }

    /// A register the instruction writes: r0..=r9.
    fn wreg(&self, pc: usize, r: u8) -> Result<u8, LoadError> {
        if self.reg(pc, r)? == R10 {
            Err(LoadError::WritesFramePointer { pc: Pc(pc) })
        } else {
            Ok(r)
        }
    }

    fn reserved(&self, pc: usize, nonzero: bool, field: &'static str) -> Result<(), LoadError> {
        if self.opts.strict && nonzero {
            Err(LoadError::ReservedField { pc: Pc(pc), field })
        } else {
            Ok(())
        }
    }

    fn target(&self, pc: usize, rel: i64) -> Result<u32, LoadError> {
        let t = pc as i64 + 1 + rel;
        if t < 0 || t >= self.insns.len() as i64 {
            return Err(LoadError::JumpOutOfRange { pc: Pc(pc), target: t });
        }
        let t = t as usize;
        if self.second.get(t).copied().unwrap_or(false) {
            return Err(LoadError::JumpIntoLdImm64 { pc: Pc(pc), target: t });
        }
        Ok(t as u32)
    }

    /// Decodes one instruction ([`isa::Op::decode`]) and checks what the
    /// module docs list: registers, refused encodings, reserved fields.
    /// When an instruction breaks several rules, the first reported is the
    /// first in this order: class-wide registers, the fields the operation
    /// reads before its variant is known (its operand, or the unused fields
    /// of END and calls), the opcode and its variant, then the operation's
    /// own fields in encoding order.
    pub(crate) fn decode(&self, pc: usize, insn: Insn) -> Result<Step, LoadError> {
        let at = Pc(pc);
        // What strict mode refuses among decodable forms (callx) and the
        // cBPF carry-over lacks (64-bit packet loads) reads as unknown.
        let unknown = |family| LoadError::Decode { pc: at, op: OpError::UnknownOpcode { code: insn.code, family } };
        let class = isa::Class::of(insn);
        // Class-wide register checks: every ALU-class instruction writes
        // `dst`, every STX-class one names two registers.
        match class {
            isa::Class::Alu | isa::Class::Alu64 => {
                self.wreg(pc, insn.dst())?;
            }
            isa::Class::Stx => {
                self.reg(pc, insn.dst())?;
                self.reg(pc, insn.src())?;
            }
            _ => {}
        }
        let next = self.insns.get(pc + 1).copied();
        let typed = match isa::Op::decode(insn, next) {
            Ok(op) => op,
            Err(e) => {
                self.before_variant(pc, insn, class, e)?;
                // Never a broken ld_imm64: `load::decode` refused those first.
                return Err(LoadError::Decode { pc: at, op: e });
            }
        };
        let res = |field: &'static str| {
            let nonzero = match field {
                "dst" => insn.dst() != 0,
                "src" => insn.src() != 0,
                "off" => insn.off != 0,
                _ => insn.imm != 0,
            };
            self.reserved(pc, nonzero, field)
        };
        // Operand `regs[src] | imm`: K sign-extends to 64 bits for ALU64 and
        // JMP, and is the low half for ALU32 and JMP32; the unused field of
        // each form is reserved.
        let operand = |width: Width, src: Operand| -> Result<(u8, u64), LoadError> {
            Ok(match (src, width) {
                (Operand::X(r), _) => {
                    res("imm")?;
                    (self.reg(pc, r)?, 0)
                }
                (Operand::K(k), Width::W64) => {
                    res("src")?;
                    (ZERO_REG, k as i64 as u64)
                }
                (Operand::K(k), Width::W32) => {
                    res("src")?;
                    (ZERO_REG, k as u32 as u64)
                }
            })
        };
        let mem_off = |off: i16| off as i32 as u32;
        Ok(match typed {
            isa::Op::Alu { width, op: alu, dst, src } => {
                let (src, imm) = operand(width, src)?;
                // `off` selects signed division; on others it is reserved.
                if !matches!(alu, AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod) {
                    res("off")?;
                }
                // Shift amounts, K or X, are masked where they are evaluated
                // (`AluOp::eval64`/`eval32`), as RFC 9669 says: the kernel
                // leaves K unmasked but its verifier rejects K outside the
                // width, so the two agree on every program the kernel runs.
                op(alu_kind(width, alu), dst, src, 0, imm)
            }
            isa::Op::Neg { width, dst } => {
                for field in ["src", "imm", "off"] {
                    res(field)?;
                }
                op(of_width(width, (StepKind::Neg64, StepKind::Neg32)), dst, ZERO_REG, 0, 0)
            }
            isa::Op::MovSx { width, dst, src, from } => {
                let (src, _) = operand(width, Operand::X(src))?;
                let kind = match (width, from) {
                    (Width::W64, Size::B) => StepKind::MovSx64B,
                    (Width::W64, Size::H) => StepKind::MovSx64H,
                    (Width::W64, _) => StepKind::MovSx64W,
                    (Width::W32, Size::B) => StepKind::MovSx32B,
                    (Width::W32, _) => StepKind::MovSx32H,
                };
                op(kind, dst, src, 0, 0)
            }
            isa::Op::End { endian, dst, bits } => {
                // imm is the width, so it is not a reserved field here.
                res("src")?;
                res("off")?;
                let kind = match (endian, bits) {
                    (Endian::ToLe, 16) => StepKind::Le16,
                    (Endian::ToLe, 32) => StepKind::Le32,
                    (Endian::ToLe, _) => StepKind::Le64,
                    (Endian::ToBe, 16) => StepKind::Be16,
                    (Endian::ToBe, 32) => StepKind::Be32,
                    (Endian::ToBe, _) => StepKind::Be64,
                    (Endian::Swap, 16) => StepKind::Bswap16,
                    (Endian::Swap, 32) => StepKind::Bswap32,
                    (Endian::Swap, _) => StepKind::Bswap64,
                };
                op(kind, dst, ZERO_REG, 0, 0)
            }
            isa::Op::Ja { off } => {
                for field in ["dst", "src", "imm"] {
                    res(field)?;
                }
                op(StepKind::Ja, 0, ZERO_REG, self.target(pc, i64::from(off))?, 0)
            }
            isa::Op::Gotol { imm } => {
                for field in ["dst", "src", "off"] {
                    res(field)?;
                }
                op(StepKind::Ja, 0, ZERO_REG, self.target(pc, i64::from(imm))?, 0)
            }
            isa::Op::Jmp { width, cond, dst, src, off } => {
                let dst = self.reg(pc, dst)?;
                let (src, imm) = operand(width, src)?;
                let t = self.target(pc, i64::from(off))?;
                op(jmp_kind(width, cond), dst, src, t, imm)
            }
            isa::Op::Call { kind, imm } => {
                res("off")?;
                res("dst")?;
                match kind {
                    CallKind::Helper => {
                        let slot = self
                            .helpers
                            .iter()
                            .position(|(id, _)| *id == imm)
                            .ok_or(LoadError::UnknownHelper { pc: at, id: imm })?;
                        op(StepKind::Call, 0, ZERO_REG, slot as u32, imm as u32 as u64)
                    }
                    CallKind::Local => op(StepKind::CallLocal, 0, ZERO_REG, self.target(pc, i64::from(imm))?, 0),
                    CallKind::Kfunc => {
                        return Err(LoadError::Decode { pc: at, op: OpError::UnsupportedCall { src: kind.src() } });
                    }
                }
            }
            // callx (not in RFC 9669; the conformance suite's `call %rN`):
            // the helper id is read from dst at run time.
            isa::Op::Callx { dst } => {
                res("off")?;
                if self.opts.strict {
                    return Err(unknown(isa::Family::Call));
                }
                op(StepKind::Callx, self.reg(pc, dst)?, ZERO_REG, 0, 0)
            }
            isa::Op::Exit => {
                for field in ["dst", "src", "off", "imm"] {
                    res(field)?;
                }
                op(StepKind::Exit, 0, ZERO_REG, 0, 0)
            }
            isa::Op::LdImm64 { dst, imm } => {
                let dst = self.wreg(pc, dst)?;
                // Pseudo sources (map fd, BTF id, ...) need a loader we do not have.
                res("src")?;
                res("off")?;
                op(StepKind::LdImm64, dst, ZERO_REG, 0, imm)
            }
            // The kernel's cBPF carry-over has no 64-bit packet load.
            isa::Op::LdAbs { size: Size::DW, .. } | isa::Op::LdInd { size: Size::DW, .. } => {
                return Err(unknown(isa::Family::Load));
            }
            isa::Op::LdAbs { size, imm } => {
                for field in ["dst", "off", "src"] {
                    res(field)?;
                }
                Step { kind: StepKind::LdAbs, dst: R0, src: ZERO_REG, size: size.bytes(), a: 0, imm: imm as u32 as u64 }
            }
            isa::Op::LdInd { size, src, imm } => {
                res("dst")?;
                res("off")?;
                let src = self.reg(pc, src)?;
                Step { kind: StepKind::LdInd, dst: R0, src, size: size.bytes(), a: 0, imm: imm as u32 as u64 }
            }
            isa::Op::Ldx { size, dst, src, off } | isa::Op::Ldsx { size, dst, src, off } => {
                res("imm")?;
                let signed = matches!(typed, isa::Op::Ldsx { .. });
                let kind = match (signed, size) {
                    (false, Size::B) => StepKind::LdxB,
                    (false, Size::H) => StepKind::LdxH,
                    (false, Size::W) => StepKind::LdxW,
                    (false, Size::DW) => StepKind::LdxDw,
                    (true, Size::B) => StepKind::LdxSb,
                    (true, Size::H) => StepKind::LdxSh,
                    (true, _) => StepKind::LdxSw,
                };
                op(kind, self.wreg(pc, dst)?, self.reg(pc, src)?, mem_off(off), 0)
            }
            isa::Op::St { size, dst, off, imm } => {
                res("src")?;
                let dst = self.reg(pc, dst)?;
                let (kind, imm) = match size {
                    Size::B => (StepKind::StB, u64::from(imm as u8)),
                    Size::H => (StepKind::StH, u64::from(imm as u16)),
                    Size::W => (StepKind::StW, u64::from(imm as u32)),
                    Size::DW => (StepKind::StDw, imm as i64 as u64),
                };
                op(kind, dst, ZERO_REG, mem_off(off), imm)
            }
            isa::Op::Stx { size, dst, src, off } => {
                res("imm")?;
                let kind = match size {
                    Size::B => StepKind::StB,
                    Size::H => StepKind::StH,
                    Size::W => StepKind::StW,
                    Size::DW => StepKind::StDw,
                };
                op(kind, dst, src, mem_off(off), 0)
            }
            isa::Op::Atomic { size, op: atomic, dst, src, off } => {
                let (size, off) = (size.bytes(), mem_off(off));
                match atomic {
                    AtomicOp::LoadAcq => {
                        Step { kind: StepKind::LoadAcq, dst: self.wreg(pc, dst)?, src, size, a: off, imm: 0 }
                    }
                    AtomicOp::StoreRel => Step { kind: StepKind::StoreRel, dst, src, size, a: off, imm: 0 },
                    _ => {
                        if atomic.fetches() && atomic != AtomicOp::Cmpxchg {
                            self.wreg(pc, src)?;
                        }
                        let imm = atomic.bits() as u32 as u64;
                        Step { kind: StepKind::Atomic, dst, src, size, a: off, imm }
                    }
                }
            }
        })
    }

    /// The checks an instruction that [`isa::Op::decode`] refuses (with
    /// `e`) passes before its opcode or variant is judged: the unused
    /// fields of END and of calls ([`isa::Family`], which the error
    /// carries), the operand of an ALU operation.
    fn before_variant(&self, pc: usize, insn: Insn, class: isa::Class, e: OpError) -> Result<(), LoadError> {
        let res = |nonzero: bool, field| self.reserved(pc, nonzero, field);
        match e.family() {
            isa::Family::End => {
                res(insn.src() != 0, "src")?;
                res(insn.off != 0, "off")?;
            }
            isa::Family::Call => {
                res(insn.off != 0, "off")?;
                res(insn.dst() != 0, "dst")?;
            }
            _ if matches!(class, isa::Class::Alu | isa::Class::Alu64) => match isa::Operand::of(insn) {
                Operand::X(src) => {
                    res(insn.imm != 0, "imm")?;
                    self.reg(pc, src)?;
                }
                Operand::K(_) => res(insn.src() != 0, "src")?,
            },
            _ => {}
        }
        Ok(())
    }
}
