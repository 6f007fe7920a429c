//! The compile step's unit tests: exit tests, chains, links, ladders and the fused masked loads.

use super::*;

/// [`super::compile`] with the program's own threading, as `Interp::new`
/// calls it.
fn compile(insns: &[Insn]) -> (Box<[Step]>, Chains) {
    let threaded = thread_jumps(insns);
    super::compile(&Classic { insns, threaded: &threaded })
}

#[test]
fn exit_tests_match_the_comparisons() {
    let interesting = [0u32, 1, 2, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff, 0x40, 0x3f];
    for op in JmpOp::ALL {
        for &k in &interesting {
            for &a in &interesting {
                for outcome in [true, false] {
                    let want = op.eval(a, k) == outcome;
                    let got = exit_test(op, k, outcome).is_some_and(|t| t.hits(a));
                    assert_eq!(got, want, "{op:?} a={a:#x} k={k:#x} outcome={outcome}");
                }
            }
        }
    }
}

#[test]
fn chains_cover_runs_of_k_compares() {
    use crate::opcode::*;
    let insns = [
        Insn::stmt(LD_IMM, 5),
        Insn::jump(JMP_JEQ_K, 1, 3, 0),  // 1: exit to 5 if A == 1
        Insn::jump(JMP_JGT_K, 9, 0, 1),  // 2: exit to 4 if A <= 9
        Insn::jump(JMP_JSET_K, 2, 0, 0), // 3: no effect
        Insn::stmt(RET_K, 1),
        Insn::stmt(RET_K, 2),
    ];
    let (ops, chains) = compile(&insns);
    assert_eq!(ops[1], Step::RangeChain { from: 0 });
    assert_eq!(ops[2], Step::Range { from: 1, lo: 0, span: 9, target: 4, then: 4 });
    assert_eq!(ops[3], Step::Ja(4));
    // The two tests, the chain's sentinel, then the padding.
    let targets: Vec<u16> = chains.exits.iter().map(|e| e.target).collect();
    assert_eq!(targets[..3], [5, 4, 4]);
    assert_eq!(chains.exits.len(), 3 + WINDOW - 1);
    assert_eq!(chains.short(1, 0).target, 5);
    assert_eq!(chains.short(5, 0).target, 4);
    assert_eq!(chains.short(10, 0).target, 4);
    assert_eq!(chains.first_exit(1, 0, 2).target, 5);
    assert_eq!(chains.first_exit(5, 0, 2).target, 4);
    assert_eq!(chains.first_exit(10, 0, 2).target, 4);
}

#[test]
fn two_way_compares_end_a_chain() {
    use crate::opcode::*;
    let insns = [
        Insn::jump(JMP_JEQ_K, 1, 1, 2), // two-way: chain ends, then = 3
        Insn::jump(JMP_JEQ_K, 2, 1, 0), // a new chain
        Insn::stmt(RET_K, 1),
        Insn::stmt(RET_K, 2),
    ];
    let (ops, chains) = compile(&insns);
    assert_eq!(ops[0], Step::Range { from: 0, lo: 1, span: 0, target: 2, then: 3 });
    assert_eq!(ops[1], Step::Range { from: 2, lo: 2, span: 0, target: 3, then: 2 });
    // Each test followed by its chain's sentinel.
    let targets: Vec<u16> = chains.exits.iter().map(|e| e.target).take(4).collect();
    assert_eq!(targets, [2, 3, 3, 2]);
    assert_eq!(chains.first_exit(1, 0, 1).target, 2);
    assert_eq!(chains.first_exit(5, 0, 1).target, 3);
    assert_eq!(chains.first_exit(2, 2, 3).target, 3);
    assert_eq!(chains.first_exit(5, 2, 3).target, 2);
}

#[test]
fn blocks_find_the_first_hit_in_order() {
    use crate::opcode::*;
    // 20 `jeq #i, exit_i, 0` with two equal keys: the first must win.
    let mut insns: Vec<Insn> = (0..20u32).map(|i| Insn::jump(JMP_JEQ_K, i % 19, (39 - 2 * i) as u8, 0)).collect();
    insns.extend((0..21).map(|i| Insn::stmt(RET_K, 100 + i)));
    let (ops, chains) = compile(&insns);
    assert_eq!(ops[0], Step::LongChain { from: 0, to: 20 });
    // The last fifteen entries are short (range) chains ending in the
    // sentinel.
    assert_eq!(ops[4], Step::LongChain { from: 4, to: 20 });
    assert_eq!(ops[5], Step::RangeChain { from: 5 });
    assert_eq!(ops[13], Step::RangeChain { from: 13 });
    for scan in [Chains::short, Chains::short_ranges] {
        assert_eq!(scan(&chains, 99, 5).target, 20);
        assert_eq!(scan(&chains, 99, 13).target, 20);
        assert_eq!(scan(&chains, 18, 13).target, 18 + 1 + 39 - 2 * 18);
        assert_eq!(scan(&chains, 0, 13).target, 19 + 1 + 1);
        assert_eq!(scan(&chains, 6, 5).target, 6 + 1 + 39 - 2 * 6);
    }
    for a in 0..19 {
        let t = chains.first_exit(a, 0, 20).target;
        assert_eq!(usize::from(t), a as usize + 1 + 39 - 2 * a as usize, "a={a}");
    }
    // From pc 5, key 0 matches only at pc 19.
    assert_eq!(chains.first_exit(0, 5, 20).target, 19 + 1 + 1);
    assert_eq!(chains.first_exit(99, 0, 20).target, 20);
    assert_eq!(chains.first_exit(99, 3, 20).target, 20);
}

/// An architecture-style check (word 1 == 7) before a chain on word 0:
/// `A <= 5` or `A == 9` return 2, else 1; a wrong arch returns 2.
fn arch_check_then_chain() -> [Insn; 7] {
    use crate::opcode::*;
    [
        Insn::stmt(LD_W_ABS, 4),        // 0: ld [4]
        Insn::jump(JMP_JEQ_K, 7, 0, 4), // 1: A != 7 -> 6
        Insn::stmt(LD_W_ABS, 0),        // 2: ld [0]
        Insn::jump(JMP_JGT_K, 5, 0, 2), // 3: A <= 5 -> 6
        Insn::jump(JMP_JEQ_K, 9, 1, 0), // 4: A == 9 -> 6
        Insn::stmt(RET_K, 1),           // 5
        Insn::stmt(RET_K, 2),           // 6
    ]
}

#[test]
fn exits_link_to_range_chains() {
    use crate::validate::{validate, Mode};
    let insns = arch_check_then_chain();
    let interp = super::super::Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
    // The architecture-style check falls out into `ld [0]; <chain>`: the
    // first op scans both, linked through its sentinel with a load of
    // word 0; both fused loads keep their own ops.
    assert_eq!(interp.ops[0], Step::LdRangeChain { k: 4, from: 0 });
    assert_eq!(interp.ops[2], Step::LdRangeChain { k: 0, from: 2 });
    assert_eq!(interp.chains.exits[1], Exit { test: ExitTest::ALWAYS, target: 2, link: 0 });
    // Leaves stay pcs (routed returns: ret #1 is slot 7, ret #2 slot 8).
    assert_eq!(interp.chains.exits[0].link, LEAVE);
    assert_eq!(interp.chains.exits[0].target, 8);
    for (w4, w0, want) in [(7, 9, 2), (7, 6, 1), (7, 5, 2), (6, 6, 2), (7, 0, 2), (7, 100, 1)] {
        let mut data = [0u8; 64];
        data[..4].copy_from_slice(&u32::to_ne_bytes(w0));
        data[4..8].copy_from_slice(&u32::to_ne_bytes(w4));
        assert_eq!(interp.run_seccomp(&data), Ok(want), "w4={w4} w0={w0}");
        assert_eq!(interp.trace_seccomp(&data, |_| {}), Ok(want), "w4={w4} w0={w0}");
    }
}

#[test]
fn jumps_to_ja_go_where_the_ja_goes() {
    use crate::opcode::*;
    let insns = [
        Insn::stmt(LD_W_ABS, 0),         // 0
        Insn::jump(JMP_JGT_K, 10, 1, 0), // 1: A > 10 -> 3, else 2
        Insn::stmt(JMP_JA, 1),           // 2: ja 4
        Insn::stmt(JMP_JA, 0),           // 3: ja 4
        Insn::stmt(RET_K, 1),            // 4
    ];
    let (ops, _) = compile(&insns);
    assert_eq!(ops[1], Step::Range { from: 0, lo: 11, span: u32::MAX - 11, target: 4, then: 4 });
    assert_eq!(ops[2], Step::Ja(4));
}

#[test]
fn rule_ladders_are_one_chain_entered_at_each_load() {
    use crate::opcode::*;
    // 20 rules `ld [16]; jeq #i, 0, 1; ret #i`, then `ret #99`.
    let mut insns = Vec::new();
    for i in 0..20 {
        insns.push(Insn::stmt(LDX_W_ABS, 16));
        insns.push(Insn::jump(JMP_JEQ_K, i, 0, 1));
        insns.push(Insn::stmt(RET_K, i));
    }
    insns.push(Insn::stmt(RET_K, 99));
    let (ops, chains) = compile(&insns);
    let Step::LdLongChain { k: 16, from, to } = ops[0] else { panic!("{:?}", ops[0]) };
    assert_eq!(to - from, 20);
    assert_eq!(chains.first_exit(7, usize::from(from), usize::from(to)).target, 3 * 7 + 2);
    assert_eq!(chains.first_exit(99, usize::from(from), usize::from(to)).target, 60);
    // Four rules from the end, too short for a ladder entry.
    assert!(matches!(ops[3], Step::LdLongChain { k: 16, .. }));
    assert!(matches!(ops[3 * 16], Step::LdRange { k: 16, .. }));
    // The jumps keep their own ops (A may differ when jumped to).
    assert!(matches!(ops[1], Step::Range { .. }));
}

/// `ld [24]; and #m; <1..=6 random compares on #k>` entered three ways
/// (at the load, which fuses all three; at the `and` with A = 1; at the
/// first compare with A = 2), exits half `ret A` so that A's value is
/// checked too: the fast run equals the traced one on values at, around
/// and masked from each constant.
#[test]
fn loads_masked_before_a_chain_run_as_the_three_instructions() {
    use crate::opcode::*;
    use crate::validate::{validate, Mode};
    let mut rng = test_data::rng::Rng(0x5eed_a17d);
    let ops = [JMP_JEQ_K, JMP_JGT_K, JMP_JGE_K, JMP_JSET_K];
    // Single tests, then longer chains.
    let mut fused = [0, 0];
    for case in 0..300 {
        let n = 1 + rng.below(6);
        let mask = match rng.below(4) {
            0 => 0xffff_fff8,
            1 => 0x6,
            2 => 1 << rng.below(32),
            _ => rng.next_u64() as u32,
        };
        let consts: Vec<u32> = (0..n)
            .map(|_| match rng.below(3) {
                0 => mask & rng.next_u64() as u32,
                1 => rng.below(8) as u32,
                _ => rng.next_u64() as u32,
            })
            .collect();
        // 0: ld [4]; 1: jeq #1 -> and; 2: jeq #2 -> first compare;
        // 3: ld [24]; 4: and; 5..5+n: compares; then the exits.
        let first = 5;
        let rets = first + n;
        let mut insns = vec![
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JEQ_K, 1, (4 - 2) as u8, 0),
            Insn::jump(JMP_JEQ_K, 2, (first - 3) as u8, 0),
            Insn::stmt(LD_W_ABS, 24),
            Insn::stmt(ALU_AND_K, mask),
        ];
        for (i, &k) in consts.iter().enumerate() {
            let pc = first + i;
            let exit = (rets + 1 + i - pc - 1) as u8;
            let last = i + 1 == n;
            // Taken or not-taken leaves; the last compare leaves both
            // ways (the chain's end, its false side to `ret A`).
            let (jt, jf) = match (rng.chance(50), last) {
                (true, false) => (exit, 0),
                (false, false) => (0, exit),
                (_, true) => (exit, (rets - pc - 1) as u8),
            };
            insns.push(Insn::jump(*rng.pick(&ops), k, jt, jf));
        }
        insns.push(Insn::stmt(RET_A, 0));
        for i in 0..n {
            insns.push(if i % 2 == 0 { Insn::stmt(RET_A, 0) } else { Insn::stmt(RET_K, 1000 + i as u32) });
        }
        let interp = super::super::Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
        let listing = interp.chain_listing();
        let op = |form: &str| listing.contains(&format!("   3: ld [24]; and {mask:#x}; {form} @"));
        fused[0] += usize::from(op("test"));
        fused[1] += usize::from(op("chain"));
        let mut words: Vec<u32> = vec![0, u32::MAX, mask, !mask, rng.next_u64() as u32];
        for &k in &consts {
            words.extend([k, k.wrapping_add(1), k.wrapping_sub(1), k | !mask, k & mask, k ^ (rng.next_u64() as u32)]);
        }
        for arch in [0u32, 1, 2] {
            for &word in &words {
                let mut data = [0u8; 64];
                data[4..8].copy_from_slice(&arch.to_ne_bytes());
                data[24..28].copy_from_slice(&word.to_ne_bytes());
                let want = interp.trace_seccomp(&data, |_| {}).unwrap();
                let got = interp.run_seccomp(&data).unwrap();
                assert_eq!(got, want, "case {case} arch {arch} word {word:#x}: {insns:?}\n{listing}");
            }
        }
    }
    assert_eq!(fused[0] + fused[1], 300, "every case fuses its load, mask and chain");
    assert!(fused[0] > 0 && fused[1] > 0, "both forms: {fused:?}");
}

/// OpenSSH's argument rounds (`ld [0]; jeq #nr` again after each missed
/// argument check) and libseccomp's later rules behind them: where the
/// number is known, jumps to its reload go past the reload and every
/// compare it settles, to the next load or `ret #k`; not to `ret a` (the
/// skipped load's `A` would be read), and not where paths with another
/// number join.
#[test]
fn jumps_pass_reloads_of_a_known_word_and_the_compares_they_settle() {
    use crate::opcode::*;
    let program = |last: Insn| {
        vec![
            Insn::stmt(LD_W_ABS, 0),        // 0
            Insn::jump(JMP_JEQ_K, 5, 0, 4), // 1: nr == 5 -> 2, else 6
            Insn::stmt(LD_W_ABS, 16),       // 2
            Insn::jump(JMP_JEQ_K, 1, 0, 1), // 3: -> 4, miss 5
            Insn::stmt(RET_K, 0x7fff_0000), // 4
            Insn::stmt(LD_W_ABS, 0),        // 5: from 3 only: nr == 5
            Insn::jump(JMP_JEQ_K, 5, 0, 4), // 6: from 1 (nr != 5) and 5
            Insn::stmt(LD_W_ABS, 16),       // 7
            Insn::jump(JMP_JEQ_K, 2, 0, 1), // 8: -> 9, miss 10
            Insn::stmt(RET_K, 0x7fff_0000), // 9
            Insn::stmt(LD_W_ABS, 0),        // 10: from 8 only: nr == 5
            Insn::jump(JMP_JEQ_K, 7, 2, 0), // 11: from 6 (nr != 5) and 10
            Insn::jump(JMP_JEQ_K, 8, 1, 0), // 12
            last,                           // 13
            Insn::stmt(RET_K, 0x0005_0001), // 14
        ]
    };
    // As `validate` leaves them (its seccomp loads are 0x21).
    let validated = |last| crate::validate(&program(last), crate::Mode::Seccomp).unwrap();
    let threaded = thread_jumps(validated(Insn::stmt(RET_K, 0)).insns());
    assert_eq!(threaded[5], 7, "the reload and its settled compare");
    assert_eq!(threaded[10], 13, "the reload and two settled compares, to `ret #0`");
    assert_eq!((threaded[6], threaded[11]), (6, 11), "nr unknown where the rounds join");
    assert_eq!(thread_jumps(validated(Insn::stmt(RET_A, 0)).insns())[10], 10, "`ret a` reads the reload");
    for prog in [validated(Insn::stmt(RET_K, 0)), validated(Insn::stmt(RET_A, 0))] {
        let interp = crate::Interp::new(&prog);
        for (nr, arg) in [5, 7, 8, 9].into_iter().flat_map(|nr| (0..3).map(move |arg| (nr, arg))) {
            let data =
                crate::SeccompData { nr, arch: 0, instruction_pointer: 0, args: [arg, 0, 0, 0, 0, 0] }.to_bytes();
            assert_eq!(interp.run_seccomp(&data), interp.trace_seccomp(&data, |_| {}), "nr={nr} arg={arg}");
        }
    }
}

/// The facts follow every word of `struct seccomp_data` (a reload of
/// `args[0]`, word 4, is threaded as one of `nr`), and a `ret a` ends a
/// path: the instruction after it is reached only by the jump that knows
/// the word, so the jump still goes past the reload there.
#[test]
fn reloads_of_every_word_are_threaded_and_ret_a_ends_a_path() {
    use crate::opcode::*;
    for k in [0, 16, 60] {
        let insns = [
            Insn::stmt(LD_W_ABS, k),        // 0
            Insn::jump(JMP_JEQ_K, 5, 1, 0), // 1: word == 5 -> 3, else 2
            Insn::stmt(RET_A, 0),           // 2
            Insn::stmt(LD_W_ABS, k),        // 3: from 1 only: word == 5
            Insn::jump(JMP_JEQ_K, 5, 0, 1), // 4: -> 5
            Insn::stmt(RET_K, 1),           // 5
            Insn::stmt(RET_K, 2),           // 6
        ];
        let prog = crate::validate(&insns, crate::Mode::Seccomp).unwrap();
        assert_eq!(thread_jumps(prog.insns())[3], 5, "word at {k}");
    }
}

/// `Entry::choose`, which decides where a run starts: a first chain whose
/// exits all end at a `ret` (directly or through the chain it links to)
/// starts in `Interp::seccomp_entry`, as does one with a single exit that
/// goes on to an op among five that return (`mostly_ends`: libseccomp's
/// s390x shape, argument checks on one syscall); one with an exit to an op
/// the chains do not cover (`tax`) and fewer that return, in the loop. All
/// answer as the trace.
#[test]
fn a_first_chain_ends_runs_when_every_exit_reaches_a_ret() {
    use crate::opcode::*;
    use crate::validate::{validate, Mode};
    let ends = arch_check_then_chain();
    let goes_on = [
        Insn::stmt(LD_W_ABS, 4),        // 0: ld [4]
        Insn::jump(JMP_JGT_K, 9, 3, 0), // 1: A > 9 -> 5
        Insn::jump(JMP_JEQ_K, 7, 0, 2), // 2: A != 7 -> 5
        Insn::stmt(MISC_TAX, 0),        // 3: tax
        Insn::stmt(RET_A, 0),           // 4: ret A
        Insn::stmt(RET_K, 2),           // 5
    ];
    let mostly_ends = [
        Insn::stmt(LD_W_ABS, 4),        // 0: ld [4]
        Insn::jump(JMP_JEQ_K, 7, 0, 7), // 1: A != 7 -> 9
        Insn::stmt(LD_W_ABS, 0),        // 2: ld [0]
        Insn::jump(JMP_JEQ_K, 1, 5, 0), // 3: A == 1 -> 9
        Insn::jump(JMP_JEQ_K, 2, 4, 0), // 4: A == 2 -> 9
        Insn::jump(JMP_JEQ_K, 3, 3, 0), // 5: A == 3 -> 9
        Insn::jump(JMP_JEQ_K, 4, 0, 2), // 6: A != 4 -> 9
        Insn::stmt(MISC_TAX, 0),        // 7: tax
        Insn::stmt(RET_A, 0),           // 8: ret A
        Insn::stmt(RET_K, 2),           // 9
    ];
    use super::super::Entry;
    for (insns, want) in [(&ends[..], Entry::One), (&mostly_ends[..], Entry::One), (&goes_on[..], Entry::Loop)] {
        let interp = super::super::Interp::new(&validate(insns, Mode::Seccomp).unwrap());
        let (Step::LdRangeChain { from, .. } | Step::LdChain { from, .. }) = interp.ops[0] else {
            panic!("first op {:?}", interp.ops[0])
        };
        assert!(usize::from(from) < interp.chains.exits.len(), "{insns:?}");
        assert_eq!(interp.entry, want, "{insns:?}");
        for (w4, w0) in [(7, 9), (7, 6), (7, 5), (6, 6), (7, 0), (7, 100), (7, 1), (7, 3), (7, 4), (6, 4)] {
            let mut data = [0u8; 64];
            data[..4].copy_from_slice(&u32::to_ne_bytes(w0));
            data[4..8].copy_from_slice(&u32::to_ne_bytes(w4));
            let traced = interp.trace_seccomp(&data, |_| {});
            assert_eq!(interp.run_seccomp(&data), traced, "w4={w4} w0={w0}");
        }
    }
}
