//! The executor's register, stack and control-flow facts against the
//! general interpreter: the prologue where it stands, TMP kept where it is
//! read, the sixteen scratch words, a second fused arch check and its tree,
//! and the jumps uncounted runs thread (`chain::known`): what the analysis
//! takes from each kind of op.

use super::super::ops::Kind;
use super::super::trees::DIRECT;
use super::super::Subset;
use super::{compile, data, differences, differences_on, head, i, tree, words};
use crate::{Helpers, LoadOptions, Program, Vm};

/// The converter's prologue (`w0 ^= w0; w7 ^= w7; r6 = r1`) fused into
/// one op ([`Kind::Prologue`]) where it stands later in a program too, not
/// only first (where a run starts past it): there it clears A and X and
/// goes on three instructions later, with the general interpreter's result
/// and count.
#[test]
fn a_prologue_after_the_first_instruction_clears_a_and_x_and_counts_three() {
    let prologue = &head(0, &[])[..3];
    let mut p = prologue.to_vec();
    // A = word 0, X = word 1; then the prologue again: both zero.
    p.extend([i(0x61, 0, 6, 0, 0), i(0x61, 7, 6, 4, 0)]);
    p.extend_from_slice(prologue);
    // A += X + 3, so that A is 3 only if both were cleared.
    p.extend([i(0x0c, 0, 7, 0, 0), i(0x04, 0, 0, 0, 3), i(0x95, 0, 0, 0, 0)]);
    let prog = compile(&p).unwrap();
    assert_eq!(prog.ops.iter().filter(|o| o.kind == Kind::Prologue).count(), 2, "{}", prog.chain_listing());
    let datas: Vec<(String, [u8; 64])> =
        [(7, 9), (u32::MAX, 1), (0, 0)].map(|(w0, w1)| (format!("{w0} {w1}"), data(w0, w1))).into();
    let failures = differences_on("second prologue", &p, &datas);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(prog.run(&datas[0].1), Ok((3, 11)));
}

/// `w2 = K; if r0 == r2` is a chain's test only where TMP (r2) is dead on
/// both ways out (the chain does not write it). Here every way out reads
/// it a few instructions on (a hit: `w7 = w2; w0 = w2; w0 += w7`, reading
/// TMP where it stays live; a miss: through a `ja`, past a write of X), so
/// the liveness must carry it back through falls, jumps and writes of
/// other registers: the three compares run as written, and a hit returns
/// twice its constant, a miss the constant last written, as on the general
/// interpreter; and compares whose last miss alone reads TMP.
#[test]
fn compares_whose_tmp_is_read_after_them_keep_their_writes() {
    let mut p = head(0, &[])[..3].to_vec();
    p.push(i(0x61, 0, 6, 0, 0)); // 3: w0 = word 0
    for (n, k) in [5, 6, 7].into_iter().enumerate() {
        // 4 + 2n: w2 = k; if r0 == r2 goto 11
        p.extend([i(0xb4, 2, 0, 0, k), i(0x1d, 0, 2, (2 * (2 - n) + 1) as i16, 0)]);
    }
    p.extend([
        i(0x05, 0, 0, 4, 0), // 10: ja 15
        i(0xbc, 7, 2, 0, 0), // 11: w7 = w2
        i(0xbc, 0, 2, 0, 0), // 12: w0 = w2
        i(0x0c, 0, 7, 0, 0), // 13: w0 += w7
        i(0x95, 0, 0, 0, 0), // 14: exit
        i(0xb4, 7, 0, 0, 1), // 15: w7 = 1
        i(0xbc, 0, 2, 0, 0), // 16: w0 = w2
        i(0x95, 0, 0, 0, 0), // 17: exit
    ]);
    let failures = differences("tmp read", &p, &words(&[5, 6, 7]));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let prog = compile(&p).unwrap();
    let results: Vec<u64> = [5, 6, 7, 8].map(|w0| prog.run(&data(w0, 0)).unwrap().0).into();
    assert_eq!(results, [10, 12, 14, 7], "{}", prog.chain_listing());
    // Three compares whose hits return a constant and whose last miss
    // reads TMP past a `ja` and a write of X: TMP is live after the last
    // only through that jump and those falls.
    let p = tmp_read_past_a_ja();
    let failures = differences("tmp read past a ja", &p, &words(&[5, 6, 7]));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let prog = compile(&p).unwrap();
    let results: Vec<u64> = [5, 7, 8].map(|w0| prog.run(&data(w0, 0)).unwrap().0).into();
    assert_eq!(results, [1, 1, 7], "{}", prog.chain_listing());
}

/// The sixteen scratch words `bpf_convert_filter()` puts at `fp - 4(k+1)`
/// (`M[k]`), each holding its own value: word 0 plus `7k` stored in slot
/// k, then the sum of `(k+1) * M[k]` read back; slots that shared storage,
/// or a word read from the wrong slot, would change it.
#[test]
fn the_sixteen_scratch_words_hold_sixteen_values() {
    let mut p = head(0, &[])[..3].to_vec();
    for k in 0..16i32 {
        let off = (-4 * (k + 1)) as i16;
        p.extend([i(0x61, 0, 6, 0, 0), i(0x04, 0, 0, 0, 7 * k), i(0x63, 10, 0, off, 0)]);
    }
    p.push(i(0xb4, 0, 0, 0, 0));
    for k in 0..16i32 {
        let off = (-4 * (k + 1)) as i16;
        p.extend([i(0x61, 7, 10, off, 0), i(0x24, 7, 0, 0, k + 1), i(0x0c, 0, 7, 0, 0)]);
    }
    p.push(i(0x95, 0, 0, 0, 0));
    let prog = compile(&p).unwrap();
    let failures = differences("scratch", &p, &words(&[0, 1000]));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // sum (k+1)(w + 7k) = 136 w + 7 * sum k(k+1) = 136 w + 7 * 1360.
    assert_eq!(prog.run(&data(1, 0)).map(|r| r.0), Ok(136 + 7 * 1360));
}

/// Two arch checks, each fused with its own syscall tree
/// ([`Kind::LdMovJneTree`]: x86_64's, then i386's when the arch is not
/// x86_64): the second names tree 1 (its index in the op's high word),
/// and runs in the loop, counted or not (after `w7 = 1`, which keeps the
/// two checks from forming one chain); every input agrees with the
/// general interpreter.
#[test]
fn a_second_arch_check_searches_its_own_tree() {
    let (x86, i386) = (0xc000_003e_u32, 0x4000_0003_u32);
    let keys = [(0..40u32).map(|k| 5 * k + 3).collect::<Vec<_>>(), (0..40u32).map(|k| 7 * k + 2).collect()];
    let (first, second) = (tree(&keys[0], false).0, tree(&keys[1], false).0);
    let check = |arch: u32, to_next: usize| {
        [i(0x61, 0, 6, 4, 0), i(0xb4, 2, 0, 0, arch as i32), i(0x5d, 0, 2, to_next as i16, 0), i(0x61, 0, 6, 0, 0)]
    };
    let mut p = head(0, &[])[..3].to_vec();
    p.extend(check(x86, 1 + first.len()));
    p.extend(first);
    // X = 1 first, so that the checks do not form one chain.
    p.push(i(0xb4, 7, 0, 0, 1));
    p.extend(check(i386, 1 + second.len()));
    p.extend(second);
    p.extend([i(0xb4, 0, 0, 0, 9), i(0x95, 0, 0, 0, 0)]);
    let prog = Subset::recognise(&p).unwrap().compile_with(Some(chain::Policy::EVERY_TREE)).unwrap();
    let trees: Vec<u64> = prog.ops.iter().filter(|o| o.kind == Kind::LdMovJneTree).map(|o| o.imm >> 32).collect();
    assert_eq!(trees.len(), 2, "{}", prog.chain_listing());
    assert_ne!(trees[0] & !u64::from(DIRECT), trees[1] & !u64::from(DIRECT));
    let slow =
        Program::load(&p, &LoadOptions { no_superinstructions: true, ..LoadOptions::default() }, &Helpers::new())
            .unwrap();
    let mut vm = Vm::new();
    let mut failures = Vec::new();
    for w0 in keys.iter().flatten().flat_map(|&k| [k - 1, k, k + 1]).chain([0, u32::MAX]) {
        for w1 in [x86, i386, 1] {
            let d = data(w0, w1);
            let want = vm.run_seccomp(&slow, &d).map(|r| (u64::from(r), vm.executed()));
            let got = prog.run(&d).map(|(r, steps)| (r as u32 as u64, steps));
            let uncounted = prog.run_uncounted(&d).map(|r| r as u32 as u64);
            if got != want || uncounted != want.clone().map(|(r, _)| r) {
                failures
                    .push(format!("word0 {w0:#x} word1 {w1:#x}: executor {got:?} / {uncounted:?}, general {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Uncounted runs take the threaded jumps (`chain::known`), counted runs
/// the jumps as written: in OpenSSH's futex rounds (the converted
/// `testdata/chains/seccomp_known_reload.txt`), where a missed round's
/// jump lands on a reload of nr that the taken `jeq #futex` settled, the
/// uncounted ops jump past it, further on than the counted ones, and
/// nowhere back; both answer as the general interpreter.
#[test]
fn uncounted_runs_take_the_threaded_jumps() {
    let bytes = test_data::converted::read("chains", "seccomp_known_reload").unwrap();
    let p = crate::decode(&bytes).unwrap();
    let prog = compile(&p).unwrap();
    let moved: Vec<(usize, u32, u32)> = (prog.ops.iter().zip(prog.uncounted_ops.iter()).enumerate())
        .filter(|(_, (c, u))| c.kind.jumps_to_pc() && c.target != u.target)
        .map(|(pc, (c, u))| (pc, c.target, u.target))
        .collect();
    assert!(moved.len() >= 2, "threaded: {moved:?}\n{}", prog.chain_listing());
    assert!(moved.iter().all(|&(_, counted, uncounted)| uncounted > counted), "{moved:?}");
    let mut datas = Vec::new();
    for nr in [0xca, 0xcb, 0, 60] {
        for op in [0, 1, 9, 0x80, 0x81, 0x189, 5] {
            let mut d = data(nr, 0xc000_003e);
            d[24..28].copy_from_slice(&(op as u32).to_le_bytes());
            datas.push((format!("nr {nr:#x} op {op:#x}"), d));
        }
    }
    let failures = differences_on("known reload", &p, &datas);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The known-words analysis (`chain::known`) threads a jump past a reload
/// only where the reloaded r0 (A) is overwritten where the jump lands;
/// writing X (`w7 = word 2`, `w7 = 9`, `w7 = w2`) or storing A does not
/// overwrite it. Here the `ja` lands on `w0 = word 0`, whose compare
/// `word 0 == 7` settled, and that compare leads to such a write, then to
/// what returns A: the jump keeps its reload, and the run returns word 0
/// (7), not word 1, on every way of running.
#[test]
fn writing_x_or_storing_a_does_not_overwrite_a() {
    let landings = [
        ("w7 = word 2", vec![i(0x61, 7, 6, 8, 0)]),
        ("w7 = 9", vec![i(0xb4, 7, 0, 0, 9)]),
        ("w7 = w2", vec![i(0xbc, 7, 2, 0, 0)]),
        ("M[0] = w0; w0 = word 2; w0 = M[0]", vec![i(0x63, 10, 0, -4, 0), i(0x61, 0, 6, 8, 0), i(0x61, 0, 10, -4, 0)]),
    ];
    for (what, landing) in landings {
        let n = landing.len() as i16;
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([
            i(0x61, 0, 6, 0, 0),     // 3: w0 = word 0
            i(0x55, 0, 0, 8 + n, 7), // 4: if r0 != 7 goto the `exit 3`
            i(0x61, 0, 6, 4, 0),     // 5: w0 = word 1
            i(0xb4, 2, 0, 0, 0),     // 6: w2 = 0
            i(0x05, 0, 0, 0, 0),     // 7: ja 8
            i(0x61, 0, 6, 0, 0),     // 8: w0 = word 0
            i(0x15, 0, 0, 2, 7),     // 9: if r0 == 7 goto 12
            i(0xb4, 0, 0, 0, 1),     // 10
            i(0x95, 0, 0, 0, 0),     // 11: exit 1
        ]);
        p.extend(landing); // 12
        p.extend([i(0x95, 0, 0, 0, 0), i(0xb4, 0, 0, 0, 3), i(0x95, 0, 0, 0, 0)]);
        let words = [(7, 5), (6, 5)];
        let failures = differences(what, &p, &words);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let prog = compile(&p).unwrap();
        let got: Vec<u64> = words.map(|(w0, w1)| prog.run_uncounted(&data(w0, w1)).unwrap()).into();
        assert_eq!(got, [7, 3], "{what}");
    }
}

/// An ALU op on A changes it: a compare after `w0 = word 0; w0 += 1` says
/// nothing of word 0, so a later reload of word 0 and the same compare are
/// not settled by it (the jump to them is not threaded), on every way of
/// running.
#[test]
fn a_compare_after_alu_on_a_says_nothing_of_the_word() {
    let mut p = head(0, &[])[..3].to_vec();
    p.extend([
        i(0x61, 0, 6, 0, 0), // 3: w0 = word 0
        i(0x04, 0, 0, 0, 1), // 4: w0 += 1
        i(0x55, 0, 0, 7, 8), // 5: if r0 != 8 goto 13
        i(0x05, 0, 0, 0, 0), // 6: ja 7
        i(0x61, 0, 6, 0, 0), // 7: w0 = word 0
        i(0x15, 0, 0, 2, 8), // 8: if r0 == 8 goto 11
        i(0xb4, 0, 0, 0, 1), // 9
        i(0x95, 0, 0, 0, 0), // 10: exit 1
        i(0xb4, 0, 0, 0, 2), // 11
        i(0x95, 0, 0, 0, 0), // 12: exit 2
        i(0xb4, 0, 0, 0, 3), // 13
        i(0x95, 0, 0, 0, 0), // 14: exit 3
    ]);
    let words = [(7, 0), (8, 0), (0, 0)];
    let failures = differences("alu on a", &p, &words);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let prog = compile(&p).unwrap();
    let got: Vec<u64> = words.map(|(w0, w1)| prog.run_uncounted(&data(w0, w1)).unwrap()).into();
    assert_eq!(got, [1, 3, 3]);
}

/// `w0 = word; w2 = K; if r0 op r2` is one op (`LdMovJ*`); with another
/// register on either side of the compare (`if r7 > r2`, `if r0 > r7`) it
/// is not, and runs as written, on every way of running.
#[test]
fn a_load_and_a_constant_fuse_only_with_their_compare() {
    for (what, compare) in
        [("r7 > r2", i(0x2d, 7, 2, 2, 0)), ("r0 > r7", i(0x2d, 0, 7, 2, 0)), ("r0 > r2", i(0x2d, 0, 2, 2, 0))]
    {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([
            i(0x61, 7, 6, 4, 0), // 3: w7 = word 1
            i(0x61, 0, 6, 0, 0), // 4: w0 = word 0
            i(0xb4, 2, 0, 0, 5), // 5: w2 = 5
            compare,             // 6: if .. goto 9
            i(0xb4, 0, 0, 0, 1), // 7
            i(0x95, 0, 0, 0, 0), // 8: exit 1
            i(0xb4, 0, 0, 0, 2), // 9
            i(0x95, 0, 0, 0, 0), // 10: exit 2
        ]);
        let words = [(4, 6), (6, 4), (5, 5), (9, 9), (0, 7)];
        let failures = differences(what, &p, &words);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let fused = compile(&p).unwrap().ops.iter().any(|o| o.kind == Kind::LdMovJgt);
        assert_eq!(fused, what == "r0 > r2", "{what}");
    }
}

/// The liveness of A, TMP and X (`compile::live_in`) on three compares
/// whose last miss reads TMP past a `ja` and a write of X, by hand: TMP
/// live through the jump, the falls and the write of X, dead before each
/// `w2 = K`; A live into each compare and `exit`; X only before `w7 ^= w7`.
#[test]
fn liveness_carries_tmp_through_jumps_falls_and_other_writes() {
    let p = tmp_read_past_a_ja();
    let live = super::super::compile::live_in(&Subset::recognise(&p).unwrap().plains).unwrap();
    let (a, t, x) = (1u8, 2u8, 4u8);
    let want = [a | x, x, 0, 0, a, a | t, a, a | t, a, a | t, t, 0, a, t, t, a, 0];
    assert_eq!(live, want);
}

/// A load followed by a compare with a constant is one op (`LdJ*`), and
/// `w2 = K` followed by `if r0 op r2` one op (`MovJ*`), for each of the
/// seven conditions, where no chain takes the compare (a lone one); each
/// answers as the general interpreter around its constant.
#[test]
fn a_lone_compare_fuses_with_its_load_or_its_constant() {
    let conds = [
        (0x15, 0x1d, Kind::LdJeq, Kind::MovJeq),
        (0x55, 0x5d, Kind::LdJne, Kind::MovJne),
        (0x25, 0x2d, Kind::LdJgt, Kind::MovJgt),
        (0x35, 0x3d, Kind::LdJge, Kind::MovJge),
        (0xa5, 0xad, Kind::LdJlt, Kind::MovJlt),
        (0xb5, 0xbd, Kind::LdJle, Kind::MovJle),
        (0x45, 0x4d, Kind::LdJset, Kind::MovJset),
    ];
    let k = 0x30;
    let ret = [i(0xb4, 0, 0, 0, 1), i(0x95, 0, 0, 0, 0), i(0xb4, 0, 0, 0, 2), i(0x95, 0, 0, 0, 0)];
    for (code_k, code_x, ld_kind, mov_kind) in conds {
        let mut with_load = head(0, &[])[..3].to_vec();
        with_load.extend([i(0x61, 0, 6, 0, 0), i(code_k, 0, 0, 2, k)]);
        with_load.extend(ret);
        // `w7 = 0` between the load and `w2 = K`: no `LdMovJ*`.
        let mut with_constant = head(0, &[])[..3].to_vec();
        with_constant.extend([i(0x61, 0, 6, 0, 0), i(0xb4, 7, 0, 0, 0), i(0xb4, 2, 0, 0, k), i(code_x, 0, 2, 2, 0)]);
        with_constant.extend(ret);
        for (p, pc, kind) in [(&with_load, 3, ld_kind), (&with_constant, 5, mov_kind)] {
            let prog = compile(p).unwrap();
            assert_eq!(prog.ops.get(pc).map(|o| o.kind), Some(kind), "{}", prog.chain_listing());
            let failures = differences(&format!("{kind:?}"), p, &words(&[k as u32, 0x10, 0x20]));
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        }
    }
}

/// Only `w0 ^= w0; w7 ^= w7; r6 = r1` exactly is the prologue op: each
/// sequence that differs from it in one field (the operation, a register
/// of either `xor`, the third instruction) runs as written, here on A and
/// X holding words 0 and 1, with the general interpreter's results.
#[test]
fn only_the_prologue_itself_is_fused_as_one() {
    let variants = [
        ("w0 += w0", [i(0x0c, 0, 0, 0, 0), i(0xac, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0)]),
        ("w7 ^= w0 first", [i(0xac, 7, 0, 0, 0), i(0xac, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0)]),
        ("w0 ^= w7", [i(0xac, 0, 7, 0, 0), i(0xac, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0)]),
        ("w7 += w7", [i(0xac, 0, 0, 0, 0), i(0x0c, 7, 7, 0, 0), i(0xbf, 6, 1, 0, 0)]),
        ("w0 ^= w0 twice", [i(0xac, 0, 0, 0, 0), i(0xac, 0, 0, 0, 0), i(0xbf, 6, 1, 0, 0)]),
        ("w7 ^= w0 second", [i(0xac, 0, 0, 0, 0), i(0xac, 7, 0, 0, 0), i(0xbf, 6, 1, 0, 0)]),
        ("w7 = 5 third", [i(0xac, 0, 0, 0, 0), i(0xac, 7, 7, 0, 0), i(0xb4, 7, 0, 0, 5)]),
    ];
    for (what, variant) in variants {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([i(0x61, 0, 6, 0, 0), i(0x61, 7, 6, 4, 0)]);
        p.extend(variant);
        p.extend([i(0x0c, 0, 7, 0, 0), i(0x95, 0, 0, 0, 0)]);
        let prog = compile(&p).unwrap();
        assert_ne!(prog.ops.get(5).map(|o| o.kind), Some(Kind::Prologue), "{what}");
        let failures = differences(what, &p, &[(3, 40), (0x8000_0001, 7)]);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// `w0 = word; w0 &= M; if r0 op K` is one op (`LdAndJcc`: OpenSSH's flag
/// masks); a load into X, or a constant set into A, before the mask is not
/// part of it, and runs as written, on every way of running.
#[test]
fn a_mask_fuses_only_with_a_load_of_a() {
    let cases = [
        ("w0 = word 0", i(0x61, 0, 6, 0, 0), true),
        ("w7 = word 0", i(0x61, 7, 6, 0, 0), false),
        ("w0 = 0x35", i(0xb4, 0, 0, 0, 0x35), false),
    ];
    for (what, first, fused) in cases {
        let mut p = head(0, &[])[..3].to_vec();
        p.extend([i(0x61, 0, 6, 4, 0), first, i(0x54, 0, 0, 0, 0xf), i(0x15, 0, 0, 2, 5)]);
        p.extend([i(0xb4, 0, 0, 0, 1), i(0x95, 0, 0, 0, 0), i(0xb4, 0, 0, 0, 2), i(0x95, 0, 0, 0, 0)]);
        let prog = compile(&p).unwrap();
        assert_eq!(prog.ops.get(4).is_some_and(|o| o.kind == Kind::LdAndJcc), fused, "{what}");
        let failures = differences(what, &p, &[(0x15, 0x25), (0x25, 0x15), (5, 6), (6, 5)]);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// Chains stop at a tree's root and at the load of A right before it
/// (where the tree's op goes), not at any instruction before a root: two
/// `jset` tests (masks no tree takes) falling into a tree's root are one
/// chain op that leaves to the tree, and every input agrees with the
/// general interpreter.
#[test]
fn tests_before_a_tree_root_are_one_chain_that_leaves_to_it() {
    let keys: Vec<u32> = (0..40u32).map(|k| 5 * k + 3).collect();
    let (tree_body, _) = tree(&keys, false);
    let hit = tree_body.len() - 4;
    let mut body = vec![i(0x45, 0, 0, (hit + 1) as i16, 1), i(0x45, 0, 0, hit as i16, 2)];
    body.extend(tree_body);
    let p = head(0, &body);
    let prog = compile(&p).unwrap();
    // `head` is 6 instructions: the tests are body[0] and body[1].
    let (first, root) = (prog.ops.get(6).map(|o| o.kind), prog.ops.get(8).map(|o| o.kind));
    assert_eq!((first, root), (Some(Kind::MaskedLinked), Some(Kind::Tree)), "{}", prog.chain_listing());
    let consts: Vec<u32> = keys.iter().copied().chain([0, 1, 2, 3]).collect();
    let failures = differences("tests before a tree", &p, &words(&consts));
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Three compares (`w2 = K; if r0 == r2`, K = 5, 6, 7) whose hits return
/// 1 and whose last miss reads TMP past a `ja` and a write of X.
fn tmp_read_past_a_ja() -> Vec<crate::isa::insn::Insn> {
    let mut p = head(0, &[])[..3].to_vec();
    p.push(i(0x61, 0, 6, 0, 0)); // 3: w0 = word 0
    for (n, k) in [5, 6, 7].into_iter().enumerate() {
        // 4 + 2n: w2 = k; if r0 == r2 goto 11
        p.extend([i(0xb4, 2, 0, 0, k), i(0x1d, 0, 2, (2 * (2 - n) + 1) as i16, 0)]);
    }
    p.extend([
        i(0x05, 0, 0, 2, 0), // 10: ja 13
        i(0xb4, 0, 0, 0, 1), // 11: w0 = 1
        i(0x95, 0, 0, 0, 0), // 12: exit
        i(0xb4, 7, 0, 0, 1), // 13: w7 = 1
        i(0xbc, 0, 2, 0, 0), // 14: w0 = w2
        i(0x95, 0, 0, 0, 0), // 15: exit
    ]);
    p
}
