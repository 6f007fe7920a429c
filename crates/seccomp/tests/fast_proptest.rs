#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Equivalence of the fast engine with the classic interpreter on random
//! valid seccomp programs: structured programs (loads of nr, arch, ip and
//! argument halves, compares against constants the inputs will hit, ALU
//! with masks, `tax`/`txa`, scratch memory, `ret` of random actions and of
//! A), and inputs on both sides of every constant the program uses, outside
//! every table, negative, with the x32 bit, on unknown arches.

use cbpf::opcode::*;
use cbpf::{AluOp, Insn, Interp, JmpOp, Program, SeccompData};
use proptest::prelude::*;
use proptest::strategy::Union;
use seccomp::fast::{FastFilter, FastStack};
use seccomp::stack::combine;

mod common;
use common::gen::{self, valid, Gen};

use seccomp::arch::{AUDIT_ARCH_I386 as I386, AUDIT_ARCH_X86_64 as X86_64};
const AARCH64: u32 = 0xc000_00b7;

/// Constants likely to make comparisons go both ways.
fn constant() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..8,
        2 => Just(X86_64),
        1 => Just(I386),
        1 => Just(AARCH64),
        1 => Just(0x4000_0000u32),
        1 => Just(0x3fff_ffffu32),
        1 => Just(u32::MAX),
        1 => Just(0x8000_0000u32),
        1 => Just(0x7fff_0000u32),
        2 => prop::sample::select(vec![59u32, 110, 305, 469, 470, 547, 548, 1023, 1024]),
        2 => any::<u32>(),
    ]
}

fn gen_insn() -> impl Strategy<Value = Gen> {
    // seccomp_check_filter() allows no `mod`.
    let alu_op = prop::sample::select(AluOp::ALL.into_iter().filter(|op| *op != AluOp::Mod).collect::<Vec<_>>());
    let jmp_op = prop::sample::select(JmpOp::ALL.to_vec());
    let mask = prop::sample::select(vec![0x3fff_ffffu32, 0x4000_0000, 0xffff, 0xff, 0, u32::MAX, 1]);
    let word = prop_oneof![3 => Just(0u32), 2 => Just(1u32), 3 => 2u32..16];
    let mut arms = vec![(6, word.prop_map(Gen::LdData).boxed())];
    arms.extend(gen::moves(constant));
    arms.extend([
        (2, (alu_op, prop::bool::weighted(0.3), constant()).prop_map(|(o, x, k)| Gen::Alu(o, x, k)).boxed()),
        (1, mask.prop_map(|m| Gen::Alu(AluOp::And, false, m)).boxed()),
        (1, Just(Gen::Neg).boxed()),
        (1, any::<u8>().prop_map(Gen::Ja).boxed()),
        (
            10,
            (jmp_op, prop::bool::weighted(0.2), constant(), any::<u8>(), any::<u8>())
                .prop_map(|(o, x, k, jt, jf)| Gen::Jmp(o, x, k, jt, jf))
                .boxed(),
        ),
        (2, constant().prop_map(Gen::RetK).boxed()),
        (1, Just(Gen::RetA).boxed()),
        (
            2,
            (
                prop::collection::vec(
                    (prop::sample::select(vec![0u32, 1, 2, 3, 59, 110, 470, 0x4000_0000]), 1u8..=255),
                    3..12,
                ),
                prop::option::of((constant(), 1u8..=255, 1u8..=255)),
            )
                .prop_map(|(entries, end)| Gen::Dispatch(entries, end))
                .boxed(),
        ),
    ]);
    Union::new_weighted(arms)
}

fn action() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => prop::sample::select(vec![0x7fff_0000u32, 0, 0x0005_0001, 0x8000_0000, 0x0003_0000, 0x7ff0_0002]),
        1 => any::<u32>(),
    ]
}

/// A valid seccomp program: sometimes a libseccomp-like arch/nr prologue,
/// scratch words initialised, a random body with jumps fitted inside the
/// program (short and long), and one to three returns.
fn gen_program() -> impl Strategy<Value = Vec<Insn>> {
    let last = prop_oneof![4 => action().prop_map(|k| Insn::stmt(RET_K, k)), 1 => Just(Insn::stmt(RET_A, 0))];
    (any::<bool>(), prop::collection::vec(gen_insn(), 1..60), prop::collection::vec(last, 1..4), action()).prop_map(
        |(prologue, body, tail, kill)| {
            let mut prog = Vec::new();
            if prologue {
                // ld [4]; jeq #x86_64, 0, <the last instruction, a ret of `kill`>.
                let total = 2 + 4 + body.iter().map(Gen::len).sum::<usize>() + tail.len() + 1;
                prog.push(Insn::stmt(LD_W_ABS, 4));
                prog.push(Insn::jump(JMP_JEQ_K, X86_64, 0, (total - 3) as u8));
            }
            prog.extend(gen::prologue());
            let len = prog.len() + body.iter().map(Gen::len).sum::<usize>() + tail.len() + usize::from(prologue);
            for g in body {
                if let Gen::Dispatch(entries, end) = &g {
                    for &(k, jt) in entries {
                        let room = (len - prog.len() - 2) as u32;
                        let jt = if room == 0 { 0 } else { (u32::from(jt) % room.min(255) + 1) as u8 };
                        prog.push(Insn::jump(JMP_JEQ_K, k, jt, 0));
                    }
                    if let Some((k, jt, jf)) = *end {
                        let room = (len - prog.len() - 2) as u32;
                        let fit = |off: u8| if room == 0 { 0 } else { (u32::from(off) % room.min(255) + 1) as u8 };
                        prog.push(Insn::jump(JMP_JEQ_K, k, fit(jt), fit(jf)));
                    }
                    continue;
                }
                prog.extend(g.insn_at(prog.len(), len, 3));
            }
            prog.extend(tail);
            if prologue {
                prog.push(Insn::stmt(RET_K, kill));
            }
            prog
        },
    )
}

/// K-1, K, K+1 for every distinct constant K of the program, in order of K.
fn near_constants(prog: &Program) -> Vec<u32> {
    let mut ks: Vec<u32> = prog.insns().iter().map(|i| i.k).collect();
    ks.sort_unstable();
    ks.dedup();
    ks.iter().flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)]).collect()
}

/// Boundary inputs: K-1, K, K+1 for every constant of the program as nr and
/// argument halves, numbers outside the tables, negative and x32 numbers,
/// named and unknown arches; plus the random inputs.
fn inputs(prog: &Program, random: &[(u32, u32, u64, [u64; 6])]) -> Vec<SeccompData> {
    let mut near = near_constants(prog);
    near.extend([0, 1, 469, 470, 471, 1023, 1024, 0x4000_0000, 0x4000_006e, u32::MAX, 0x8000_0000, 0xffff_fff0]);
    let arches = [X86_64, I386, AARCH64, 0x1234_5678, 0];
    let mut out = Vec::new();
    for (i, &v) in near.iter().enumerate() {
        let arch = arches[i % arches.len()];
        let other = near[(i * 7 + 3) % near.len()];
        // Every word equal to v: whatever a compare loads, it sees v.
        let same = u64::from(v) | u64::from(v) << 32;
        let mixed = u64::from(v) | u64::from(other) << 32;
        for (nr, arch, word) in [(v, X86_64, same), (v, arch, same), (other, X86_64, same), (v, X86_64, mixed)] {
            out.push(SeccompData { nr: nr as i32, arch, instruction_pointer: word, args: [word; 6] });
        }
        out.push(SeccompData {
            nr: v as i32,
            arch: X86_64,
            instruction_pointer: u64::from(other),
            args: [u64::from(other), mixed, 0, u64::from(v), mixed.rotate_left(32), 1],
        });
    }
    for &(arch, nr, ip, args) in random {
        out.push(SeccompData { nr: nr as i32, arch, instruction_pointer: ip, args });
        // The same call on the arches the filter most likely names.
        out.push(SeccompData { nr: nr as i32, arch: X86_64, instruction_pointer: ip, args });
    }
    out
}

/// The fast engine built from `insns` has no whole-filter entry and answers
/// as the interpreter on every input `inputs` makes for the program, through
/// both entry points.
fn fast_agrees(insns: &[Insn], inputs: impl Fn(&Program) -> Vec<SeccompData>) -> Result<(), TestCaseError> {
    let prog = valid(insns);
    let interp = Interp::new(&prog);
    let fast = FastFilter::build(&prog).unwrap();
    prop_assert_eq!(fast.stats().whole_filter_entries, 0, "{}", cbpf::text::print_asm(insns));
    for data in inputs(&prog) {
        let bytes = data.to_bytes();
        let want = interp.run_seccomp(&bytes).unwrap();
        prop_assert_eq!(fast.eval(&data), want, "{:x?}\n{}", data, cbpf::text::print_asm(insns));
        prop_assert_eq!(fast.eval_bytes(&bytes), want);
    }
    Ok(())
}

fn random_inputs() -> impl Strategy<Value = Vec<(u32, u32, u64, [u64; 6])>> {
    let word = || (constant(), constant()).prop_map(|(lo, hi)| u64::from(lo) | u64::from(hi) << 32);
    prop::collection::vec((constant(), constant(), word(), prop::array::uniform6(word())), 1..16)
}

/// One condition of an argument rule: `ld [word]; <op> #k`, `negated` for
/// "continue when false" (libseccomp's `!=`).
#[derive(Debug, Clone)]
struct Cond {
    word: u32,
    op: JmpOp,
    k: u32,
    negated: bool,
}

/// What a rule does when its conditions hold.
#[derive(Debug, Clone)]
enum RuleEnd {
    Ret(u32),
    /// `ret a` of the last loaded word.
    RetA,
    /// `tax; txa; ret a` (A flows through X).
    Tax,
}

/// Programs shaped like libseccomp's argument rules for x86_64 syscall 80
/// (`chdir(A0 == i, A1 != 0, ...)`): mostly `jeq` on args[0]'s low word,
/// sometimes another comparison on it, `ret a`, `tax`, to check both trees
/// and the residuals no tree can say.
fn gen_arg_rules() -> impl Strategy<Value = Vec<Insn>> {
    // Words 4..=9: args[0..3] halves; 4 is the usual key.
    let word = prop_oneof![6 => Just(4u32), 1 => Just(5u32), 2 => 6u32..10];
    let op = prop_oneof![8 => Just(JmpOp::Jeq), 1 => Just(JmpOp::Jgt), 1 => Just(JmpOp::Jge), 1 => Just(JmpOp::Jset)];
    let cond = (word, op, prop_oneof![4 => 0u32..12, 1 => constant()], prop::bool::weighted(0.2))
        .prop_map(|(word, op, k, negated)| Cond { word, op, k, negated });
    let end = prop_oneof![8 => action().prop_map(RuleEnd::Ret), 1 => Just(RuleEnd::RetA), 1 => Just(RuleEnd::Tax)];
    let rule = (prop::collection::vec(cond, 1..4), end);
    (prop::collection::vec(rule, 1..24), action()).prop_map(|(rules, default)| {
        let mut body = Vec::new();
        for (conds, end) in rules {
            let end_insns = match end {
                RuleEnd::Ret(k) => vec![Insn::stmt(RET_K, k)],
                RuleEnd::RetA => vec![Insn::stmt(RET_A, 0)],
                RuleEnd::Tax => vec![Insn::stmt(MISC_TAX, 0), Insn::stmt(MISC_TXA, 0), Insn::stmt(RET_A, 0)],
            };
            let mut rest = 2 * conds.len() + end_insns.len();
            for c in conds {
                rest -= 2;
                let skip = rest as u8;
                let (jt, jf) = if c.negated { (skip, 0) } else { (0, skip) };
                body.push(Insn::stmt(LD_W_ABS, 4 * c.word));
                body.push(Insn::jump(BPF_JMP | c.op.bits() | BPF_K, c.k, jt, jf));
            }
            body.extend(end_insns);
            if body.len() > 200 {
                break;
            }
        }
        // ld [4]; jeq #x86_64, 0, kill; ld [0]; jeq #80, 0, default; body;
        // default; kill
        let len = 4 + body.len() + 2;
        let mut prog = vec![
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JEQ_K, X86_64, 0, (len - 3) as u8),
            Insn::stmt(LD_W_ABS, 0),
            Insn::jump(JMP_JEQ_K, 80, 0, (len - 5) as u8),
        ];
        prog.extend(body);
        prog.extend([Insn::stmt(RET_K, default), Insn::stmt(RET_K, 0)]);
        prog
    })
}

/// Inputs for an argument-rule program: nr 80 with every argument word
/// near each constant (high halves 0), one argument at a time and all at
/// once, plus the random inputs.
fn arg_inputs(prog: &Program, random: &[(u32, u32, u64, [u64; 6])]) -> Vec<SeccompData> {
    let near = near_constants(prog);
    let mut out = inputs(prog, random);
    for (i, &v) in near.iter().enumerate() {
        let other = u64::from(near[(i * 5 + 1) % near.len()]);
        out.push(SeccompData { nr: 80, arch: X86_64, instruction_pointer: 0, args: [u64::from(v); 6] });
        for j in 0..6 {
            let mut args = [other; 6];
            args[j] = u64::from(v);
            out.push(SeccompData { nr: 80, arch: X86_64, instruction_pointer: 0, args });
            args[j] = u64::from(v) << 32 | other;
            out.push(SeccompData { nr: 80, arch: X86_64, instruction_pointer: 0, args });
        }
    }
    for &(_, _, ip, args) in random {
        out.push(SeccompData { nr: 80, arch: X86_64, instruction_pointer: ip, args });
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn fast_equals_the_interpreter(insns in gen_program(), random in random_inputs()) {
        fast_agrees(&insns, |prog| inputs(prog, &random))?;
    }

    #[test]
    fn fast_chains_equal_the_interpreters(
        newest in gen_program(),
        oldest in gen_program(),
        random in random_inputs(),
    ) {
        let progs = [valid(&newest), valid(&oldest)];
        let interps = progs.each_ref().map(Interp::new);
        let chain = FastStack::build(&progs).unwrap();
        for data in inputs(&progs[0], &random).into_iter().chain(inputs(&progs[1], &random)) {
            let want = combine(interps.iter().map(|i| i.run_seccomp(&data.to_bytes()).unwrap()));
            prop_assert_eq!(chain.eval(&data), want, "{:x?}", data);
        }
    }

    #[test]
    fn tree_dispatch_equals_the_interpreter(insns in gen_arg_rules(), random in random_inputs()) {
        fast_agrees(&insns, |prog| arg_inputs(prog, &random))?;
    }
}

/// The argument-rule generator does exercise trees (and their refusal):
/// over a fixed sample, many programs are trees and some not.
#[test]
fn argument_rule_programs_are_often_trees() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = gen_arg_rules();
    let (mut keyed, mut plain) = (0, 0);
    for _ in 0..200 {
        let prog = valid(&strategy.new_tree(&mut runner).unwrap().current());
        match FastFilter::build(&prog).unwrap().switch(X86_64, 80) {
            Some(_) => keyed += 1,
            None => plain += 1,
        }
    }
    // Trees take every word compared with constants: only a `ret a` or
    // `tax` of the first word tested leaves a residual at the root.
    assert!(keyed >= 20 && plain >= 5, "{keyed} trees, {plain} not trees");
}
