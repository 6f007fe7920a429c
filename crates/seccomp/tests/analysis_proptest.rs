#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Soundness of the constant-action analysis on random seccomp programs:
//! whenever [`analyze`] promises a constant action for (arch, nr), running the
//! program (on `cbpf::Interp`, the reference interpreter) with any args and
//! ip gives exactly that action; and every path [`explain`] reports is real:
//! inputs satisfying its conditions, evaluated as printed (computed
//! operands as the expressions the filter computes), get its action (or,
//! for `ret a`, the value of the expression printed as returned), and
//! every input satisfies exactly one path.

use cbpf::opcode::*;
use cbpf::{AluOp, Insn, Interp, JmpOp, SeccompData};
use proptest::prelude::*;
use proptest::strategy::Union;
use seccomp::analysis::{analyze, explain, ActionResult, Cond, Field, Returned};

mod common;
use common::gen::{self, valid, Gen};

use seccomp::arch::{AUDIT_ARCH_I386 as I386, AUDIT_ARCH_X86_64 as X86_64};

/// Values likely to make comparisons come out both ways.
fn interesting() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => 0u32..8,
        1 => Just(0x7fff_0000u32),
        1 => Just(X86_64),
        1 => Just(I386),
        1 => Just(0x4000_0000u32),
        1 => Just(u32::MAX),
        1 => Just(0x8000_0000u32),
        2 => any::<u32>(),
    ]
}

fn gen_insn() -> impl Strategy<Value = Gen> {
    // seccomp_check_filter() has no `mod`.
    let alu_op = prop::sample::select(AluOp::ALL.into_iter().filter(|op| *op != AluOp::Mod).collect::<Vec<_>>());
    let jmp_op = prop::sample::select(JmpOp::ALL.to_vec());
    let mut arms = vec![(4, (0u32..16).prop_map(Gen::LdData).boxed())];
    arms.extend(gen::moves(interesting));
    arms.extend([
        (3, (alu_op, any::<bool>(), interesting()).prop_map(|(o, x, k)| Gen::Alu(o, x, k)).boxed()),
        (1, Just(Gen::Neg).boxed()),
        (1, any::<u8>().prop_map(Gen::Ja).boxed()),
        (
            8,
            (jmp_op, prop::bool::weighted(0.2), interesting(), any::<u8>(), any::<u8>())
                .prop_map(|(o, x, k, jt, jf)| Gen::Jmp(o, x, k, jt, jf))
                .boxed(),
        ),
        (2, interesting().prop_map(Gen::RetK).boxed()),
        (1, Just(Gen::RetA).boxed()),
    ]);
    Union::new_weighted(arms)
}

/// A valid seccomp program: a prologue initialising M[0..4], the random
/// body with jumps fitted inside the program, and one to three returns
/// (`ret #k`, `ret a`, or an action made of A's low bits: `and #mask; or
/// #action; ret a`, `add`/`xor` alike).
fn gen_program() -> impl Strategy<Value = Vec<Insn>> {
    let ret =
        prop_oneof![4 => prop::sample::select(vec![0x7fff_0000u32, 0, 0x0005_0001, 0x8000_0000]), 1 => any::<u32>()]
            .prop_map(|k| vec![Insn::stmt(RET_K, k)]);
    let alu = |op: AluOp, k: u32| Insn::stmt(BPF_ALU | op.bits() | BPF_K, k);
    let action = (
        prop::sample::select(vec![0xfffu32, 0xffff, 0x1_ffff]),
        prop::sample::select(vec![AluOp::Or, AluOp::Add, AluOp::Xor]),
        prop::sample::select(vec![0x5_0000u32, 0x3_0000, 0x7fff_0000, 0x7ff0_0000]),
    )
        .prop_map(move |(mask, op, k)| vec![alu(AluOp::And, mask), alu(op, k), Insn::stmt(RET_A, 0)]);
    let last = prop_oneof![4 => ret, 1 => Just(vec![Insn::stmt(RET_A, 0)]), 1 => action];
    (prop::collection::vec(gen_insn(), 1..40), prop::collection::vec(last, 1..4)).prop_map(|(body, tail)| {
        let tail: Vec<Insn> = tail.into_iter().flatten().collect();
        let mut prog = gen::prologue().to_vec();
        let len = prog.len() + body.len() + tail.len();
        for g in body {
            prog.extend(g.insn_at(prog.len(), len, 1));
        }
        prog.extend(tail);
        prog
    })
}

/// `(ip, args)` drawn so that their halves often equal interesting values.
fn gen_data() -> impl Strategy<Value = (u64, [u64; 6])> {
    let word = || (interesting(), interesting()).prop_map(|(lo, hi)| u64::from(lo) | u64::from(hi) << 32);
    (word(), prop::array::uniform6(word()))
}

fn run(interp: &Interp, arch: u32, nr: u32, (ip, args): (u64, [u64; 6])) -> u32 {
    let data = SeccompData { nr: nr as i32, arch, instruction_pointer: ip, args };
    interp.run_seccomp(&data.to_bytes()).unwrap()
}

/// The value of a field (little-endian layout, as on x86_64 and i386).
fn field_value(f: Field, arch: u32, nr: u32, (ip, args): (u64, [u64; 6])) -> u32 {
    match f {
        Field::Nr => nr,
        Field::Arch => arch,
        Field::IpLo => ip as u32,
        Field::IpHi => (ip >> 32) as u32,
        Field::ArgLo(i) => args[usize::from(i)] as u32,
        Field::ArgHi(i) => (args[usize::from(i)] >> 32) as u32,
    }
}

/// Does the path (its conditions in order) hold for this input? Every
/// operand is evaluated with its printed semantics ([`Cond::holds`]:
/// words, masks, and the expressions the filter computes); a division
/// by zero can only follow a false `divisor != 0` earlier on the path.
fn path_holds(path: &[Cond], arch: u32, nr: u32, data: (u64, [u64; 6])) -> bool {
    for c in path {
        let text = c.to_string();
        assert!(!text.contains("f("), "an opaque operand: {text}");
        match c.holds(|f| field_value(f, arch, nr, data)) {
            Some(true) => {}
            Some(false) => return false,
            None => panic!("`{text}` divides by zero although the path's earlier conditions hold"),
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn constant_promises_hold_for_every_input(
        insns in gen_program(),
        nrs in prop::collection::vec(interesting(), 1..4),
        inputs in prop::collection::vec(gen_data(), 1..12),
    ) {
        let prog = valid(&insns);
        let interp = Interp::new(&prog);
        for arch in [X86_64, I386] {
            for entry in analyze(&prog, arch, nrs.iter().copied()).unwrap() {
                if let ActionResult::Constant(v) = entry.result {
                    for data in &inputs {
                        let got = run(&interp, arch, entry.nr, *data);
                        prop_assert_eq!(got, v, "arch {:#x} nr {} data {:?}", arch, entry.nr, data);
                    }
                }
            }
        }
    }

    #[test]
    fn explained_paths_are_real(
        insns in gen_program(),
        nr in interesting(),
        inputs in prop::collection::vec(gen_data(), 1..12),
    ) {
        let prog = valid(&insns);
        let interp = Interp::new(&prog);
        let policy = explain(&prog, X86_64, [nr]).unwrap();
        let truncated = policy.actions.iter().flat_map(|r| &r.when).any(|p| p.truncated)
            || policy.computed.iter().any(|p| p.truncated);
        for data in &inputs {
            let got = run(&interp, X86_64, nr, *data);
            let mut matching = 0;
            for rules in &policy.actions {
                if rules.always.contains(&nr) {
                    prop_assert_eq!(got, rules.action);
                    matching += 1;
                }
                for path in rules.when.iter().flat_map(|p| &p.paths) {
                    if path_holds(path, X86_64, nr, *data) {
                        prop_assert_eq!(got, rules.action, "path {:?}", path);
                        matching += 1;
                    }
                }
            }
            for (ret, path) in policy.computed.iter().flat_map(|p| &p.paths) {
                if path_holds(path, X86_64, nr, *data) {
                    // The value printed (the expression `ret a` returns,
                    // and its action with the data expression) is the
                    // interpreter's.
                    let value = |f| field_value(f, X86_64, nr, *data);
                    prop_assert_eq!(ret.eval(value), Some(got), "returns {}", ret);
                    if let Some((action, d)) = ret.action_data() {
                        // The data, or (an action without data) the whole.
                        let text = Returned::Computed(ret.clone()).to_string();
                        let printed = text.contains(&format!("({})", d.bare())) || text.contains(&ret.to_string());
                        prop_assert!(printed, "{} for {}", text, ret);
                        prop_assert_eq!(d.eval(value).map(|d| action | d), Some(got), "{}: {}", ret, text);
                    }
                    matching += 1;
                }
            }
            // Paths split on branch outcomes, so at most one matches; and
            // every condition can be evaluated (computed values as their
            // expressions), so unless the exploration was cut off the path
            // the program really took is among them.
            prop_assert!(matching <= 1, "{} paths match {:?}", matching, data);
            if !truncated {
                prop_assert_eq!(matching, 1, "no path matches {:?} (result {:#x})", data, got);
            }
        }
    }
}
