//! The instruction constructors and register names of include/linux/filter.h
//! (Linux 6.18), as `bpf_convert_filter()` uses them.
//!
//! Each constructor is the macro of the same name in lower case
//! (`BPF_ALU32_REG(OP, DST, SRC)` is [`alu32_reg`]) and builds its
//! [`Op`] (so its fields are those [`Op::encode`] writes: every unused
//! field zero, as the kernel's designated initialisers leave them).
//!
//! The register convention of converted classic programs is the kernel's:
//! A = r0, X = r7, TMP = r2, CTX = r6, D = r8, H = r9, FP = r10.
//!
//! ```
//! use ebpf::filter_h::{alu32_reg, BPF_REG_A};
//! use ebpf::op::AluOp;
//! assert_eq!(alu32_reg(AluOp::Xor, BPF_REG_A, BPF_REG_A), ebpf::Insn::new(0xac, 0, 0, 0, 0));
//! ```

use crate::isa::insn::Insn;
use crate::isa::op::{AluOp, CallKind, Endian, JmpCond, Op, Operand, Size, Width};
use crate::isa::opcode::{R0, R1, R10, R2, R3, R4, R5, R6, R7, R8, R9};

/// `BPF_REG_ARG1`: first helper argument; a program's context arrives here.
pub const BPF_REG_ARG1: u8 = R1;
/// `BPF_REG_ARG2`.
pub const BPF_REG_ARG2: u8 = R2;
/// `BPF_REG_ARG3`.
pub const BPF_REG_ARG3: u8 = R3;
/// `BPF_REG_ARG4`.
pub const BPF_REG_ARG4: u8 = R4;
/// `BPF_REG_ARG5`.
pub const BPF_REG_ARG5: u8 = R5;
/// `BPF_REG_CTX`: the context (`struct sk_buff *` or `struct seccomp_data *`).
pub const BPF_REG_CTX: u8 = R6;
/// `BPF_REG_FP`: the read-only frame pointer.
pub const BPF_REG_FP: u8 = R10;
/// `BPF_REG_A`: the classic accumulator, also the return value.
pub const BPF_REG_A: u8 = R0;
/// `BPF_REG_X`: the classic index register.
pub const BPF_REG_X: u8 = R7;
/// `BPF_REG_TMP`: scratch register (r2 since Linux 4.18, r8 before).
pub const BPF_REG_TMP: u8 = R2;
/// `BPF_REG_D`: cached `skb->data` (callee-saved).
pub const BPF_REG_D: u8 = R8;
/// `BPF_REG_H`: cached headlen (callee-saved).
pub const BPF_REG_H: u8 = R9;

#[inline]
fn one(op: Op) -> Insn {
    op.encode().first()
}

/// `BPF_ALU64_REG(OP, DST, SRC)`.
#[inline]
pub fn alu64_reg(op: AluOp, dst: u8, src: u8) -> Insn {
    one(Op::Alu { width: Width::W64, op, dst, src: Operand::X(src) })
}

/// `BPF_ALU32_REG(OP, DST, SRC)`.
#[inline]
pub fn alu32_reg(op: AluOp, dst: u8, src: u8) -> Insn {
    one(Op::Alu { width: Width::W32, op, dst, src: Operand::X(src) })
}

/// `BPF_ALU64_IMM(OP, DST, IMM)`.
#[inline]
pub fn alu64_imm(op: AluOp, dst: u8, imm: i32) -> Insn {
    one(Op::Alu { width: Width::W64, op, dst, src: Operand::K(imm) })
}

/// `BPF_ALU32_IMM(OP, DST, IMM)`.
#[inline]
pub fn alu32_imm(op: AluOp, dst: u8, imm: i32) -> Insn {
    one(Op::Alu { width: Width::W32, op, dst, src: Operand::K(imm) })
}

/// `BPF_ALU32_IMM(BPF_NEG, DST, 0)`: `DST = -DST` on the low 32 bits.
#[inline]
pub fn neg32(dst: u8) -> Insn {
    one(Op::Neg { width: Width::W32, dst })
}

/// `BPF_ENDIAN(BPF_FROM_BE, DST, LEN)` (`BPF_TO_BE`: the same bits).
#[inline]
pub fn endian_from_be(dst: u8, bits: i32) -> Insn {
    one(Op::End { endian: Endian::ToBe, dst, bits })
}

/// `BPF_MOV64_REG(DST, SRC)`.
#[inline]
pub fn mov64_reg(dst: u8, src: u8) -> Insn {
    alu64_reg(AluOp::Mov, dst, src)
}

/// `BPF_MOV32_REG(DST, SRC)`.
#[inline]
pub fn mov32_reg(dst: u8, src: u8) -> Insn {
    alu32_reg(AluOp::Mov, dst, src)
}

/// `BPF_MOV64_IMM(DST, IMM)`.
#[inline]
pub fn mov64_imm(dst: u8, imm: i32) -> Insn {
    alu64_imm(AluOp::Mov, dst, imm)
}

/// `BPF_MOV32_IMM(DST, IMM)`.
#[inline]
pub fn mov32_imm(dst: u8, imm: i32) -> Insn {
    alu32_imm(AluOp::Mov, dst, imm)
}

/// `BPF_LD_ABS(SIZE, IMM)`.
#[inline]
pub fn ld_abs(size: Size, imm: i32) -> Insn {
    one(Op::LdAbs { size, imm })
}

/// `BPF_LD_IND(SIZE, SRC, IMM)`.
#[inline]
pub fn ld_ind(size: Size, src: u8, imm: i32) -> Insn {
    one(Op::LdInd { size, src, imm })
}

/// `BPF_LDX_MEM(SIZE, DST, SRC, OFF)`.
#[inline]
pub fn ldx_mem(size: Size, dst: u8, src: u8, off: i16) -> Insn {
    one(Op::Ldx { size, dst, src, off })
}

/// `BPF_STX_MEM(SIZE, DST, SRC, OFF)`.
#[inline]
pub fn stx_mem(size: Size, dst: u8, src: u8, off: i16) -> Insn {
    one(Op::Stx { size, dst, src, off })
}

/// `BPF_ST_MEM(SIZE, DST, OFF, IMM)`.
#[inline]
pub fn st_mem(size: Size, dst: u8, off: i16, imm: i32) -> Insn {
    one(Op::St { size, dst, off, imm })
}

/// `BPF_JMP_REG(OP, DST, SRC, OFF)`.
#[inline]
pub fn jmp_reg(cond: JmpCond, dst: u8, src: u8, off: i16) -> Insn {
    one(Op::Jmp { width: Width::W64, cond, dst, src: Operand::X(src), off })
}

/// `BPF_JMP_IMM(OP, DST, IMM, OFF)`.
#[inline]
pub fn jmp_imm(cond: JmpCond, dst: u8, imm: i32, off: i16) -> Insn {
    one(Op::Jmp { width: Width::W64, cond, dst, src: Operand::K(imm), off })
}

/// `BPF_JMP32_REG(OP, DST, SRC, OFF)`: compares the low 32 bits.
#[inline]
pub fn jmp32_reg(cond: JmpCond, dst: u8, src: u8, off: i16) -> Insn {
    one(Op::Jmp { width: Width::W32, cond, dst, src: Operand::X(src), off })
}

/// `BPF_JMP32_IMM(OP, DST, IMM, OFF)`: compares the low 32 bits with `imm`.
#[inline]
pub fn jmp32_imm(cond: JmpCond, dst: u8, imm: i32, off: i16) -> Insn {
    one(Op::Jmp { width: Width::W32, cond, dst, src: Operand::K(imm), off })
}

/// `BPF_JMP_A(OFF)`.
#[inline]
pub fn jmp_a(off: i16) -> Insn {
    one(Op::Ja { off })
}

/// `BPF_EMIT_CALL(FUNC)` with the helper id in `imm` (the kernel stores
/// `FUNC - __bpf_call_base`; our ids name [`crate::abi::skb::helper`]s).
#[inline]
pub fn emit_call(id: i32) -> Insn {
    one(Op::Call { kind: CallKind::Helper, imm: id })
}

/// `BPF_EXIT_INSN()`.
#[inline]
pub fn exit_insn() -> Insn {
    one(Op::Exit)
}
