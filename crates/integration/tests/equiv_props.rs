//! `equiv` against every engine on generated programs
//! (`test_kit::pairs::check_pair`): when it says equal, random and
//! branch-reaching inputs never tell the two apart on any engine; when it
//! says differ, the counterexample does, on every engine.
//!
//! Pairs: two independent programs (mostly different), and copies equal by
//! construction — a `ja 0` inserted, an ALU identity inserted, the fast
//! engine's residual for one arch put in front of the whole program — which
//! must be proved equal, so "equal" is exercised and not only "differ".

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{validate, Mode, Program, SeccompData};
use equiv::{Compare, Limits};
use proptest::prelude::*;
use test_kit::pairs::{self, PairOutcome};

fn program(seed: u64) -> Program {
    let g = test_kit::gen::seeded(seed, Mode::Seccomp).unwrap();
    validate(g.program.original(), Mode::Seccomp).unwrap()
}

/// Random inputs built from the two seeds.
fn randoms(seed: u64) -> Vec<SeccompData> {
    let mut rng = test_kit::SplitMix64::new(seed);
    (0..16)
        .map(|_| {
            let mut bytes = [0u8; 64];
            for chunk in bytes.chunks_exact_mut(8) {
                chunk.copy_from_slice(&rng.next_u64().to_ne_bytes());
            }
            SeccompData::from_bytes(&bytes)
        })
        .collect()
}

/// The equal-by-construction copies of `p` for `choice`.
fn copies(p: &Program, choice: u64) -> Vec<(String, Vec<cbpf::Insn>)> {
    let insns = p.original();
    let at = (choice as usize) % (insns.len() + 1);
    let c = (choice >> 16) as u32;
    let mut out = Vec::new();
    out.extend(pairs::ja_padded(insns, at).map(|q| (format!("ja 0 at {at}"), q)));
    let which = (choice >> 8) as usize;
    out.extend(pairs::alu_rewritten(insns, at, which, c).map(|q| (format!("identity {} at {at}", which % 6), q)));
    for arch in [0xc000_003e, 0x4000_0003, c] {
        out.extend(pairs::residual_composed(p, arch).map(|q| (format!("residual for arch {arch:#x} in front"), q)));
    }
    out
}

fn check(seed: u64, other: u64, choice: u64) -> Result<(usize, usize), String> {
    let p = program(seed);
    let extra = randoms(seed ^ other);
    let limits = Limits::default();
    let mut equal = 0;
    let mut undecided = 0;
    for (what, q) in copies(&p, choice) {
        let Ok(q) = validate(&q, Mode::Seccomp) else { continue };
        for compare in [Compare::Value, Compare::Action] {
            match pairs::check_pair(&p, &q, compare, limits, &extra).map_err(|e| format!("seed {seed} {what}: {e}"))? {
                PairOutcome::Equal => equal += 1,
                PairOutcome::Undecided => undecided += 1,
                PairOutcome::Differ => return Err(format!("seed {seed} {what}: differ, but equal by construction")),
            }
        }
    }
    let q = program(other);
    for compare in [Compare::Value, Compare::Action] {
        if pairs::check_pair(&p, &q, compare, limits, &extra).map_err(|e| format!("seeds {seed}/{other}: {e}"))?
            == PairOutcome::Undecided
        {
            undecided += 1;
        }
    }
    Ok((equal, undecided))
}

/// A fixed range of seeds, aggregated: equal-by-construction pairs are
/// proved, and the budget strikes on none of them.
#[test]
fn fixed_seeds() {
    let (mut equal, mut undecided) = (0, 0);
    for seed in 0..60u64 {
        let (e, u) = check(seed, seed.wrapping_mul(0x9e37_79b9) ^ 0x55, seed.wrapping_mul(7919)).unwrap();
        equal += e;
        undecided += u;
    }
    eprintln!("proved equal: {equal}; undecided: {undecided}");
    assert!(equal >= 200, "only {equal} equal-by-construction pairs proved");
    assert_eq!(undecided, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn verdicts_hold_on_every_engine(seed in any::<u64>(), other in any::<u64>(), choice in any::<u64>()) {
        let r = check(seed, other, choice);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}
