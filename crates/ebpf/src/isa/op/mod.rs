//! The typed eBPF instruction: one [`Op`], one decoder ([`Op::decode`]) and
//! one encoder ([`Op::encode`]); the per-family tables they read live in
//! [`tables`] and are re-exported here.
//!
//! Every module that needs to know what an instruction is (the load-time
//! decoder in [`crate::load`], the seccomp executor, the kernel listing,
//! the conformance assembler and disassembler, the rbpf adapter) matches an
//! [`Op`] instead of opcode bits; only this module and [`tables`] know the
//! bits.
//!
//! The per-family tables ([`AluOp`], [`JmpCond`], [`Size`], [`AtomicOp`])
//! each come from one list, read by the enum, its bits (encoder and
//! decoder), the symbol `print_bpf_insn()` in kernel/bpf/disasm.c prints, the
//! bpf_conformance mnemonic, and (for ALU and jump ops) the evaluation the
//! interpreters run. The lists follow the order of the kernel's
//! `BPF_INSN_MAP` in kernel/bpf/core.c (Linux 6.18), which the kernel expands
//! both into the verifier's opcode whitelist (`bpf_opcode_in_insntable()`)
//! and into `___bpf_prog_run()`'s jump table.
//!
//! [`Op::decode`] accepts exactly the encodings our toolchain knows (the
//! interpreter's and the assembler's; the load-time decoder refuses a few of
//! them, such as `ldabsdw` and `call runtime`); it ignores fields an
//! instruction does not use (RFC 9669 reserves them: converted cBPF carries
//! junk there), so `encode(decode(insn))` is `insn` with those fields
//! cleared ([`reserved_field`] names the first one that was not zero), and
//! `decode(encode(op))` is `op`.
//!
//! ```
//! use ebpf::op::{AluOp, Op, Operand, Width};
//! use ebpf::Insn;
//! let op = Op::decode(Insn::new(0x04, 0, 0, 0, 7), None).unwrap();
//! assert_eq!(op, Op::Alu { width: Width::W32, op: AluOp::Add, dst: 0, src: Operand::K(7) });
//! assert_eq!(op.encode().slots(), &[Insn::new(0x04, 0, 0, 0, 7)]);
//! ```

use crate::isa::insn::Insn;
use crate::isa::opcode::{
    BPF_ABS, BPF_ALU, BPF_ALU64, BPF_ATOMIC, BPF_CALL, BPF_END, BPF_EXIT, BPF_IMM, BPF_IND, BPF_JA, BPF_JMP, BPF_JMP32,
    BPF_LD, BPF_LDX, BPF_MEM, BPF_MEMSX, BPF_MOV, BPF_NEG, BPF_PSEUDO_CALL, BPF_ST, BPF_STX, BPF_TO_BE, BPF_X,
};

pub mod tables;

pub use tables::{AluOp, AtomicOp, JmpCond, Operand, Size, Width};

/// Byte-order operation of `BPF_END`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// `BPF_ALU | BPF_END | BPF_TO_LE`: `le16/32/64`.
    ToLe,
    /// `BPF_ALU | BPF_END | BPF_TO_BE`: `be16/32/64`.
    ToBe,
    /// `BPF_ALU64 | BPF_END | BPF_TO_LE`: unconditional `bswap16/32/64`.
    Swap,
}

impl Endian {
    /// Every byte-order operation, in `BPF_INSN_MAP` order.
    pub const ALL: [Endian; 3] = [Endian::ToBe, Endian::ToLe, Endian::Swap];

    /// Conformance mnemonic prefix: `le`, `be`, `bswap`.
    pub const fn mnemonic(self) -> &'static str {
        match self {
            Endian::ToLe => "le",
            Endian::ToBe => "be",
            Endian::Swap => "bswap",
        }
    }
}

/// The target of a `BPF_JMP | BPF_CALL` (its `src_reg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// src 0: a helper function, `imm` = its id.
    Helper,
    /// src `BPF_PSEUDO_CALL` (1): a local function, `imm` = relative slot offset.
    Local,
    /// src `BPF_PSEUDO_KFUNC_CALL` (2): a kernel function (`call runtime` in
    /// the conformance syntax), `imm` = its BTF id.
    Kfunc,
}

impl CallKind {
    /// The `src_reg` field.
    #[inline]
    pub const fn src(self) -> u8 {
        match self {
            CallKind::Helper => 0,
            CallKind::Local => BPF_PSEUDO_CALL,
            CallKind::Kfunc => 2,
        }
    }
}

/// One eBPF instruction, typed. Register fields are `0..=15` as the 4-bit
/// fields allow; which are valid is the loader's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `dst op= src` (MOV: `dst = src`).
    Alu { width: Width, op: AluOp, dst: u8, src: Operand },
    /// `dst = -dst`.
    Neg { width: Width, dst: u8 },
    /// `dst = (s8/s16/s32) src` (`BPF_MOV | BPF_X` with `off` = 8, 16, 32).
    MovSx { width: Width, dst: u8, src: u8, from: Size },
    /// Byte-order conversion of the low `bits` (16, 32, 64) of `dst`.
    End { endian: Endian, dst: u8, bits: i32 },
    /// `goto pc+off`.
    Ja { off: i16 },
    /// `gotol pc+imm` (`BPF_JMP32 | BPF_JA`).
    Gotol { imm: i32 },
    /// `if dst cond src goto pc+off`.
    Jmp { width: Width, cond: JmpCond, dst: u8, src: Operand, off: i16 },
    /// `call imm`.
    Call { kind: CallKind, imm: i32 },
    /// `call dst` (`BPF_JMP | BPF_CALL | BPF_X`, not in RFC 9669).
    Callx { dst: u8 },
    /// `exit`.
    Exit,
    /// `dst = imm` over two slots (`BPF_LD | BPF_IMM | BPF_DW`).
    LdImm64 { dst: u8, imm: u64 },
    /// Legacy packet load `r0 = *(size *)skb[imm]`.
    LdAbs { size: Size, imm: i32 },
    /// Legacy packet load `r0 = *(size *)skb[src + imm]`.
    LdInd { size: Size, src: u8, imm: i32 },
    /// `dst = *(size *)(src + off)`.
    Ldx { size: Size, dst: u8, src: u8, off: i16 },
    /// Sign-extending `dst = *(ssize *)(src + off)` (`BPF_MEMSX`, B/H/W).
    Ldsx { size: Size, dst: u8, src: u8, off: i16 },
    /// `*(size *)(dst + off) = imm`.
    St { size: Size, dst: u8, off: i16, imm: i32 },
    /// `*(size *)(dst + off) = src`.
    Stx { size: Size, dst: u8, src: u8, off: i16 },
    /// `BPF_STX | BPF_ATOMIC`: `op` on `*(size *)(dst + off)` with `src`.
    Atomic { size: Size, op: AtomicOp, dst: u8, src: u8, off: i16 },
}

/// Why an instruction is not an [`Op`], with what it was as far as
/// decoding got ([`OpError::family`]): checkers that report an
/// instruction's other fields before its refused variant (the loader's
/// reserved fields, the disassembler's unused ones) ask the error instead
/// of decoding a doctored copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    #[error("unknown opcode {code:#04x}")]
    UnknownOpcode { code: u8, family: Family },
    #[error("invalid offset {off} for this opcode")]
    BadOffset { off: i16, family: Family },
    #[error("invalid immediate {imm} for this opcode")]
    BadImmediate { imm: i32, family: Family },
    #[error("unsupported call kind (src {src})")]
    UnsupportedCall { src: u8 },
    #[error("ld_imm64 is missing its second slot")]
    IncompleteLdImm64,
    #[error("second slot of ld_imm64 has non-zero code, registers or offset")]
    BadLdImm64SecondSlot,
}

impl OpError {
    /// The family of the refused instruction.
    pub fn family(&self) -> Family {
        match *self {
            OpError::UnknownOpcode { family, .. }
            | OpError::BadOffset { family, .. }
            | OpError::BadImmediate { family, .. } => family,
            OpError::UnsupportedCall { .. } => Family::Call,
            OpError::IncompleteLdImm64 | OpError::BadLdImm64SecondSlot => Family::LdImm64,
        }
    }
}

/// The family of an instruction [`Op::decode`] refused: which kind of
/// operation its class and operation bits name, whatever variant or field
/// made it invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// A binary ALU operation (including `mov`).
    Alu,
    /// `neg`.
    Neg,
    /// `movsx`.
    MovSx,
    /// A byte-order operation (`BPF_END`): `le`, `be`, `bswap`.
    End,
    /// `ja`, `gotol` or a conditional jump.
    Jump,
    /// `call` (helper, local or kfunc).
    Call,
    /// `exit`.
    Exit,
    /// `ld_imm64`.
    LdImm64,
    /// Another `BPF_LD` or `BPF_LDX` form.
    Load,
    /// `BPF_ST`, or a `BPF_STX` form other than an atomic.
    Store,
    /// `BPF_STX | BPF_ATOMIC`.
    Atomic,
}

impl Family {
    /// The fields an instruction of this family leaves unused that a
    /// checker judges before its refused variant, in encoding order (`dst`,
    /// `src`, `off`, `imm`): `src` and `off` of `BPF_END` (`imm` is its
    /// width), `dst` and `off` of a call (`src` is its kind); none for the
    /// others.
    pub fn unused_before_variant(self) -> &'static [&'static str] {
        match self {
            Family::End => &["src", "off"],
            Family::Call => &["dst", "off"],
            _ => &[],
        }
    }
}

/// Instruction class (`BPF_CLASS(code)`), the first thing a decoder looks
/// at: for loaders that check class-wide properties (every ALU-class
/// instruction writes `dst`) before the opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    Ld,
    Ldx,
    St,
    Stx,
    Alu,
    Jmp,
    Jmp32,
    Alu64,
}

impl Class {
    /// The class of `insn`.
    pub const fn of(insn: Insn) -> Class {
        match insn.code & 0x07 {
            BPF_LD => Class::Ld,
            BPF_LDX => Class::Ldx,
            BPF_ST => Class::St,
            BPF_STX => Class::Stx,
            BPF_ALU => Class::Alu,
            BPF_JMP => Class::Jmp,
            BPF_JMP32 => Class::Jmp32,
            _ => Class::Alu64,
        }
    }
}

/// The encoding of one [`Op`]: one slot, or two for `ld_imm64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    slots: [Insn; 2],
    len: usize,
}

impl Encoded {
    /// The slots.
    pub fn slots(&self) -> &[Insn] {
        self.slots.get(..self.len).unwrap_or(&self.slots)
    }

    /// The first slot (the only one but for `ld_imm64`).
    #[inline]
    pub fn first(&self) -> Insn {
        let [first, _] = self.slots;
        first
    }
}

/// Full code of the first slot of `ld_imm64`.
const LD_IMM64: u8 = BPF_LD | BPF_IMM | 0x18;

impl Op {
    /// Decodes the instruction `insn`; `next` is the slot after it, read
    /// only for `ld_imm64` (which then takes both slots: see
    /// [`Op::slots`]). Fields the instruction does not use are ignored.
    pub fn decode(insn: Insn, next: Option<Insn>) -> Result<Op, OpError> {
        let code = insn.code;
        let unknown = |family| OpError::UnknownOpcode { code, family };
        let (dst, src, off, imm) = (insn.dst(), insn.src(), insn.off, insn.imm);
        let op_bits = code & 0xf0;
        let mode = code & 0xe0;
        let size = Size::of(code);
        Ok(match insn.class() {
            class @ (BPF_ALU | BPF_ALU64) => {
                let width = if class == BPF_ALU64 { Width::W64 } else { Width::W32 };
                let x = code & BPF_X != 0;
                match op_bits {
                    BPF_END => {
                        let endian = match (width, x) {
                            (Width::W32, false) => Endian::ToLe,
                            (Width::W32, true) => Endian::ToBe,
                            (Width::W64, false) => Endian::Swap,
                            (Width::W64, true) => return Err(unknown(Family::End)),
                        };
                        if !matches!(imm, 16 | 32 | 64) {
                            return Err(OpError::BadImmediate { imm, family: Family::End });
                        }
                        Op::End { endian, dst, bits: imm }
                    }
                    BPF_NEG if x => return Err(unknown(Family::Neg)),
                    BPF_NEG => Op::Neg { width, dst },
                    BPF_MOV if x && off != 0 => {
                        let from = match (off, width) {
                            (8, _) => Size::B,
                            (16, _) => Size::H,
                            (32, Width::W64) => Size::W,
                            _ => return Err(OpError::BadOffset { off, family: Family::MovSx }),
                        };
                        Op::MovSx { width, dst, src, from }
                    }
                    _ => {
                        // Only DIV and MOD give `off` a meaning (0 or 1).
                        let signed = AluOp::from_fields(op_bits, 1).is_some();
                        let off = if signed { off } else { 0 };
                        let op = match AluOp::from_fields(op_bits, off) {
                            Some(op) => op,
                            None if signed => return Err(OpError::BadOffset { off, family: Family::Alu }),
                            None => return Err(unknown(Family::Alu)),
                        };
                        Op::Alu { width, op, dst, src: Operand::of(insn) }
                    }
                }
            }
            class @ (BPF_JMP | BPF_JMP32) => {
                let width = if class == BPF_JMP { Width::W64 } else { Width::W32 };
                let x = code & BPF_X != 0;
                match (op_bits, width, x) {
                    (BPF_JA, Width::W64, false) => Op::Ja { off },
                    (BPF_JA, Width::W32, false) => Op::Gotol { imm },
                    (BPF_CALL, Width::W64, true) => Op::Callx { dst },
                    (BPF_CALL, Width::W64, false) => {
                        let kind = match src {
                            0 => CallKind::Helper,
                            BPF_PSEUDO_CALL => CallKind::Local,
                            2 => CallKind::Kfunc,
                            other => return Err(OpError::UnsupportedCall { src: other }),
                        };
                        Op::Call { kind, imm }
                    }
                    (BPF_EXIT, Width::W64, false) => Op::Exit,
                    _ => {
                        let cond = JmpCond::from_bits(op_bits).ok_or(unknown(Family::Jump))?;
                        Op::Jmp { width, cond, dst, src: Operand::of(insn), off }
                    }
                }
            }
            BPF_LD if code == LD_IMM64 => {
                let hi = next.ok_or(OpError::IncompleteLdImm64)?;
                if hi.code != 0 || hi.regs != 0 || hi.off != 0 {
                    return Err(OpError::BadLdImm64SecondSlot);
                }
                Op::LdImm64 { dst, imm: u64::from(imm as u32) | (u64::from(hi.imm as u32) << 32) }
            }
            BPF_LD => match mode {
                BPF_ABS => Op::LdAbs { size, imm },
                BPF_IND => Op::LdInd { size, src, imm },
                _ => return Err(unknown(Family::Load)),
            },
            BPF_LDX => match mode {
                BPF_MEM => Op::Ldx { size, dst, src, off },
                BPF_MEMSX if size != Size::DW => Op::Ldsx { size, dst, src, off },
                _ => return Err(unknown(Family::Load)),
            },
            BPF_ST => match mode {
                BPF_MEM => Op::St { size, dst, off, imm },
                _ => return Err(unknown(Family::Store)),
            },
            _ => match mode {
                BPF_MEM => Op::Stx { size, dst, src, off },
                BPF_ATOMIC => {
                    let op = AtomicOp::from_bits(imm).filter(|o| o.allows(size));
                    Op::Atomic {
                        size,
                        op: op.ok_or(OpError::BadImmediate { imm, family: Family::Atomic })?,
                        dst,
                        src,
                        off,
                    }
                }
                _ => return Err(unknown(Family::Store)),
            },
        })
    }

    /// Decodes the instruction at `pc` of `insns` (with its second slot for
    /// `ld_imm64`).
    pub fn decode_at(insns: &[Insn], pc: usize) -> Result<Op, OpError> {
        let insn = insns.get(pc).copied().ok_or(OpError::IncompleteLdImm64)?;
        Op::decode(insn, insns.get(pc + 1).copied())
    }

    /// Whether `insn` is the first slot of a two-slot instruction
    /// (`ld_imm64`), whatever its other fields.
    pub const fn is_wide(insn: Insn) -> bool {
        insn.code == LD_IMM64
    }

    /// Slots the instruction takes: 2 for `ld_imm64`, else 1.
    pub const fn slots(&self) -> usize {
        match self {
            Op::LdImm64 { .. } => 2,
            _ => 1,
        }
    }

    /// The encoding: every field the instruction does not use is zero.
    ///
    /// Always inlined: with constant fields (the `filter_h` constructors)
    /// it folds to the instruction itself.
    #[inline(always)]
    pub fn encode(&self) -> Encoded {
        let one = |insn: Insn| Encoded { slots: [insn, Insn::default()], len: 1 };
        let insn = match *self {
            Op::Alu { width, op, dst, src } => {
                let (s, imm, x) = src.fields();
                Insn::new(width.alu_class() | op.bits() | x, dst, s, op.off(), imm)
            }
            Op::Neg { width, dst } => Insn::new(width.alu_class() | BPF_NEG, dst, 0, 0, 0),
            Op::MovSx { width, dst, src, from } => {
                Insn::new(width.alu_class() | BPF_MOV | BPF_X, dst, src, i16::from(from.bytes()) * 8, 0)
            }
            Op::End { endian, dst, bits } => {
                let code = match endian {
                    Endian::ToLe => BPF_ALU | BPF_END,
                    Endian::ToBe => BPF_ALU | BPF_END | BPF_TO_BE,
                    Endian::Swap => BPF_ALU64 | BPF_END,
                };
                Insn::new(code, dst, 0, 0, bits)
            }
            Op::Ja { off } => Insn::new(BPF_JMP | BPF_JA, 0, 0, off, 0),
            Op::Gotol { imm } => Insn::new(BPF_JMP32 | BPF_JA, 0, 0, 0, imm),
            Op::Jmp { width, cond, dst, src, off } => {
                let (s, imm, x) = src.fields();
                Insn::new(width.jmp_class() | cond.bits() | x, dst, s, off, imm)
            }
            Op::Call { kind, imm } => Insn::new(BPF_JMP | BPF_CALL, 0, kind.src(), 0, imm),
            Op::Callx { dst } => Insn::new(BPF_JMP | BPF_CALL | BPF_X, dst, 0, 0, 0),
            Op::Exit => Insn::new(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
            Op::LdImm64 { dst, imm } => {
                let first = Insn::new(LD_IMM64, dst, 0, 0, imm as u32 as i32);
                let second = Insn::new(0, 0, 0, 0, (imm >> 32) as u32 as i32);
                return Encoded { slots: [first, second], len: 2 };
            }
            Op::LdAbs { size, imm } => Insn::new(BPF_LD | BPF_ABS | size.bits(), 0, 0, 0, imm),
            Op::LdInd { size, src, imm } => Insn::new(BPF_LD | BPF_IND | size.bits(), 0, src, 0, imm),
            Op::Ldx { size, dst, src, off } => Insn::new(BPF_LDX | BPF_MEM | size.bits(), dst, src, off, 0),
            Op::Ldsx { size, dst, src, off } => Insn::new(BPF_LDX | BPF_MEMSX | size.bits(), dst, src, off, 0),
            Op::St { size, dst, off, imm } => Insn::new(BPF_ST | BPF_MEM | size.bits(), dst, 0, off, imm),
            Op::Stx { size, dst, src, off } => Insn::new(BPF_STX | BPF_MEM | size.bits(), dst, src, off, 0),
            Op::Atomic { size, op, dst, src, off } => {
                Insn::new(BPF_STX | BPF_ATOMIC | size.bits(), dst, src, off, op.bits())
            }
        };
        one(insn)
    }

    /// Registers the instruction writes (at most two: an atomic fetch
    /// writes `src`, CMPXCHG `r0`).
    pub fn written_regs(&self) -> [Option<u8>; 2] {
        match *self {
            Op::Alu { dst, .. }
            | Op::Neg { dst, .. }
            | Op::MovSx { dst, .. }
            | Op::End { dst, .. }
            | Op::LdImm64 { dst, .. }
            | Op::Ldx { dst, .. }
            | Op::Ldsx { dst, .. } => [Some(dst), None],
            Op::LdAbs { .. } | Op::LdInd { .. } | Op::Call { .. } | Op::Callx { .. } => [Some(0), None],
            Op::Atomic { op: AtomicOp::LoadAcq, dst, .. } => [Some(dst), None],
            Op::Atomic { op: AtomicOp::Cmpxchg, .. } => [Some(0), None],
            Op::Atomic { op, src, .. } if op.fetches() => [Some(src), None],
            _ => [None, None],
        }
    }
}

/// The first field of `insn` (in the order `dst`, `src`, `off`, `imm`)
/// that its decoded [`Op`] does not use but that is not zero: what
/// RFC 9669 §3 calls a reserved field. The second slot of `ld_imm64` is
/// checked by [`Op::decode`].
pub fn reserved_field(op: &Op, insn: Insn) -> Option<&'static str> {
    let clean = op.encode().first();
    if clean.dst() != insn.dst() {
        Some("dst")
    } else if clean.src() != insn.src() {
        Some("src")
    } else if clean.off != insn.off {
        Some("off")
    } else if clean.imm != insn.imm {
        Some("imm")
    } else {
        None
    }
}
