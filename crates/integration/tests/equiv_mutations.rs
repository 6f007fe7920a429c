//! `equiv` on single-instruction mutations of every testdata filter
//! (`test_kit::pairs::mutations`: jump targets, constants, actions,
//! opcodes): a mutation that some branch-reaching input of either program
//! tells apart from the original must be reported as a difference, every
//! reported difference must come with an input the plain trace interpreter
//! confirms, and "equal" is never said where an input tells them apart.
//!
//! Both directions are also held against brute force on the regions of
//! each (arch, nr) class (`test_kit::regions`: inputs that stand for every
//! value of every word a class's code only compares with constants): an
//! "equal" pair never differs on them, and a "differ" pair whose every
//! class was enumerated differs on one of them.
//!
//! The default run samples about 40 mutations per filter; the `#[ignore]`d
//! `every_mutation` runs all of them (`cargo test --release -p
//! bpfconv-integration --test equiv_mutations -- --ignored --nocapture`
//! prints the totals).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{Interp, Mode, Program, SeccompData};
use equiv::{Options, Side, Verdict};
use test_kit::{branch_inputs, corpus, pairs};

/// The plain trace interpreter's answer.
fn reference(p: &Interp, data: &SeccompData) -> u32 {
    p.trace_seccomp(&data.to_bytes(), |_| {}).unwrap()
}

#[derive(Debug, Default)]
struct Totals {
    mutations: usize,
    invalid: usize,
    equal: usize,
    differ: usize,
    /// Differences no branch-reaching input of either program showed.
    differ_beyond_inputs: usize,
    /// Verdicts checked against brute force over every class.
    brute_force_complete: usize,
    /// Classes enumerated and skipped by the brute force, over all pairs.
    classes_enumerated: usize,
    classes_skipped: usize,
}

/// Stand-in inputs per class at most.
const REGION_CAP: usize = 1 << 12;

fn filters() -> Vec<(String, Program)> {
    let mut all: Vec<(String, Program)> = corpus::filters().unwrap().into_iter().map(|f| (f.name, f.program)).collect();
    let profiles = corpus::testdata().join("profiles");
    for name in ["docker_like", "docker_like_opt2"] {
        let bytes = std::fs::read(profiles.join(format!("{name}.bpf"))).unwrap();
        let p = cbpf::validate(&cbpf::raw::decode(&bytes).unwrap(), Mode::Seccomp).unwrap();
        all.push((name.to_string(), p));
    }
    assert!(all.len() >= 14, "testdata missing");
    all
}

fn run(per_filter: Option<usize>) -> Totals {
    let mut t = Totals::default();
    for (name, original) in filters() {
        let before = (t.mutations, t.equal, t.differ);
        let base_inputs = branch_inputs(&original);
        let run_original = Interp::new(&original);
        let muts = pairs::mutations(original.original());
        let stride = per_filter.map_or(1, |n| muts.len().div_ceil(n).max(1));
        for (what, insns) in muts.into_iter().step_by(stride) {
            t.mutations += 1;
            let Ok(mutant) = cbpf::validate(&insns, Mode::Seccomp) else {
                t.invalid += 1;
                continue;
            };
            let verdict = equiv::check(Side::single(&original), Side::single(&mutant), &Options::default())
                .unwrap_or_else(|e| panic!("{name} {what}: {e}"));
            let run_mutant = Interp::new(&mutant);
            let mut inputs = base_inputs.clone();
            inputs.extend(branch_inputs(&mutant));
            // The optimised interpreter searches; the reference confirms.
            let fast = |p: &Interp, d: &SeccompData| p.run_seccomp(&d.to_bytes()).unwrap();
            let told = inputs
                .iter()
                .find(|d| fast(&run_original, d) != fast(&run_mutant, d))
                .filter(|d| reference(&run_original, d) != reference(&run_mutant, d));
            let regions = test_kit::regions::region_inputs(&[&original, &mutant], REGION_CAP);
            t.classes_enumerated += regions.enumerated;
            t.classes_skipped += regions.skipped;
            t.brute_force_complete += usize::from(regions.complete());
            let brute = regions
                .inputs
                .iter()
                .find(|d| fast(&run_original, d) != fast(&run_mutant, d))
                .filter(|d| reference(&run_original, d) != reference(&run_mutant, d));
            match verdict {
                Verdict::Equal => {
                    assert!(brute.is_none(), "{name} {what}: equal, but the brute force's {brute:?} tells them apart");
                    assert!(told.is_none(), "{name} {what}: equal, but {told:?} tells them apart");
                    t.equal += 1;
                }
                Verdict::Differ(cexs) => {
                    assert_eq!(cexs.len(), 1);
                    for c in &cexs {
                        let (l, r) = (reference(&run_original, &c.data), reference(&run_mutant, &c.data));
                        assert_eq!((l, r), (c.left, c.right), "{name} {what}: {c:?}");
                        assert_ne!(l, r, "{name} {what}: counterexample {c:?} gives the same answer");
                    }
                    assert!(
                        brute.is_some() || !regions.complete(),
                        "{name} {what}: differ, but no input of the complete brute force ({} classes) tells them apart",
                        regions.enumerated
                    );
                    t.differ += 1;
                    if told.is_none() {
                        t.differ_beyond_inputs += 1;
                    }
                }
            }
        }
        eprintln!(
            "{name}: {} mutations, {} equal, {} differ",
            t.mutations - before.0,
            t.equal - before.1,
            t.differ - before.2
        );
    }
    t
}

#[test]
fn sampled_mutations() {
    let t = run(Some(40));
    eprintln!("{t:?}");
    assert!(t.equal > 0 && t.differ > 0, "{t:?}");
    // The brute force covers whole pairs, not a token few classes.
    assert!(t.brute_force_complete * 4 >= t.mutations - t.invalid, "{t:?}");
    assert!(t.classes_enumerated > 10 * t.classes_skipped, "{t:?}");
}

#[test]
#[ignore = "every mutation of every filter: minutes in a debug build; run with --release"]
fn every_mutation() {
    let t = run(None);
    eprintln!("{t:?}");
    assert!(t.equal > 0 && t.differ > 0, "{t:?}");
}
