#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The classic interpreter's own check of what it compiles programs to:
//! every `testdata/chains/*.txt` must give exactly its `== cbpf` block
//! (`Interp::chain_listing`: where a seccomp run starts, each op and the
//! chains' exit tests), so a change to how the interpreter builds its
//! chains, trees, equality sets or ladders fails in this crate's tests,
//! not only in the integration suite, which also compares the eBPF seccomp
//! executor's listing and blesses with `UPDATE_EXPECT=1`
//! (crates/integration/tests/chain_filetests.rs). This file only compares.

use cbpf::{validate, Insn, Interp, Mode};
use test_data::filetest;

/// The classic half of a chain filetest's expected block: up to the
/// `== ebpf` line that starts the executor's.
fn classic_part(expected: &str) -> &str {
    expected.find("== ebpf\n").map_or(expected, |at| &expected[..at])
}

#[test]
fn every_chain_filetest_compiles_to_its_classic_listing() {
    let (count, failures) = filetest::check_each("chains", |t| {
        let mode = match (t.marker.as_deref(), t.value("mode")) {
            (Some("cbpf"), Some("seccomp")) => Mode::Seccomp,
            (Some("cbpf"), Some("socket")) => Mode::Socket,
            other => return Err(format!("marker and mode {other:?}")),
        };
        let insns: Vec<Insn> = t.insns.iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
        let got = match validate(&insns, mode) {
            Ok(p) => Interp::new(&p).chain_listing(),
            Err(e) => format!("error: validate: {e}\n"),
        };
        let want = classic_part(&t.expected);
        match (want.lines().count() >= 2, got == want) {
            (true, true) => Ok(()),
            (false, _) => Err("no classic listing".into()),
            (true, false) => Err(format!("got\n{got}")),
        }
    })
    .unwrap();
    assert!(count >= 6, "only {count} chain filetests");
    assert!(failures.is_empty(), "{} of {count} differ:\n{}", failures.len(), failures.join("\n"));
}

/// Where a seccomp run starts (`Entry::choose`): outside the loop, with
/// its first chain, when every exit of that chain returns, or all but at
/// most two and four times as many return; otherwise in the loop. The
/// chain here: `ld [0]` and `jeq`s of spread constants, `returning - 1` of
/// them to a `ret` and `going_on` to an `ld [16]; ret a`, its fall-through
/// (the sentinel, returning too) a `ret`.
#[test]
fn a_run_starts_with_its_first_chain_when_most_of_its_exits_return() {
    use cbpf::opcode::*;
    let start = |returning: usize, going_on: usize| {
        let tests = returning - 1 + going_on;
        // After the tests (pc 1 ..= tests): the fall-through's `ret`, the
        // returning tests' `ret`, then `ld [16]; ret a`.
        let (ret, on) = (tests + 2, tests + 3);
        let mut insns = vec![Insn::stmt(LD_W_ABS, 0)];
        for (i, pc) in (1..=tests).enumerate() {
            let to = if i < returning - 1 { ret } else { on };
            insns.push(Insn::jump(JMP_JEQ_K, 10 * i as u32 + 10, (to - pc - 1) as u8, 0));
        }
        insns.extend([Insn::stmt(RET_K, 0), Insn::stmt(RET_K, 0x7fff_0000)]);
        insns.extend([Insn::stmt(LD_W_ABS, 16), Insn::stmt(RET_A, 0)]);
        let listing = Interp::new(&validate(&insns, Mode::Seccomp).unwrap()).chain_listing();
        listing.lines().next().unwrap().to_string()
    };
    const OUTSIDE: &str = "start: op 0 outside the loop";
    const LOOP: &str = "start: the loop";
    for (returning, going_on, want) in
        [(5, 0, OUTSIDE), (4, 1, OUTSIDE), (3, 1, LOOP), (8, 2, OUTSIDE), (7, 2, LOOP), (12, 3, LOOP)]
    {
        assert_eq!(start(returning, going_on), want, "{returning} exits return, {going_on} go on");
    }
}

/// A first `ld [k]; jeq` whose hit goes on and whose miss returns is
/// turned round (`ret_on_hit`: the seccomp entry tests for the rare side,
/// the return); one whose two sides both return stays as compiled.
#[test]
fn only_a_first_compare_that_goes_on_is_turned_round() {
    use cbpf::opcode::*;
    let first_op = |then: Insn| {
        let insns = [
            Insn::stmt(LD_W_ABS, 4),
            Insn::jump(JMP_JEQ_K, 0xc000_003e, 1, 0),
            Insn::stmt(RET_K, 0),
            then,
            Insn::stmt(RET_K, 0x7fff_0000),
        ];
        let listing = Interp::new(&validate(&insns, Mode::Seccomp).unwrap()).chain_listing();
        listing.lines().nth(2).unwrap().to_string()
    };
    assert_eq!(first_op(Insn::stmt(RET_K, 1)), "   0: ld [4]; range @0 (== 0xc000003e) -> ret 0x1 else ret 0x0");
    assert_eq!(first_op(Insn::stmt(LD_W_ABS, 0)), "   0: ld [4]; range @0 (!= 0xc000003e) -> ret 0x0 else pc 3");
}

/// Ladders of different words that share their jumps are each walked in
/// full, so the tests they keep are bounded (`build_ladders`): by the
/// tests before them plus two per instruction. Here ten loads of ten
/// words, each `jeq #999` falling into one chain of 41 tests, in 64
/// instructions: the bound is 61 + 2 * 64 = 189, and the third ladder ends
/// exactly there. The loads past the bound keep their own ops, the last
/// fused with the long chain it falls into (`fuse_loads`). Every run
/// answers as the trace.
#[test]
fn ladders_are_kept_up_to_their_bound_and_the_loads_past_it_keep_their_ops() {
    use cbpf::opcode::*;
    let (loads, chain) = (10, 41);
    let mut insns = vec![];
    for i in 0..loads {
        let (pc, common) = (insns.len() + 1, 2 * loads);
        insns.push(Insn::stmt(LD_W_ABS, 4 * i as u32));
        insns.push(Insn::jump(JMP_JEQ_K, 999, (common + chain - pc) as u8, (common - pc - 1) as u8));
    }
    for t in 0..chain {
        insns.push(Insn::jump(JMP_JEQ_K, 3 * t as u32 + 1, (chain - t) as u8, 0));
    }
    insns.extend([Insn::stmt(RET_K, 0), Insn::stmt(RET_K, 1), Insn::stmt(RET_K, 2)]);
    let interp = Interp::new(&validate(&insns, Mode::Seccomp).unwrap());
    let listing = interp.chain_listing();
    let loads: Vec<&str> = listing.lines().filter(|l| l.contains("ld [")).collect();
    let keep = |pc: usize| format!("{pc:4}: ld [{}]; range @{pc} (== 0x3e7) -> ret 0x1 else pc 20", 2 * pc);
    let mut want: Vec<String> = [
        "   0: ld [0]; long chain @61..103",
        "   2: ld [4]; long chain @104..146",
        "   4: ld [8]; long chain @147..189",
    ]
    .map(String::from)
    .into();
    want.extend((6..=16).step_by(2).map(keep));
    want.push("  18: ld [36]; long chain @18..60".into());
    assert_eq!(loads, want);
    for word in 0..10 {
        for value in [0, 1, 4, 5, 121, 122, 999] {
            let mut data = cbpf::SeccompData::default().to_bytes();
            data[4 * word..4 * word + 4].copy_from_slice(&u32::to_ne_bytes(value));
            assert_eq!(interp.run_seccomp(&data), interp.trace_seccomp(&data, |_| {}), "word {word} = {value}");
        }
    }
}
