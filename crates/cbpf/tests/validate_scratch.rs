#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `check_load_and_stores()` (net/core/filter.c, Linux 6.18): the kernel does
//! not clear the scratch words `M[0..16]` per run, so it refuses a program that
//! may read a word before writing it. The rule, as the kernel computes it in one
//! forward pass:
//!
//! - at pc 0 no word is written;
//! - `st`/`stx M[k]` write word `k`; `ld`/`ldx M[k]` need word `k` written on
//!   every way in, else the first such load (lowest pc) is refused;
//! - `ja k` hands its state to `pc + 1 + k`, a conditional jump to both
//!   `pc + 1 + jt` and `pc + 1 + jf`; neither falls through;
//! - every other instruction falls through to `pc + 1`, `ret` included (the
//!   kernel's quirk: the running state is not reset after a `ret`).
//!
//! The tests pin each clause with hand-written programs and compare `validate`
//! with an independent model (a search over `(pc, written words)` states, not
//! the kernel's single pass) on random programs.

use std::collections::BTreeSet;

use cbpf::opcode::*;
use cbpf::{validate, Insn, Mode, Pc, ValidateError as E};
use proptest::prelude::*;

fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

fn j(code: u16, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, 0, jt, jf)
}

const RET0: Insn = Insn::stmt(RET_K, 0);

/// The independent model: every state `(pc, written)` reachable from
/// `(0, none)` along the kernel's edges; the answer is the lowest pc whose load
/// some reaching state has not written.
fn model(insns: &[Insn]) -> Refused {
    let mut seen = BTreeSet::new();
    let mut todo = vec![(0usize, 0u16)];
    let mut bad: Refused = None;
    while let Some((pc, written)) = todo.pop() {
        let Some(insn) = insns.get(pc) else { continue };
        if !seen.insert((pc, written)) {
            continue;
        }
        let bit = 1u16.checked_shl(insn.k).unwrap_or(0); // k < 16 for M[k]
        let mut next = |to: usize, w: u16| todo.push((to, w));
        match insn.code {
            ST | STX => next(pc + 1, written | bit),
            LD_MEM | LDX_MEM => {
                if written & bit == 0 {
                    if bad.is_none_or(|(b, _)| pc < b) {
                        bad = Some((pc, insn.k));
                    }
                } else {
                    next(pc + 1, written);
                }
            }
            JMP_JA => next(pc + 1 + insn.k as usize, written),
            JMP_JEQ_K | JMP_JEQ_X | JMP_JGE_K | JMP_JGE_X | JMP_JGT_K | JMP_JGT_X | JMP_JSET_K | JMP_JSET_X => {
                next(pc + 1 + usize::from(insn.jt), written);
                next(pc + 1 + usize::from(insn.jf), written);
            }
            _ => next(pc + 1, written),
        }
    }
    bad
}

/// The first refused load, as `(pc, k)`.
type Refused = Option<(usize, u32)>;

/// `(name, program, first refused load)`: one case per clause.
fn cases() -> Vec<(&'static str, Vec<Insn>, Refused)> {
    vec![
        ("nothing written at pc 0", vec![s(LD_MEM, 0), RET0], Some((0, 0))),
        ("st writes", vec![s(ST, 5), s(LD_MEM, 5), RET0], None),
        ("stx writes", vec![s(STX, 5), s(LDX_MEM, 5), RET0], None),
        ("another word is not written", vec![s(ST, 5), s(LDX_MEM, 4), RET0], Some((1, 4))),
        // ja: its state goes to pc + 1 + k, and it does not fall through.
        ("ja jumps over the only store", vec![s(JMP_JA, 1), s(ST, 0), s(LD_MEM, 0), RET0], Some((2, 0))),
        ("ja carries the store to its target", vec![s(ST, 0), s(JMP_JA, 1), s(LD_IMM, 0), s(LD_MEM, 0), RET0], None),
        (
            "ja lands with its own state only",
            // pc 1 jumps to 3 over the dead store at 2, so 3 knows M[1] only.
            vec![s(ST, 1), s(JMP_JA, 1), s(ST, 0), s(LD_MEM, 1), s(LD_MEM, 0), RET0],
            Some((4, 0)),
        ),
        (
            "ja does not fall through",
            // pc 1 is dead code: its load of the unwritten M[0] is not refused.
            vec![s(JMP_JA, 1), s(LD_MEM, 0), RET0],
            None,
        ),
        // Conditional jumps: both targets get the state, exactly there.
        (
            "jt target is pc + 1 + jt exactly",
            // jt = 1 lands on 3 (skipping the store at 2); jf = 0 lands on 2.
            vec![s(LD_IMM, 0), j(JMP_JEQ_K, 1, 0), s(ST, 0), s(LD_MEM, 0), RET0],
            Some((3, 0)),
        ),
        (
            "jf target is pc + 1 + jf exactly",
            vec![s(LD_IMM, 0), j(JMP_JGT_K, 0, 1), s(ST, 0), s(LD_MEM, 0), RET0],
            Some((3, 0)),
        ),
        ("both targets after the store", vec![s(ST, 0), j(JMP_JSET_K, 1, 0), s(LD_MEM, 0), s(LDX_MEM, 0), RET0], None),
        (
            "a conditional jump does not fall through",
            // Both targets are 3, so pc 2 is dead code: its load of the
            // unwritten M[1] is not refused.
            vec![s(ST, 0), j(JMP_JGE_X, 1, 1), s(LD_MEM, 1), s(LD_MEM, 0), RET0],
            None,
        ),
        (
            "a conditional jump's targets keep their other ways in",
            // 4 is reached from the jump (M[0]) and from 3's fall-through
            // (M[0] and M[1]); only M[0] is certain.
            vec![s(ST, 0), j(JMP_JEQ_X, 2, 0), s(RET_K, 0), s(ST, 1), s(LD_MEM, 0), s(LD_MEM, 1), RET0],
            Some((5, 1)),
        ),
        (
            "jt and jf may differ in what they bring",
            vec![j(JMP_JEQ_K, 0, 2), s(ST, 3), s(JMP_JA, 1), s(ST, 4), s(LD_MEM, 3), RET0],
            Some((4, 3)),
        ),
        // ret does not reset the running state (SPEC §2.3).
        ("ret falls through into the next instruction", vec![s(ST, 0), s(RET_K, 0), s(LD_MEM, 0), RET0], None),
        (
            "ret's fall-through meets a jump target",
            // 5 is reached by the ja (M[0] written) and by falling through the
            // rets at 3 and 4, reached from pc 0 with nothing written.
            vec![j(JMP_JEQ_K, 2, 0), s(ST, 0), s(JMP_JA, 2), s(RET_K, 1), s(RET_K, 2), s(LD_MEM, 0), RET0],
            Some((5, 0)),
        ),
        ("the lowest refused pc wins", vec![s(ST, 0), s(LDX_MEM, 0), s(LD_MEM, 9), s(LD_MEM, 8), RET0], Some((2, 9))),
    ]
}

#[test]
fn each_clause_of_check_load_and_stores() {
    let mut failures = Vec::new();
    for (name, insns, want) in cases() {
        let want_err = want.map(|(pc, k)| E::UninitMem { pc: Pc(pc), k });
        if model(&insns) != want {
            failures.push(format!("{name}: the model says {:?}, the case {want:?}", model(&insns)));
        }
        for mode in [Mode::Socket, Mode::Seccomp] {
            let got = validate(&insns, mode).err();
            if got != want_err {
                failures.push(format!("{name} ({mode}): got {got:?}, want {want_err:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Programs of scratch loads/stores, jumps and `ret`s over 4 words, every
/// jump inside the program, ending in `ret`: only `check_load_and_stores`
/// can refuse them.
fn program() -> impl Strategy<Value = Vec<Insn>> {
    let codes = [ST, STX, LD_MEM, LDX_MEM, JMP_JA, JMP_JEQ_K, JMP_JGT_X, JMP_JSET_K, RET_K, LD_IMM];
    prop::collection::vec((0..codes.len(), 0u32..4, any::<u8>(), any::<u8>()), 1..24).prop_map(move |raw| {
        let len = raw.len() + 1;
        let mut insns: Vec<Insn> = raw
            .iter()
            .enumerate()
            .map(|(pc, &(c, k, jt, jf))| {
                let room = (len - pc - 1) as u32; // targets pc + 1 ..= len - 1
                match codes[c] {
                    JMP_JA => s(JMP_JA, u32::from(jt) % room),
                    code @ (JMP_JEQ_K | JMP_JGT_X | JMP_JSET_K) => {
                        Insn::jump(code, 0, (u32::from(jt) % room) as u8, (u32::from(jf) % room) as u8)
                    }
                    code => s(code, k),
                }
            })
            .collect();
        insns.push(RET0);
        insns
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn validate_agrees_with_the_path_model(insns in program()) {
        let want = model(&insns).map(|(pc, k)| E::UninitMem { pc: Pc(pc), k });
        prop_assert_eq!(validate(&insns, Mode::Socket).err(), want);
    }
}
