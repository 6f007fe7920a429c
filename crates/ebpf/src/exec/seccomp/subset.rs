//! Recognising the converted-seccomp subset (module docs of
//! [`super`]): each instruction decoded into the subset's [`SOp`] with
//! the registers it reads and writes, and the proofs that make the
//! executor's shortcuts sound (every context load after `r6 = r1`, every
//! stack read after a write of its slot, forward jumps, `exit` last).
//! Compiling what was recognised is [`super::compile`]'s.

use crate::isa::filter_h::{BPF_REG_ARG1, BPF_REG_CTX, BPF_REG_FP};
use crate::isa::insn::Insn;
use crate::isa::op::{AluOp, JmpCond, Op, Operand, Size, Width};

use super::ops::{alu_code, bit, reg, slot, Kind, SOp, EQ, GE, GT, LE, LT, NE, RA, RK, SET};

/// Per-instruction facts of the subset, before fusion.
#[derive(Debug)]
pub(super) struct Plain {
    pub(super) op: SOp,
    /// Registers (bit per code) read and written.
    pub(super) uses: u8,
    pub(super) defs: u8,
    /// Conditional jump: both successors; `JA`: only the target; `EXIT`: none.
    pub(super) falls: bool,
    pub(super) jumps: bool,
}

/// Decodes one instruction of the subset, or `None` if it is outside it.
pub(super) fn plain(pc: usize, insn: Insn) -> Option<Plain> {
    let mk = |kind, dst, src, aux, target, imm| SOp { kind, dst, src, aux, target, imm };
    let target = |off: i16| -> Option<u32> { (off >= 0).then(|| (pc as i64 + 1 + i64::from(off)) as u32) };
    let p = |op: SOp, uses: u8, defs: u8| Plain { op, uses, defs, falls: true, jumps: false };
    // `ld_imm64` is outside the subset: no second slot to read.
    let op = Op::decode(insn, None).ok()?;
    Some(match op {
        // ALU32 but ARSH and the signed forms; no junk in `off`.
        Op::Alu { width: Width::W32, op: alu, dst, src } => {
            if insn.off != 0 || matches!(alu, AluOp::Arsh | AluOp::SDiv | AluOp::SMod) {
                return None;
            }
            let dst = reg(dst)?;
            match (alu, src) {
                (AluOp::Mov, Operand::X(src)) => {
                    let src = reg(src)?;
                    p(mk(Kind::Mov32, dst, src, 0, 0, 0), bit(src), bit(dst))
                }
                (AluOp::Mov, Operand::K(imm)) => p(mk(Kind::MovK, dst, 0, 0, 0, u64::from(imm as u32)), 0, bit(dst)),
                (_, Operand::X(src)) => {
                    let src = reg(src)?;
                    p(mk(Kind::AluX, dst, src, alu_code(alu), 0, 0), bit(src) | bit(dst), bit(dst))
                }
                (_, Operand::K(imm)) => {
                    p(mk(Kind::AluK, dst, 0, alu_code(alu), 0, u64::from(imm as u32)), bit(dst), bit(dst))
                }
            }
        }
        Op::Neg { width: Width::W32, dst } if insn.off == 0 => {
            let dst = reg(dst)?;
            p(mk(Kind::Neg, dst, 0, 0, 0, 0), bit(dst), bit(dst))
        }
        // MOV64 X: among A/TMP/X, or `r6 = r1`.
        Op::Alu { width: Width::W64, op: AluOp::Mov, dst, src: Operand::X(src) } => {
            if dst == BPF_REG_CTX && src == BPF_REG_ARG1 {
                p(mk(Kind::CtxPtr, 0, 0, 0, 0, 0), 0, 0)
            } else {
                let (dst, src) = (reg(dst)?, reg(src)?);
                p(mk(Kind::Mov64, dst, src, 0, 0, 0), bit(src), bit(dst))
            }
        }
        Op::Ldx { size: Size::W, dst, src, off } => {
            let dst = reg(dst)?;
            match src {
                BPF_REG_CTX if (0..=60).contains(&off) && off % 4 == 0 => {
                    p(mk(Kind::LdCtx, dst, 0, (off / 4) as u8, 0, 0), 0, bit(dst))
                }
                BPF_REG_FP => p(mk(Kind::LdStack, dst, 0, slot(off)?, 0, 0), 0, bit(dst)),
                _ => return None,
            }
        }
        Op::Stx { size: Size::W, dst: BPF_REG_FP, src, off } => {
            let src = reg(src)?;
            p(mk(Kind::StStack, 0, src, slot(off)?, 0, 0), bit(src), 0)
        }
        Op::Ja { off } => {
            Plain { op: mk(Kind::Ja, 0, 0, 0, target(off)?, 0), uses: 0, defs: 0, falls: false, jumps: true }
        }
        Op::Exit => Plain { op: mk(Kind::Exit, 0, 0, 0, 0, 0), uses: bit(RA), defs: 0, falls: false, jumps: false },
        // The unsigned conditions of class JMP, K and X.
        Op::Jmp { width: Width::W64, cond, dst, src, off } => {
            let cond = match cond {
                JmpCond::Eq => EQ,
                JmpCond::Gt => GT,
                JmpCond::Ge => GE,
                JmpCond::Set => SET,
                JmpCond::Ne => NE,
                JmpCond::Lt => LT,
                JmpCond::Le => LE,
                _ => return None,
            };
            let dst = reg(dst)?;
            let t = target(off)?;
            let (src, imm, uses) = match src {
                Operand::X(src) => {
                    let src = reg(src)?;
                    (src, 0, bit(src) | bit(dst))
                }
                Operand::K(imm) => (RK, imm as i64 as u64, bit(dst)),
            };
            let kind = match (dst, src, cond) {
                (RA, RK, EQ) => Kind::JeqK,
                (RA, RK, NE) => Kind::JneK,
                (RA, RK, GT) => Kind::JgtK,
                (RA, RK, GE) => Kind::JgeK,
                (RA, RK, LT) => Kind::JltK,
                (RA, RK, LE) => Kind::JleK,
                (RA, RK, SET) => Kind::JsetK,
                _ => Kind::Jcc,
            };
            Plain { op: mk(kind, dst, src, cond, t, imm), uses, defs: 0, falls: true, jumps: true }
        }
        _ => return None,
    })
}

/// A program inside the converted-seccomp subset: its instructions as
/// the subset's ops, with the registers each reads and writes (what
/// [`super::compile`] builds on).
#[derive(Debug)]
pub(crate) struct Subset {
    pub(super) plains: Vec<Plain>,
}

impl Subset {
    /// `insns` (already accepted by `Program::load`) as the subset, or
    /// `None` if the program is outside it (the general interpreter runs
    /// it then): every instruction one of the subset's, the last `exit`,
    /// every jump forward; on every path, every context load after
    /// `r6 = r1` and every stack read after a write of its slot (forward
    /// data flow: all jumps go forward, so pc order is a topological
    /// order).
    pub(crate) fn recognise(insns: &[Insn]) -> Option<Subset> {
        let n = insns.len();
        if n == 0 || n > u32::MAX as usize / 2 || Op::decode(*insns.last()?, None) != Ok(Op::Exit) {
            return None;
        }
        let plains: Vec<Plain> = insns.iter().enumerate().map(|(pc, i)| plain(pc, *i)).collect::<Option<_>>()?;
        // Is `r6 = r1` done, and which stack slots are written, on every
        // path to each pc.
        let mut reached = vec![false; n];
        let mut ctx_ready = vec![true; n];
        let mut written = vec![u16::MAX; n];
        if let (Some(r), Some(c), Some(w)) = (reached.first_mut(), ctx_ready.first_mut(), written.first_mut()) {
            (*r, *c, *w) = (true, false, 0);
        }
        for (pc, p) in plains.iter().enumerate() {
            if !reached.get(pc).copied().unwrap_or(false) {
                continue;
            }
            let (mut ready, mut w) = (ctx_ready.get(pc).copied()?, written.get(pc).copied()?);
            match p.op.kind {
                Kind::CtxPtr => ready = true,
                Kind::LdCtx if !ready => return None,
                Kind::LdStack if w & (1 << p.op.aux) == 0 => return None,
                Kind::StStack => w |= 1 << p.op.aux,
                _ => {}
            }
            let succs = [p.falls.then_some(pc + 1), p.jumps.then_some(p.op.target as usize)];
            for s in succs.into_iter().flatten() {
                // In range: the last insn is exit; targets were checked by load.
                *reached.get_mut(s)? = true;
                *ctx_ready.get_mut(s)? &= ready;
                *written.get_mut(s)? &= w;
            }
        }
        Some(Subset { plains })
    }
}
