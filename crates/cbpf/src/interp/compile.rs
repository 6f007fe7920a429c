//! Pre-decoding a validated program into the interpreter's internal form.

use std::num::NonZeroU32;

use crate::insn::{AluOp, Insn, JmpOp, Op as View, Size, Src};
use crate::opcode::SKF_AD_OFF;
use crate::validate::is_ancillary;

use super::socket::Ancillary;

/// Compare-run link meaning "fall through to the next compare of the run".
pub(super) const NEXT: u16 = u16::MAX;
/// Target of the filler entries of the compare table: a pc past any program
/// (programs have at most 4096 instructions), which ends a run with 0.
/// Unreachable; it only keeps a broken invariant from looping.
const DEAD: u16 = u16::MAX - 1;

/// Comparison of a conditional jump, unsigned 32-bit as in classic BPF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CmpOp {
    Jeq,
    Jgt,
    Jge,
    Jset,
}

impl CmpOp {
    fn from_jmp(op: JmpOp) -> Self {
        match op {
            JmpOp::Jeq => CmpOp::Jeq,
            JmpOp::Jgt => CmpOp::Jgt,
            JmpOp::Jge => CmpOp::Jge,
            JmpOp::Jset => CmpOp::Jset,
        }
    }

    #[inline(always)]
    pub(super) fn eval(self, a: u32, b: u32) -> bool {
        match self {
            CmpOp::Jeq => a == b,
            CmpOp::Jgt => a > b,
            CmpOp::Jge => a >= b,
            CmpOp::Jset => a & b != 0,
        }
    }
}

/// One entry of the compare-run table: `if (A op k)` go to `jt` else `jf`,
/// where a target of [`NEXT`] means "the next entry, which is also a compare".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cmp {
    pub(super) k: u32,
    pub(super) op: CmpOp,
    pub(super) jt: u16,
    pub(super) jf: u16,
}

const FILLER: Cmp = Cmp { k: 0, op: CmpOp::Jeq, jt: DEAD, jf: DEAD };

/// A pre-decoded classic instruction. Jump targets are absolute pcs (a
/// program has at most 4096 instructions, so `u16` holds them); 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    LdImm(u32),
    LdxImm(u32),
    LdMem(u8),
    LdxMem(u8),
    St(u8),
    Stx(u8),
    /// Seccomp-internal 0x21.
    LdSeccomp(u32),
    LdAbs { size: u8, k: u32 },
    LdInd { size: u8, k: u32 },
    LdLen,
    LdxLen,
    LdxMsh(u32),
    Anc(Ancillary),
    AddK(u32),
    AddX,
    SubK(u32),
    SubX,
    MulK(u32),
    MulX,
    DivK(NonZeroU32),
    DivX,
    ModK(NonZeroU32),
    ModX,
    AndK(u32),
    AndX,
    OrK(u32),
    OrX,
    XorK(u32),
    XorX,
    LshK(u32),
    LshX,
    RshK(u32),
    RshX,
    Neg,
    Tax,
    Txa,
    Ja(u16),
    JmpX { op: CmpOp, jt: u16, jf: u16 },
    /// A conditional jump on `#k`: enter the compare run at this pc.
    Cmp,
    RetK(u32),
    RetA,
}

/// Absolute target `pc + 1 + off`, saturated into the dead zone if it could
/// not be a pc (impossible for validated programs).
fn target(pc: usize, off: u64) -> u16 {
    u16::try_from(pc as u64 + 1 + off).unwrap_or(DEAD).min(DEAD)
}

fn is_cmp_k(insn: Option<&Insn>) -> bool {
    matches!(insn.and_then(|i| i.op()), Some(View::Jmp { src: Src::K, .. }))
}

/// Pre-decodes validated instructions into ops and the compare-run table.
///
/// Relies on what `validate()` checked: every code has a typed view, jumps
/// land inside the program, `M[k]` has `k < 16`, `div/mod #k` has `k != 0`,
/// shifts by `#k` have `k < 32`. An instruction that breaks this (impossible
/// through the public API) becomes `ret #0`.
pub(super) fn compile(insns: &[Insn]) -> (Box<[Op]>, Box<[Cmp]>) {
    let mut ops = Vec::with_capacity(insns.len());
    let mut cmps = Vec::with_capacity(insns.len());
    for (pc, insn) in insns.iter().enumerate() {
        let mut cmp = FILLER;
        let op = match insn.op() {
            Some(View::Jmp { op, src: Src::K, k, jt, jf }) => {
                let next_is_cmp = is_cmp_k(insns.get(pc + 1));
                let link = |off: u8| {
                    if off == 0 && next_is_cmp {
                        NEXT
                    } else {
                        target(pc, u64::from(off))
                    }
                };
                cmp = Cmp { k, op: CmpOp::from_jmp(op), jt: link(jt), jf: link(jf) };
                Op::Cmp
            }
            Some(view) => decode(pc, view),
            None => Op::RetK(0),
        };
        ops.push(op);
        cmps.push(cmp);
    }
    (ops.into_boxed_slice(), cmps.into_boxed_slice())
}

fn mem_index(k: u32) -> u8 {
    (k & 15) as u8
}

fn size_bytes(size: Size) -> u8 {
    size.bytes() as u8
}

fn decode(pc: usize, view: View) -> Op {
    match view {
        View::LdImm { k } => Op::LdImm(k),
        View::LdxImm { k } => Op::LdxImm(k),
        View::LdMem { k } => Op::LdMem(mem_index(k)),
        View::LdxMem { k } => Op::LdxMem(mem_index(k)),
        View::St { k } => Op::St(mem_index(k)),
        View::Stx { k } => Op::Stx(mem_index(k)),
        View::LdAbs { size, k } => {
            if k >= SKF_AD_OFF && is_ancillary(k) {
                Ancillary::from_offset(k - SKF_AD_OFF).map_or(Op::RetK(0), Op::Anc)
            } else {
                Op::LdAbs { size: size_bytes(size), k }
            }
        }
        View::LdInd { size, k } => Op::LdInd { size: size_bytes(size), k },
        View::LdLen => Op::LdLen,
        View::LdxLen => Op::LdxLen,
        View::LdxMsh { k } => Op::LdxMsh(k),
        View::LdxAbsSeccomp { k } => Op::LdSeccomp(k),
        View::Alu { op, src, k } => alu(op, src, k),
        View::Neg => Op::Neg,
        View::Ja { k } => Op::Ja(target(pc, u64::from(k))),
        View::Jmp { op, src: _, k: _, jt, jf } => Op::JmpX {
            op: CmpOp::from_jmp(op),
            jt: target(pc, u64::from(jt)),
            jf: target(pc, u64::from(jf)),
        },
        View::RetK { k } => Op::RetK(k),
        View::RetA => Op::RetA,
        View::Tax => Op::Tax,
        View::Txa => Op::Txa,
    }
}

fn alu(op: AluOp, src: Src, k: u32) -> Op {
    match (op, src) {
        (AluOp::Add, Src::K) => Op::AddK(k),
        (AluOp::Add, Src::X) => Op::AddX,
        (AluOp::Sub, Src::K) => Op::SubK(k),
        (AluOp::Sub, Src::X) => Op::SubX,
        (AluOp::Mul, Src::K) => Op::MulK(k),
        (AluOp::Mul, Src::X) => Op::MulX,
        (AluOp::Div, Src::K) => NonZeroU32::new(k).map_or(Op::RetK(0), Op::DivK),
        (AluOp::Div, Src::X) => Op::DivX,
        (AluOp::Or, Src::K) => Op::OrK(k),
        (AluOp::Or, Src::X) => Op::OrX,
        (AluOp::And, Src::K) => Op::AndK(k),
        (AluOp::And, Src::X) => Op::AndX,
        (AluOp::Lsh, Src::K) => Op::LshK(k),
        (AluOp::Lsh, Src::X) => Op::LshX,
        (AluOp::Rsh, Src::K) => Op::RshK(k),
        (AluOp::Rsh, Src::X) => Op::RshX,
        (AluOp::Mod, Src::K) => NonZeroU32::new(k).map_or(Op::RetK(0), Op::ModK),
        (AluOp::Mod, Src::X) => Op::ModX,
        (AluOp::Xor, Src::K) => Op::XorK(k),
        (AluOp::Xor, Src::X) => Op::XorX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Op>(), 8);
    }

    #[test]
    fn compare_runs_link_fall_throughs_only_inside_the_run() {
        use crate::opcode::*;
        let insns = [
            Insn::stmt(LD_IMM, 5),
            Insn::jump(JMP_JEQ_K, 1, 3, 0),  // 1: jf falls into 2 (a compare)
            Insn::jump(JMP_JGT_K, 9, 0, 1),  // 2: jt falls into 3 (a compare), jf -> 4
            Insn::jump(JMP_JSET_K, 2, 1, 0), // 3: jf falls into 4 (not a compare)
            Insn::stmt(RET_K, 1),
            Insn::stmt(RET_K, 2),
        ];
        let (ops, cmps) = compile(&insns);
        assert_eq!(ops[1], Op::Cmp);
        assert_eq!(cmps[1], Cmp { k: 1, op: CmpOp::Jeq, jt: 5, jf: NEXT });
        assert_eq!(cmps[2], Cmp { k: 9, op: CmpOp::Jgt, jt: NEXT, jf: 4 });
        assert_eq!(cmps[3], Cmp { k: 2, op: CmpOp::Jset, jt: 5, jf: 4 });
        assert_eq!(cmps[0], FILLER);
    }
}
