//! The equivalence oracle on generated and real programs: every engine
//! (the classic interpreters, the converted program on our eBPF interpreter,
//! for seccomp the fast engine and rbpf) returns the classic trace
//! interpreter's value on every branch-reaching input (`test_kit::oracle`).
//!
//! - random valid seccomp and socket programs (`test_kit::gen::seeded`): a fixed
//!   range of seeds in one aggregating test per mode, plus proptest over
//!   arbitrary seeds;
//! - every testdata/filters program on its `branch_inputs`, with a check
//!   that those inputs take both outcomes of every conditional jump that is
//!   reachable at all (an outcome they miss must be proved dead by `equiv`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::HashSet;

use cbpf::{validate, Interp, Mode, Op};
use proptest::prelude::*;
use test_kit::{branch_inputs, branch_packets, impossible_outcomes, Oracle, SetupError};

/// Number of branch inputs one program was checked on.
#[derive(Default)]
struct Checked {
    runs: usize,
}

/// Checks the program of `seed` on all its branch inputs.
fn check_seed(mode: Mode, seed: u64) -> Result<Checked, String> {
    let prog = test_kit::gen::seeded(seed, mode)
        .map_err(|e| format!("{mode}/seed={seed}: no program generated: {e}"))?
        .program;
    let prog = validate(prog.original(), mode)
        .map_err(|e| format!("{mode}/seed={seed}: generated an invalid program: {e}"))?;
    let mut oracle = Oracle::new(format!("{mode}/seed={seed}"), &prog).map_err(|e: SetupError| e.to_string())?;
    let mut checked = Checked::default();
    match mode {
        Mode::Seccomp => {
            for data in branch_inputs(&prog) {
                checked.runs += 1;
                oracle.check_seccomp(&data).map_err(|m| m.to_string())?;
            }
        }
        Mode::Socket => {
            for input in branch_packets(&prog) {
                checked.runs += 1;
                oracle.check_socket(&input.skb()).map_err(|m| m.to_string())?;
            }
        }
    }
    Ok(checked)
}

fn aggregate(mode: Mode, seeds: std::ops::Range<u64>) {
    let (mut programs, mut runs) = (0, 0);
    let mut failures = Vec::new();
    for seed in seeds {
        programs += 1;
        match check_seed(mode, seed) {
            Ok(c) => runs += c.runs,
            Err(e) => failures.push(e),
        }
    }
    println!("{mode}: {programs} generated programs, {runs} runs, {} programs disagree", failures.len());
    assert!(runs > programs * 10, "too few inputs per program: {runs}");
    assert!(failures.is_empty(), "{} of {programs} programs disagree:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn generated_seccomp_programs_agree() {
    aggregate(Mode::Seccomp, 0..1500);
}

#[test]
fn generated_socket_programs_agree() {
    aggregate(Mode::Socket, 0..600);
}

/// Regression test of a fixed ebpf bug: `ldb [SKF_NET_OFF + 8]` on a packet
/// whose network header is at 14 and whose linear area ends at 20. Linux
/// 6.15+ (`bpf_skb_load_helper_convert_offset()`) reads byte 22 from the
/// paged data; ebpf's helpers used to limit negative offsets to the linear
/// area.
#[test]
fn ebpf_negative_offset_loads_reach_paged_data() {
    let prog =
        validate(&[cbpf::Insn::stmt(0x30, cbpf::opcode::SKF_NET_OFF + 8), cbpf::Insn::stmt(0x16, 0)], Mode::Socket)
            .unwrap();
    let data: Vec<u8> = (0..40).collect();
    let mut skb = cbpf::Skb::test_bpf(&data);
    skb.headlen = 20;
    assert_eq!(cbpf::Interp::new(&prog).run_socket(&skb), Ok(22));
    assert_eq!(test_kit::check_socket(&prog, &skb), Ok(22));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_seed_seccomp(seed in any::<u64>()) {
        check_seed(Mode::Seccomp, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn any_seed_socket(seed in any::<u64>()) {
        check_seed(Mode::Socket, seed).map_err(TestCaseError::fail)?;
    }
}

/// (pc, outcome) of every conditional jump `inputs` drive the program through.
fn outcomes(prog: &cbpf::Program, inputs: &[cbpf::SeccompData]) -> HashSet<(usize, bool)> {
    let interp = Interp::new(prog);
    let mut taken = HashSet::new();
    for data in inputs {
        let mut last: Option<(usize, u8, u8)> = None;
        interp
            .trace_seccomp(&data.to_bytes(), |step| {
                if let Some((pc, jt, jf)) = last.take() {
                    let next = step.pc.0;
                    if jt != jf {
                        taken.insert((pc, next == pc + 1 + usize::from(jt)));
                    }
                }
                if let Some(Op::Jmp { jt, jf, .. }) = step.insn.op() {
                    last = Some((step.pc.0, jt, jf));
                }
            })
            .unwrap();
    }
    taken
}

/// Whether the `outcome` edge of the jump at `pc` changes nothing: the
/// program with that edge sent where the other one goes is proved equal by
/// `equiv`. Covers outcomes the program rules out through correlations the
/// generator's joined facts lose (Chromium's compiler re-checks that an
/// argument's high word is 0, or all ones with the low word's sign bit set,
/// before each case of a switch: every case after the first finds it
/// holds).
fn edge_is_dead(prog: &cbpf::Program, pc: usize, outcome: bool) -> bool {
    let mut insns = prog.original().to_vec();
    let Some(insn) = insns.get_mut(pc) else { return false };
    if outcome {
        insn.jt = insn.jf;
    } else {
        insn.jf = insn.jt;
    }
    let Ok(other) = validate(&insns, Mode::Seccomp) else { return false };
    let verdict = equiv::check(equiv::Side::single(prog), equiv::Side::single(&other), &Default::default());
    verdict == Ok(equiv::Verdict::Equal)
}

#[test]
fn filters_agree_on_branch_inputs_and_take_every_branch() {
    let filters = test_kit::corpus::filters().unwrap();
    assert!(!filters.is_empty());
    let mut failures = Vec::new();
    let mut runs = 0;
    for test_kit::corpus::Filter { name, program: prog, .. } in &filters {
        let mut oracle = match Oracle::new(name.clone(), prog) {
            Ok(o) => o,
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        let inputs = branch_inputs(prog);
        for data in &inputs {
            runs += 1;
            if let Err(m) = oracle.check_seccomp(data) {
                failures.push(m.to_string());
                break;
            }
        }
        // Both outcomes of every jump whose two targets differ, except those
        // the program itself rules out (leaves of libseccomp's trees).
        let taken = outcomes(prog, &inputs);
        let impossible: HashSet<(usize, bool)> =
            impossible_outcomes(prog).into_iter().map(|(pc, t)| (pc.0, t)).collect();
        if let Some(&(pc, t)) = impossible.iter().find(|o| taken.contains(o)) {
            failures.push(format!("{name}: outcome {pc}:{t} declared impossible but taken"));
        }
        let missed: Vec<String> = prog
            .insns()
            .iter()
            .enumerate()
            .filter_map(|(pc, insn)| match insn.op() {
                Some(Op::Jmp { jt, jf, .. }) if jt != jf => Some(pc),
                _ => None,
            })
            .flat_map(|pc| [(pc, true), (pc, false)])
            .filter(|o| !taken.contains(o) && !impossible.contains(o))
            .filter(|&(pc, outcome)| !edge_is_dead(prog, pc, outcome))
            .map(|(pc, outcome)| format!("{pc}:{}", if outcome { "t" } else { "f" }))
            .collect();
        if !missed.is_empty() {
            failures.push(format!("{name}: branch_inputs ({}) never take {}", inputs.len(), missed.join(" ")));
        }
    }
    println!("{} filters, {runs} runs agree", filters.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The wiring of `SKF_AD_PAY_OFFSET`: the classic model
/// ([`cbpf::Skb::payload_offset`]) is the only flow dissector;
/// `convert::socket_ctx::skb_meta` stores its answer in the eBPF context and
/// ebpf's own `bpf_skb_get_pay_offset()` helper ([`ebpf::Helpers::socket`])
/// returns it. Cases where a second dissector used to disagree: DCCP header
/// length (`sizeof(struct dccp_hdr)` is 12), headers in paged data.
#[test]
fn ebpf_pay_offset_helper_matches_the_classic_model() {
    let prog = validate(
        &[
            cbpf::Insn::stmt(0x20, cbpf::opcode::SKF_AD_OFF + cbpf::opcode::SKF_AD_PAY_OFFSET),
            cbpf::Insn::stmt(0x16, 0),
        ],
        Mode::Socket,
    )
    .unwrap();
    let converted = convert::convert(&prog, &convert::Options::default()).unwrap();
    let ebpf_own =
        ebpf::Program::load(&converted.insns, &ebpf::LoadOptions::default(), &ebpf::Helpers::socket()).unwrap();
    // Ethernet + IPv4 (ihl 5) + `proto` header + 20 bytes.
    let ipv4 = |proto: u8| {
        let mut p = vec![0u8; 12];
        p.extend([0x08, 0x00, 0x45, 0, 0, 60, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend([0x50u8; 40]);
        p
    };
    let mut failures = Vec::new();
    for (name, data, headlen) in [("dccp", ipv4(33), None), ("tcp", ipv4(6), None), ("tcp paged", ipv4(6), Some(20))] {
        let mut skb = cbpf::Skb::test_bpf(&data);
        if let Some(h) = headlen {
            skb.headlen = h;
        }
        let classic = cbpf::Interp::new(&prog).run_socket(&skb).unwrap();
        let ctx = ebpf::SkbContext::new(skb.data, &convert::socket_ctx::skb_meta(&skb));
        let own = ebpf::Vm::new().run(&ebpf_own, ebpf::Input::Skb(&ctx)).unwrap() as u32;
        if classic != own {
            failures.push(format!("{name}: classic model {classic}, ebpf helper {own}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
