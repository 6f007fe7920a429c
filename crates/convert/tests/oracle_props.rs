//! The equivalence oracle on generated and real programs: the classic
//! interpreter and the converted program on our eBPF interpreter return the
//! same value on every branch-reaching input (`convert::oracle`).
//!
//! - random valid seccomp and socket programs (`arbitrary_program`): a fixed
//!   range of seeds in one aggregating test per mode, plus proptest over
//!   arbitrary seeds;
//! - every testdata/filters program on its `branch_inputs`, with a check
//!   that those inputs take both outcomes of every conditional jump that is
//!   reachable at all.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::HashSet;

use cbpf::{raw, validate, Interp, Mode, Op};
use convert::oracle::{
    arbitrary_program, branch_inputs, branch_packets, impossible_outcomes, Mismatch, Oracle, OracleInput, SetupError,
    SplitMix64,
};
use proptest::prelude::*;

const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

/// Longest generated program.
const MAX_LEN: usize = 48;

/// Helpers with the 6.15+ load-helper semantics: a negative offset is first
/// converted (`bpf_skb_load_helper_convert_offset()`) and then read like a
/// positive one, from the linear area or the paged data.
fn helpers_with_6_15_loads() -> ebpf::Helpers {
    fn load(mem: &mut ebpf::interp::Memory<'_>, args: [u64; 5], size: usize) -> Result<u64, ebpf::HelperError> {
        let skb = mem.skb().ok_or(ebpf::HelperError::NoSkb)?;
        let meta = skb.meta();
        let offset = i64::from(args[3] as i32);
        let (net, ll) = (i64::from(ebpf::skb::SKF_NET_OFF), i64::from(ebpf::skb::SKF_LL_OFF));
        let at = if offset >= 0 {
            Some(offset)
        } else if offset >= net {
            Some(offset - net + i64::from(meta.network_header.unwrap_or(0)))
        } else if offset >= ll {
            meta.mac_header.map(|mac| offset - ll + i64::from(mac))
        } else {
            None
        };
        let bytes = at.and_then(|at| skb.packet().get(usize::try_from(at).ok()?..usize::try_from(at).ok()? + size));
        Ok(bytes.map_or(ebpf::skb::EFAULT as u64, |b| b.iter().fold(0u64, |acc, x| (acc << 8) | u64::from(*x))))
    }
    convert::oracle::socket_helpers()
        .with(ebpf::skb::helper::SKB_LOAD_8, |m, a| load(m, a, 1))
        .with(ebpf::skb::helper::SKB_LOAD_16, |m, a| load(m, a, 2))
        .with(ebpf::skb::helper::SKB_LOAD_32, |m, a| load(m, a, 4))
}

/// Whether `m` is the known ebpf bug "negative offsets cannot reach paged
/// data" (ebpf's `bpf_skb_load_helper_*` follow the pre-6.15 kernel): the
/// converted program gives the classic result once the helpers follow 6.15+.
fn known_ebpf_paged_negative_offset_bug(oracle: &Oracle, m: &Mismatch) -> bool {
    let OracleInput::Socket(input) = &m.input else { return false };
    let Ok(prog) =
        ebpf::Program::load(&oracle.converted().insns, &ebpf::LoadOptions::default(), &helpers_with_6_15_loads())
    else {
        return false;
    };
    let skb = input.skb();
    let ctx = ebpf::SkbContext::new(skb.data, &convert::oracle::skb_meta(&skb));
    let fixed = ebpf::Vm::new().run(&prog, ebpf::Input::Skb(&ctx)).map(|r| r as u32);
    matches!((&m.cbpf, fixed), (Ok(c), Ok(e)) if *c == e)
}

/// Result of checking one generated program.
#[derive(Default)]
struct Checked {
    runs: usize,
    /// Disagreements explained by the known ebpf load-helper bug.
    known_bug: usize,
}

/// Checks the program of `seed` on all its branch inputs.
fn check_seed(mode: Mode, seed: u64) -> Result<Checked, String> {
    let mut rng = SplitMix64::new(seed);
    let insns = arbitrary_program(&mut || rng.next_u64(), mode, MAX_LEN);
    let prog = validate(&insns, mode).map_err(|e| format!("{mode}/seed={seed}: generated an invalid program: {e}"))?;
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
                if let Err(m) = oracle.check_socket(&input.skb()) {
                    if !known_ebpf_paged_negative_offset_bug(&oracle, &m) {
                        return Err(m.to_string());
                    }
                    checked.known_bug += 1;
                }
            }
        }
    }
    Ok(checked)
}

fn aggregate(mode: Mode, seeds: std::ops::Range<u64>) {
    let (mut programs, mut runs, mut known_bug) = (0, 0, 0);
    let mut failures = Vec::new();
    for seed in seeds {
        programs += 1;
        match check_seed(mode, seed) {
            Ok(c) => {
                runs += c.runs;
                known_bug += c.known_bug;
            }
            Err(e) => failures.push(e),
        }
    }
    println!(
        "{mode}: {programs} generated programs, {runs} runs, {} programs disagree, {known_bug} runs disagree only \
         through the known ebpf bug (negative offsets into paged data)",
        failures.len()
    );
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

/// Reproducer of the ebpf bug: `ldb [SKF_NET_OFF + 8]` on a packet whose
/// network header is at 14 and whose linear area ends at 20. Linux 6.15+
/// (`bpf_skb_load_helper_convert_offset()`) reads byte 22 from the paged
/// data; ebpf's helper still limits negative offsets to the linear area.
#[test]
#[ignore = "ebpf bug: bpf_skb_load_helper_* limit SKF_NET_OFF/SKF_LL_OFF loads to the linear area (pre-6.15)"]
fn ebpf_negative_offset_loads_reach_paged_data() {
    let prog =
        validate(&[cbpf::Insn::stmt(0x30, cbpf::opcode::SKF_NET_OFF + 8), cbpf::Insn::stmt(0x16, 0)], Mode::Socket)
            .unwrap();
    let data: Vec<u8> = (0..40).collect();
    let mut skb = cbpf::Skb::test_bpf(&data);
    skb.headlen = 20;
    assert_eq!(cbpf::Interp::new(&prog).run_socket(&skb), Ok(22));
    assert_eq!(convert::oracle::check_socket(&prog, &skb), Ok(22));
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

#[test]
fn filters_agree_on_branch_inputs_and_take_every_branch() {
    let mut names: Vec<String> = std::fs::read_dir(FILTERS)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().unwrap().strip_suffix(".bpf").map(str::to_owned))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    let mut failures = Vec::new();
    let mut runs = 0;
    for name in &names {
        let insns = raw::decode(&std::fs::read(format!("{FILTERS}/{name}.bpf")).unwrap()).unwrap();
        let prog = validate(&insns, Mode::Seccomp).unwrap();
        let mut oracle = match Oracle::new(name.clone(), &prog) {
            Ok(o) => o,
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        let inputs = branch_inputs(&prog);
        for data in &inputs {
            runs += 1;
            if let Err(m) = oracle.check_seccomp(data) {
                failures.push(m.to_string());
                break;
            }
        }
        // Both outcomes of every jump whose two targets differ, except those
        // the program itself rules out (leaves of libseccomp's trees).
        let taken = outcomes(&prog, &inputs);
        let impossible: HashSet<(usize, bool)> =
            impossible_outcomes(&prog).into_iter().map(|(pc, t)| (pc.0, t)).collect();
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
            .map(|(pc, outcome)| format!("{pc}:{}", if outcome { "t" } else { "f" }))
            .collect();
        if !missed.is_empty() {
            failures.push(format!("{name}: branch_inputs ({}) never take {}", inputs.len(), missed.join(" ")));
        }
    }
    println!("{} filters, {runs} runs agree", names.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// ebpf's own `bpf_skb_get_pay_offset()` helper ([`ebpf::Helpers::socket`])
/// must agree with the classic model ([`cbpf::Skb::payload_offset`]); the
/// oracle does not depend on it (it answers the helper with the classic
/// model, see `convert::oracle::socket_helpers`), but the engines that load
/// with `Helpers::socket()` do. Differences found: DCCP header length (ebpf
/// 16, `sizeof(struct dccp_hdr)` is 12), IPv6 extension headers (ebpf stops
/// at the first), VLAN tag present (the dissector starts from `vlan_proto`),
/// and headers in paged data (ebpf reads only the linear area).
#[test]
#[ignore = "ebpf bug: helper_skb_get_pay_offset disagrees with the classic flow-dissector model"]
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
        let ctx = ebpf::SkbContext::new(skb.data, &convert::oracle::skb_meta(&skb));
        let own = ebpf::Vm::new().run(&ebpf_own, ebpf::Input::Skb(&ctx)).unwrap() as u32;
        if classic != own {
            failures.push(format!("{name}: classic model {classic}, ebpf helper {own}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
