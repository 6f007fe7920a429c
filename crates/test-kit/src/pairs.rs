//! Program pairs for the equivalence checker's suites (`equiv`): copies
//! equal to a program by construction, and single-instruction mutations
//! that may or may not change what it does.
//!
//! All work on user-form instructions (`Program::original`, seccomp loads
//! as `ld [k]`) and return `None` (or skip) where the result would not fit
//! classic BPF (a conditional jump past 255, more than 4096 instructions);
//! callers validate what they get.

use cbpf::opcode::*;
use cbpf::{AluOp, Insn, JmpOp, Op, Program, SeccompData, Src};
use equiv::{Compare, Limits, Options, Side, Verdict};
use seccomp::fast::{Partial, PartialResult};

use crate::branch::branch_inputs;
use crate::oracle::Oracle;

/// `BPF_MAXINSNS`.
const MAX_INSNS: usize = 4096;

/// `insns` with `block` inserted before instruction `at`; jumps over the
/// insertion point are lengthened, a jump to `at` lands on the block.
pub fn insert(insns: &[Insn], at: usize, block: &[Insn]) -> Option<Vec<Insn>> {
    if at > insns.len() || insns.len() + block.len() > MAX_INSNS {
        return None;
    }
    let grow = block.len();
    let mut out = Vec::with_capacity(insns.len() + grow);
    for (i, insn) in insns.iter().enumerate() {
        if i == at {
            out.extend_from_slice(block);
        }
        let mut insn = *insn;
        if i < at {
            // A target t = i + 1 + off past `at` moves by `grow`.
            let over = |off: u32| i + 1 + off as usize > at;
            if matches!(insn.op(), Some(Op::Ja { .. })) {
                if over(insn.k) {
                    insn.k = insn.k.checked_add(grow as u32)?;
                }
            } else if insn.has_jump_targets() {
                if over(u32::from(insn.jt)) {
                    insn.jt = u8::try_from(usize::from(insn.jt) + grow).ok()?;
                }
                if over(u32::from(insn.jf)) {
                    insn.jf = u8::try_from(usize::from(insn.jf) + grow).ok()?;
                }
            }
        }
        out.push(insn);
    }
    if at == insns.len() {
        out.extend_from_slice(block);
    }
    Some(out)
}

/// A `ja 0` before instruction `at`.
pub fn ja_padded(insns: &[Insn], at: usize) -> Option<Vec<Insn>> {
    insert(insns, at, &[Insn::stmt(JMP_JA, 0)])
}

/// Instruction blocks that leave A, X and `M[]` as they were.
pub fn alu_identities(c: u32) -> [Vec<Insn>; 6] {
    [
        vec![Insn::stmt(ALU_ADD_K, c), Insn::stmt(ALU_SUB_K, c)],
        vec![Insn::stmt(ALU_XOR_K, c), Insn::stmt(ALU_XOR_K, c)],
        vec![Insn::stmt(ALU_NEG, 0), Insn::stmt(ALU_NEG, 0)],
        vec![Insn::stmt(ALU_MUL_K, 1), Insn::stmt(ALU_OR_K, 0)],
        vec![Insn::stmt(ALU_LSH_K, 0), Insn::stmt(ALU_AND_K, u32::MAX)],
        vec![Insn::stmt(ALU_DIV_K, 1), Insn::stmt(ALU_RSH_K, 0)],
    ]
}

/// `insns` with identity block `which % 6` ([`alu_identities`]) before
/// instruction `at`.
pub fn alu_rewritten(insns: &[Insn], at: usize, which: usize, c: u32) -> Option<Vec<Insn>> {
    let blocks = alu_identities(c);
    insert(insns, at, blocks.get(which % blocks.len())?)
}

/// `if arch == A: <the program specialised for arch A> else: <the
/// program>`, the fast engine's residual put in front of the whole filter
/// (each branch entered with A reset to 0, as a filter starts).
pub fn residual_composed(program: &Program, arch: u32) -> Option<Vec<Insn>> {
    let mut partial = Partial::new(program).ok()?;
    let head: Vec<Insn> = match partial.specialize(Some(arch), None) {
        PartialResult::Constant(v) => vec![Insn::stmt(RET_K, v)],
        PartialResult::Residual(r) => r.original().to_vec(),
        PartialResult::Whole => program.original().to_vec(),
    };
    // Both branches start as the filter does, with A = 0 (X and M[] are
    // untouched by the dispatch).
    let skip = u8::try_from(head.len() + 1).ok()?;
    let mut out = vec![Insn::stmt(LD_W_ABS, 4), Insn::jump(JMP_JEQ_K, arch, 0, skip), Insn::stmt(LD_IMM, 0)];
    out.extend(head);
    out.push(Insn::stmt(LD_IMM, 0));
    out.extend_from_slice(program.original());
    (out.len() <= MAX_INSNS).then_some(out)
}

/// Single-instruction mutations of `insns`, each with a name: jump targets
/// moved by one or swapped, constants changed, returned actions replaced,
/// opcodes swapped within their family. Not all of them validate.
pub fn mutations(insns: &[Insn]) -> Vec<(String, Vec<Insn>)> {
    const ACTIONS: [u32; 4] = [0x7fff_0000, 0x8000_0000, 0x0005_0001, 0x7ff0_0000];
    const JUMPS: [JmpOp; 4] = [JmpOp::Jeq, JmpOp::Jgt, JmpOp::Jge, JmpOp::Jset];
    const ALUS: [AluOp; 9] =
        [AluOp::Add, AluOp::Sub, AluOp::Mul, AluOp::Div, AluOp::Or, AluOp::And, AluOp::Lsh, AluOp::Rsh, AluOp::Xor];
    let mut out = Vec::new();
    for (pc, insn) in insns.iter().enumerate() {
        let mut push = |what: String, new: Insn| {
            if new != *insn {
                let mut m = insns.to_vec();
                if let Some(slot) = m.get_mut(pc) {
                    *slot = new;
                }
                out.push((format!("pc {pc}: {what}"), m));
            }
        };
        let i = *insn;
        push("k+1".into(), Insn { k: i.k.wrapping_add(1), ..i });
        push("k-1".into(), Insn { k: i.k.wrapping_sub(1), ..i });
        push("k^0x80000000".into(), Insn { k: i.k ^ 0x8000_0000, ..i });
        match i.op() {
            Some(Op::Jmp { k, jt, jf, .. }) => {
                push("jt+1".into(), Insn { jt: jt.wrapping_add(1), ..i });
                push("jf+1".into(), Insn { jf: jf.wrapping_add(1), ..i });
                push("jt-1".into(), Insn { jt: jt.wrapping_sub(1), ..i });
                push("jf-1".into(), Insn { jf: jf.wrapping_sub(1), ..i });
                push("swap jt/jf".into(), Insn { jt: jf, jf: jt, ..i });
                for op in JUMPS {
                    for s in [Src::K, Src::X] {
                        push(format!("{op:?} {s:?}"), Op::Jmp { op, src: s, k, jt, jf }.to_insn());
                    }
                }
            }
            Some(Op::Ja { k }) => push("ja+1".into(), Op::Ja { k: k.wrapping_add(1) }.to_insn()),
            Some(Op::RetK { .. }) => {
                for a in ACTIONS {
                    push(format!("ret {a:#x}"), Op::RetK { k: a }.to_insn());
                }
                push("ret a".into(), Op::RetA.to_insn());
            }
            Some(Op::RetA) => push("ret #allow".into(), Op::RetK { k: 0x7fff_0000 }.to_insn()),
            Some(Op::LdAbs { size, k }) => {
                push("k+4".into(), Op::LdAbs { size, k: k.wrapping_add(4) }.to_insn());
                push("ld #k".into(), Op::LdImm { k }.to_insn());
            }
            Some(Op::Alu { src, k, .. }) => {
                for op in ALUS {
                    push(format!("{op:?}"), Op::Alu { op, src, k }.to_insn());
                }
                let other = if src == Src::K { Src::X } else { Src::K };
                for op in ALUS {
                    push(format!("{op:?} {other:?}"), Op::Alu { op, src: other, k }.to_insn());
                }
            }
            Some(Op::Tax) => push("txa".into(), Op::Txa.to_insn()),
            Some(Op::Txa) => push("tax".into(), Op::Tax.to_insn()),
            _ => {}
        }
    }
    out
}

/// What [`check_pair`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairOutcome {
    Equal,
    Differ,
    /// A budget struck (`equiv::EquivError::Budget`).
    Undecided,
}

/// `equiv::check` on `a` and `b` (one counterexample per differing class),
/// held to the inputs: when it says equal, no branch-reaching input of
/// either program nor any of `extra` tells them apart on any engine (the
/// oracle: trace and optimised classic interpreters, converted eBPF, fast
/// engine, rbpf); when it says differ, every counterexample gives both
/// programs' reported results on every engine, and they differ in the
/// compared bits. `Err` names the broken property.
pub fn check_pair(
    a: &Program,
    b: &Program,
    compare: Compare,
    limits: Limits,
    extra: &[SeccompData],
) -> Result<PairOutcome, String> {
    let mask = match compare {
        Compare::Value => u32::MAX,
        Compare::Action => seccomp::action::SECCOMP_RET_ACTION_FULL,
    };
    let mut oa = Oracle::new("left", a).map_err(|e| e.to_string())?;
    let mut ob = Oracle::new("right", b).map_err(|e| e.to_string())?;
    let options = Options { compare, all: true, limits };
    let verdict = match equiv::check(Side::single(a), Side::single(b), &options) {
        Ok(v) => v,
        Err(equiv::EquivError::Budget { .. }) => return Ok(PairOutcome::Undecided),
        Err(e) => return Err(format!("equiv failed: {e}")),
    };
    match verdict {
        Verdict::Equal => {
            let inputs = branch_inputs(a).into_iter().chain(branch_inputs(b)).chain(extra.iter().copied());
            for data in inputs {
                let l = oa.check_seccomp(&data).map_err(|m| m.to_string())?;
                let r = ob.check_seccomp(&data).map_err(|m| m.to_string())?;
                if l & mask != r & mask {
                    return Err(format!("equal, but {data:?} gives {l:#x} and {r:#x}"));
                }
            }
            Ok(PairOutcome::Equal)
        }
        Verdict::Differ(cexs) => {
            if cexs.is_empty() {
                return Err("differ without a counterexample".into());
            }
            for c in cexs {
                let l = oa.check_seccomp(&c.data).map_err(|m| m.to_string())?;
                let r = ob.check_seccomp(&c.data).map_err(|m| m.to_string())?;
                if (l, r) != (c.left, c.right) || l & mask == r & mask {
                    return Err(format!("counterexample {c:?}: the engines give {l:#x} and {r:#x}"));
                }
            }
            Ok(PairOutcome::Differ)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use cbpf::Mode;

    #[test]
    fn insertion_keeps_every_jump_target() {
        // 0: jeq #1, 2, 0 -> 3 / 1 ; 1: ja 1 -> 3 ; 2: ret #1 ; 3: ret #2
        let p = [Insn::jump(JMP_JEQ_K, 1, 2, 0), Insn::stmt(JMP_JA, 1), Insn::stmt(RET_K, 1), Insn::stmt(RET_K, 2)];
        let q = ja_padded(&p, 2).unwrap();
        assert_eq!(q[0].jt, 3);
        assert_eq!(q[0].jf, 0);
        assert_eq!(q[1].k, 2);
        assert_eq!(q[2], Insn::stmt(JMP_JA, 0));
        cbpf::validate(&q, Mode::Seccomp).unwrap();
        assert!(mutations(&p).len() > 10);
    }
}
