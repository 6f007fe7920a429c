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
use convert::oracle::{arbitrary_program, branch_inputs, Oracle, SetupError, SplitMix64};
use proptest::prelude::*;

const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

/// Longest generated program.
const MAX_LEN: usize = 48;

/// Checks the program of `seed` on its branch inputs. `Ok(None)` when the
/// converter refuses it (a kernel `-EINVAL`, never for programs this short).
fn check_seed(mode: Mode, seed: u64) -> Result<usize, String> {
    let mut rng = SplitMix64::new(seed);
    let insns = arbitrary_program(&mut || rng.next_u64(), mode, MAX_LEN);
    let prog = validate(&insns, mode).map_err(|e| format!("{mode}/seed={seed}: generated an invalid program: {e}"))?;
    let mut oracle = Oracle::new(format!("{mode}/seed={seed}"), &prog).map_err(|e: SetupError| e.to_string())?;
    oracle.check_branches(&prog).map_err(|m| m.to_string())
}

fn aggregate(mode: Mode, seeds: std::ops::Range<u64>) {
    let (mut programs, mut runs) = (0, 0);
    let mut failures = Vec::new();
    for seed in seeds {
        programs += 1;
        match check_seed(mode, seed) {
            Ok(n) => runs += n,
            Err(e) => failures.push(e),
        }
    }
    println!("{mode}: {programs} generated programs, {runs} runs agree, {} disagree", failures.len());
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
        // Both outcomes of every jump whose two targets differ: libseccomp
        // emits no dead branches, so the generator must reach them all.
        let taken = outcomes(&prog, &inputs);
        let missed: Vec<String> = prog
            .insns()
            .iter()
            .enumerate()
            .filter_map(|(pc, insn)| match insn.op() {
                Some(Op::Jmp { jt, jf, .. }) if jt != jf => Some(pc),
                _ => None,
            })
            .flat_map(|pc| [(pc, true), (pc, false)])
            .filter(|o| !taken.contains(o))
            .map(|(pc, outcome)| format!("{pc}:{}", if outcome { "t" } else { "f" }))
            .collect();
        if !missed.is_empty() {
            failures.push(format!("{name}: branch_inputs ({}) never take {}", inputs.len(), missed.join(" ")));
        }
    }
    println!("{} filters, {runs} runs agree", names.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
