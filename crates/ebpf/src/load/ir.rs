//! The general interpreter's internal form: one [`Step`] (16 bytes) per
//! instruction slot, pre-decoded by [`crate::load`] so the run loop
//! ([`crate::exec::general`]) never decodes, plus the tables of the
//! superinstructions [`crate::load`]'s fusion makes ([`ChainEntry`],
//! [`EqEntry`], [`LoadCmp`]).
//!
//! A `Step` is not the ISA's [`crate::isa::op::Step`]: K and X forms share a
//! [`StepKind`] (the operand is `regs[src] | imm`), jump targets are
//! absolute, and some kinds stand for several instructions.

use crate::isa::op::{AluOp, JmpCond, Width};

/// Index of the always-zero pseudo register that K-form instructions read as
/// their `src`, so `regs[src] | imm` is the operand for both K and X forms.
pub(crate) const ZERO_REG: u8 = 15;
/// Index of the scratch pseudo register that a compare-chain element writes
/// when it has no real register to set.
pub(crate) const SCRATCH_REG: u8 = 11;

/// Operation of one pre-decoded instruction. K and X forms share a kind: the
/// operand is always `regs[src] | imm`, with `src` = [`ZERO_REG`] for K and
/// `imm` = 0 for X.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum StepKind {
    Add64,
    Sub64,
    Mul64,
    Div64,
    SDiv64,
    Or64,
    And64,
    Lsh64,
    Rsh64,
    Neg64,
    Mod64,
    SMod64,
    Xor64,
    Mov64,
    MovSx64B,
    MovSx64H,
    MovSx64W,
    Arsh64,
    Bswap16,
    Bswap32,
    Bswap64,
    Add32,
    Sub32,
    Mul32,
    Div32,
    SDiv32,
    Or32,
    And32,
    Lsh32,
    Rsh32,
    Neg32,
    Mod32,
    SMod32,
    Xor32,
    Mov32,
    MovSx32B,
    MovSx32H,
    Arsh32,
    Le16,
    Le32,
    Le64,
    Be16,
    Be32,
    Be64,
    Ja,
    Jeq64,
    Jgt64,
    Jge64,
    Jset64,
    Jne64,
    Jsgt64,
    Jsge64,
    Jlt64,
    Jle64,
    Jslt64,
    Jsle64,
    Jeq32,
    Jgt32,
    Jge32,
    Jset32,
    Jne32,
    Jsgt32,
    Jsge32,
    Jlt32,
    Jle32,
    Jslt32,
    Jsle32,
    /// Fused compare chain on `regs[dst]`: `a` = first [`ChainEntry`],
    /// `imm` = end entry (exclusive).
    Chain,
    /// `LdxW` into `dst` from `src + off`, then a [`StepKind::Chain`] on `dst`:
    /// `a` = first entry, `imm` = end | (off as u32) << 32.
    LoadChain,
    /// Like [`StepKind::Chain`] over [`EqEntry`]s (`if dst == K goto`, JMP64).
    EqChain,
    /// Like [`StepKind::LoadChain`] over [`EqEntry`]s.
    LoadEqChain,
    /// `wD = *(u32 *)(rS + off); if rD <cond> K goto a` (JMP64, K form):
    /// `imm` = (K as u32) | (off as u16) << 32.
    LoadJeq,
    LoadJne,
    LoadJgt,
    LoadJge,
    LoadJlt,
    LoadJle,
    /// A [`LoadCmp`] pair and the pairs linked to it (`a` = first entry):
    /// consecutive load-and-compare pairs run in one dispatch, following
    /// both the taken and the fall-through edges.
    LoadCmpRun,
    /// `r0 = imm; exit` (a `MOV K` into r0 followed by `exit`).
    RetImm,
    /// The converter's prologue `wD ^= wD; wS ^= wS; rSIZE = rA`
    /// (`dst`, `src`, `size`, `a` name the registers).
    Prologue,
    Call,
    CallLocal,
    Callx,
    Exit,
    LdImm64,
    LdAbs,
    LdInd,
    LdxB,
    LdxH,
    LdxW,
    LdxDw,
    LdxSb,
    LdxSh,
    LdxSw,
    StB,
    StH,
    StW,
    StDw,
    /// `a` = off, `imm` = atomic operation, `size` = 4 or 8.
    Atomic,
    /// `a` = off, `size` = 1/2/4/8.
    LoadAcq,
    StoreRel,
}

/// One pre-decoded instruction (16 bytes).
///
/// `a` holds, by kind: the absolute jump/call target, the memory offset (as
/// `i32` bits), the helper slot, or the first chain entry; `size` the access
/// width of LD ABS/IND and acquire/release.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    pub kind: StepKind,
    pub dst: u8,
    pub src: u8,
    pub size: u8,
    pub a: u32,
    pub imm: u64,
}

/// One element of a fused compare chain: `if cmp_reg <cond> value goto
/// target`, optionally preceded by `write_reg = write_val` (the converter's
/// `w2 = k; if r0 == r2 goto` idiom). The condition is encoded as a range
/// test: taken iff `(((x & mask) ^ flip) - lo <= span) != negate`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChainEntry {
    pub mask: u64,
    pub flip: u64,
    pub lo: u64,
    pub span: u64,
    pub write_val: u64,
    /// pc of the jump instruction (for step accounting and errors).
    pub jump_pc: u32,
    pub target: u32,
    pub write_reg: u8,
    pub negate: bool,
}

/// Element of an [`StepKind::EqChain`]: `if x == value goto target` (JMP64, K
/// form, or X form against a register the element itself just set).
///
/// Every register write of an eq stretch goes to one register W, which
/// nothing in the stretch reads; so instead of storing at each element, the
/// chain stores, when control leaves at this element, the value W holds
/// after it: `regs[wreg] = wval` (`wreg` = [`SCRATCH_REG`] if no element up
/// to here wrote W).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EqEntry {
    pub value: u64,
    pub wval: u64,
    pub jump_pc: u32,
    pub target: u32,
    pub wreg: u8,
}

/// Element of a [`StepKind::LoadCmpRun`]: `wD = *(u32 *)(rS + off)` at `pc`,
/// then `if rD <cond> K goto taken` at `pc + 1` (an unsigned 64-bit compare
/// with K, `jeq` `jne` `jgt` `jge` `jlt` `jle`: the pairs `fuse` makes a
/// `LoadJ*` of), the condition as a range test on the loaded (zero-extended)
/// value: taken iff `(x - lo <= span) != negate`. `taken_next` /
/// `fall_next` index the entry at `taken` / `pc + 2`, or [`NO_ENTRY`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadCmp {
    pub off: u64,
    pub lo: u64,
    pub span: u64,
    pub pc: u32,
    pub taken: u32,
    pub taken_next: u32,
    pub fall_next: u32,
    pub dst: u8,
    pub src: u8,
    pub negate: bool,
}

/// "No linked entry" in [`LoadCmp`].
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// The kind for `width` of an op's pair of kinds (64-bit, 32-bit).
pub(crate) fn of_width(width: Width, (w64, w32): (StepKind, StepKind)) -> StepKind {
    match width {
        Width::W64 => w64,
        Width::W32 => w32,
    }
}

/// The interpreter's kind of a binary ALU operation.
pub(crate) fn alu_kind(width: Width, alu: AluOp) -> StepKind {
    of_width(
        width,
        match alu {
            AluOp::Add => (StepKind::Add64, StepKind::Add32),
            AluOp::Sub => (StepKind::Sub64, StepKind::Sub32),
            AluOp::And => (StepKind::And64, StepKind::And32),
            AluOp::Or => (StepKind::Or64, StepKind::Or32),
            AluOp::Lsh => (StepKind::Lsh64, StepKind::Lsh32),
            AluOp::Rsh => (StepKind::Rsh64, StepKind::Rsh32),
            AluOp::Xor => (StepKind::Xor64, StepKind::Xor32),
            AluOp::Mul => (StepKind::Mul64, StepKind::Mul32),
            AluOp::Mov => (StepKind::Mov64, StepKind::Mov32),
            AluOp::Arsh => (StepKind::Arsh64, StepKind::Arsh32),
            AluOp::Div => (StepKind::Div64, StepKind::Div32),
            AluOp::SDiv => (StepKind::SDiv64, StepKind::SDiv32),
            AluOp::Mod => (StepKind::Mod64, StepKind::Mod32),
            AluOp::SMod => (StepKind::SMod64, StepKind::SMod32),
        },
    )
}

/// The interpreter's kind of a conditional jump.
pub(crate) fn jmp_kind(width: Width, cond: JmpCond) -> StepKind {
    of_width(
        width,
        match cond {
            JmpCond::Eq => (StepKind::Jeq64, StepKind::Jeq32),
            JmpCond::Ne => (StepKind::Jne64, StepKind::Jne32),
            JmpCond::Gt => (StepKind::Jgt64, StepKind::Jgt32),
            JmpCond::Lt => (StepKind::Jlt64, StepKind::Jlt32),
            JmpCond::Ge => (StepKind::Jge64, StepKind::Jge32),
            JmpCond::Le => (StepKind::Jle64, StepKind::Jle32),
            JmpCond::Sgt => (StepKind::Jsgt64, StepKind::Jsgt32),
            JmpCond::Slt => (StepKind::Jslt64, StepKind::Jslt32),
            JmpCond::Sge => (StepKind::Jsge64, StepKind::Jsge32),
            JmpCond::Sle => (StepKind::Jsle64, StepKind::Jsle32),
            JmpCond::Set => (StepKind::Jset64, StepKind::Jset32),
        },
    )
}

// `Step` stays 16 bytes (see its docs), checked when the crate compiles.
const _: () = assert!(std::mem::size_of::<Step>() == 16);

/// Evaluates a conditional jump's condition (reference form for the chain
/// fusion's tests): the op table's evaluation of the jump `kind` decodes
/// from.
#[cfg(test)]
pub(crate) fn condition(kind: StepKind, x: u64, v: u64) -> bool {
    Width::ALL
        .into_iter()
        .flat_map(|w| JmpCond::ALL.into_iter().map(move |c| (w, c)))
        .find(|&(w, c)| jmp_kind(w, c) == kind)
        .is_some_and(|(w, c)| c.eval(w, x, v))
}
