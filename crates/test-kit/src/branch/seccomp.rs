//! Branch-reaching `struct seccomp_data` inputs, on [`seccomp::domain`].

use std::collections::HashSet;

use cbpf::uapi::audit::AUDIT_ARCH_X86_64;
use cbpf::{Program, SeccompData};
use seccomp::domain::{step, Cmp, Env, Facts, Field, State, Step, Val};

use super::{forward, push_unique, Join, PathFacts, INPUT_SEED, MAX_WITNESSES, RANDOM_INPUTS};
use crate::rng::{below, SplitMix64};

/// The byte order fields are named in. The generator only needs a load's
/// offset to name a field and the field to give back that offset
/// ([`Field::offset`]), which holds on any arch; x86_64's (little-endian)
/// also makes a field's [`Field::index`] its word. It is also the arch of
/// inputs whose filter never tests one.
const LAYOUT: u32 = AUDIT_ARCH_X86_64;

/// The abstract state at a pc, and what the paths to it have tested.
#[derive(Debug, Clone)]
struct Path {
    state: State,
    /// What EVERY path to the pc has tested (joined with
    /// [`Facts::join`]): sound, so an edge it rules out is never taken.
    known: Facts,
    /// Some paths to the pc (the first few to arrive), each with what it
    /// tested and its own state: inputs built from one of them follow that
    /// path, and a comparison of a word that only some paths hold in A
    /// (a filter that shares one `jeq #k` between loads of different
    /// words, as Chromium's compiler does) is still seen on each.
    witnesses: Vec<Witness>,
}

/// One path to a pc.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Witness {
    facts: Facts,
    state: State,
}

impl Path {
    fn entry() -> Path {
        let state = State::entry();
        Path { state, known: Facts::default(), witnesses: vec![Witness { facts: Facts::default(), state }] }
    }

    /// This path after the edge of the joined comparison `cmp` that comes
    /// out `taken` (each witness with its own comparison, `cmps[i]`);
    /// `None` when what every path tested rules the edge out.
    fn after(&self, cmp: Cmp, cmps: &[Option<Cmp>], taken: bool) -> Option<Path> {
        let mut known = self.known.clone();
        if !known.assume(cmp, taken) {
            return None;
        }
        // No `State::assume`: A keeps naming the word on `jeq`'s true edge
        // (the facts hold the equality), so that where this path joins
        // others the comparisons there still name the word.
        let state = self.state;
        let mut witnesses: Vec<Witness> = self
            .witnesses
            .iter()
            .zip(cmps)
            .filter_map(|(w, c)| {
                let mut w = w.clone();
                w.facts.assume(c.unwrap_or(cmp), taken).then_some(w)
            })
            .collect();
        if witnesses.is_empty() {
            witnesses.push(Witness { facts: known.clone(), state });
        }
        Some(Path { state, known, witnesses })
    }
}

impl Join for Path {
    fn join(&mut self, other: &Path) {
        self.state.join(&other.state);
        self.known.join(&other.known);
        for w in &other.witnesses {
            if self.witnesses.len() < MAX_WITNESSES && !self.witnesses.contains(w) {
                self.witnesses.push(w.clone());
            }
        }
    }
}

impl PathFacts<Field> for Facts {
    fn edges(&self, f: Field) -> Option<[u32; 3]> {
        let (lo, hi, ones, zeros) = self.bounds(f);
        ((lo, hi, ones, zeros) != (0, u32::MAX, 0, 0)).then(|| [lo, hi, self.witness(f).unwrap_or(lo)])
    }

    fn admits(&self, f: Field, v: u32) -> bool {
        Facts::admits(self, f, v)
    }
}

type Compare = super::Compare<Field, Facts>;

/// The word and constant a comparison tests, with the mask applied first.
fn compared(cmp: Cmp) -> Option<(Field, u32, u32)> {
    let field = match (cmp.lhs, cmp.rhs) {
        (Val::Exact(f) | Val::Masked { field: f, .. }, _) | (_, Val::Exact(f) | Val::Masked { field: f, .. }) => f,
        _ => return None,
    };
    let (mask, k) = cmp.masked_constant_against(field)?;
    Some((field, mask, k))
}

/// What the data flow found.
#[derive(Debug, Default)]
pub(super) struct Analysis {
    /// Every comparison of a word with a constant.
    compares: Vec<Compare>,
    /// Outcomes `(pc, taken)` of conditional jumps that no input can take.
    pub(super) impossible: Vec<(usize, bool)>,
}

/// One forward pass over a validated seccomp program (classic jumps go
/// forward, so every state is complete when its pc is reached), with the
/// domain's transfer function [`step`].
pub(super) fn analyse(program: &Program) -> Analysis {
    let insns = program.insns();
    let env = Env::new(None, None, LAYOUT);
    let mut analysis = Analysis::default();
    forward(insns.len(), Path::entry(), |pc, path, flow| {
        let op = insns.get(pc).and_then(|i| i.op());
        let Some(mut path) = path else {
            if let Some(cbpf::Op::Jmp { .. }) = op {
                analysis.impossible.extend([(pc, true), (pc, false)]);
            }
            return;
        };
        // Each witness steps its own state: the comparison it makes.
        let cmps: Vec<Option<Cmp>> = path
            .witnesses
            .iter_mut()
            .map(|w| match step(pc, op, &mut w.state, &env) {
                Step::Branch { cmp, .. } => Some(cmp),
                _ => None,
            })
            .collect();
        match step(pc, op, &mut path.state, &env) {
            Step::Goto(next) | Step::DivByX { next, .. } => flow(next, path),
            Step::Branch { cmp, taken, not_taken } => {
                // One comparison per (word, mask, constant) the witnesses
                // make, with the witnesses that make it.
                let keys: Vec<Option<(Field, u32, u32)>> = cmps.iter().map(|c| compared(c.unwrap_or(cmp))).collect();
                let mut seen: Vec<(Field, u32, u32)> = Vec::new();
                for key in keys.iter().flatten() {
                    if seen.contains(key) {
                        continue;
                    }
                    seen.push(*key);
                    let (field, mask, k) = *key;
                    let witnesses: Vec<Facts> = path
                        .witnesses
                        .iter()
                        .zip(&keys)
                        .filter(|(_, other)| other.as_ref() == Some(key))
                        .map(|(w, _)| w.facts.clone())
                        .collect();
                    analysis.compares.push(Compare { field, mask, k, witnesses });
                }
                if seen.is_empty() {
                    if let Some((field, mask, k)) = compared(cmp) {
                        let witnesses = path.witnesses.iter().map(|w| w.facts.clone()).collect();
                        analysis.compares.push(Compare { field, mask, k, witnesses });
                    }
                }
                for (target, outcome) in [(taken, true), (not_taken, false)] {
                    match path.after(cmp, &cmps, outcome) {
                        Some(next) => flow(target, next),
                        None => analysis.impossible.push((pc, outcome)),
                    }
                }
            }
            Step::Return(_) => {}
        }
    });
    analysis
}

/// System calls that reach every branch of a seccomp filter that compares
/// `seccomp_data` words (possibly after an AND mask) with constants.
///
/// For each comparison of a word with `K`, the word is set to `K - 1`, `K`
/// and `K + 1` (and masked variants, and the edges of the range the path
/// allows), in an input whose other words satisfy what a path to the
/// comparison tested ([`Facts`]: ranges, known bits, exclusions), so
/// argument checks see the arch and syscall number that lead to them and
/// the earlier argument checks that let them run. Then `RANDOM_INPUTS`
/// seeded random inputs built from the compared constants and random words.
/// Deterministic; duplicates removed.
pub fn branch_inputs(program: &Program) -> Vec<SeccompData> {
    let compares = analyse(program).compares;
    let default_arch =
        compares.iter().find(|c| c.field == Field::Arch && c.mask == u32::MAX).map_or(AUDIT_ARCH_X86_64, |c| c.k);
    let mut plain = [0u32; 16];
    if let Some(w) = plain.get_mut(word(Field::Arch)) {
        *w = default_arch;
    }
    // The plain words, changed where the path's facts rule them out.
    let base = |facts: &Facts| {
        let mut words = plain;
        for f in Field::ALL {
            if let Some(w) = words.get_mut(word(f)) {
                if !facts.admits(f, *w) {
                    *w = facts.witness(f).unwrap_or(facts.bounds(f).0);
                }
            }
        }
        words
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    push_unique(&mut seen, &mut out, SeccompData::from_words(&plain));
    let mut pool: Vec<(usize, u32)> = Vec::new();
    for c in &compares {
        for witness in &c.witnesses {
            let mut words = base(witness);
            for v in c.values(witness) {
                if let Some(w) = words.get_mut(word(c.field)) {
                    *w = v;
                }
                push_unique(&mut seen, &mut out, SeccompData::from_words(&words));
                pool.push((word(c.field), v));
            }
        }
    }
    let mut rng = SplitMix64::new(INPUT_SEED ^ program.len() as u64);
    for _ in 0..RANDOM_INPUTS {
        let mut words = plain;
        for w in &mut words {
            *w = match rng.next_u64() % 4 {
                0 => rng.next_u64() as u32,
                1 => 0,
                _ => *w,
            };
        }
        for _ in 0..3 {
            if let Some(&(i, v)) = pool.get(below(&mut || rng.next_u64(), pool.len())) {
                if let Some(w) = words.get_mut(i) {
                    *w = v;
                }
            }
        }
        push_unique(&mut seen, &mut out, SeccompData::from_words(&words));
    }
    out
}

/// The word (0..16) of `struct seccomp_data` a field is, in [`LAYOUT`].
fn word(f: Field) -> usize {
    (f.offset(LAYOUT) / 4) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use cbpf::Mode;

    fn asm(text: &str) -> Program {
        crate::asm_program(text, Mode::Seccomp).unwrap()
    }

    #[test]
    fn data_flow_sees_masked_argument_halves_and_the_path_equalities() {
        // Kill unless x86_64; nr 2 checks the high half of args[0] masked.
        let prog =
            asm("ld [4]\n jeq #0xc000003e, arch_ok, kill\n kill: ret #0\n arch_ok: ld [0]\n jeq #2, args, allow\n \
             allow: ret #0x7fff0000\n args: ld [20]\n and #0xff00\n jeq #0x1200, errno, allow2\n \
             errno: ret #0x50001\n allow2: ret #0x7fff0000");
        let compares = analyse(&prog).compares;
        let arg = compares.iter().find(|c| c.field == Field::ArgHi(0)).unwrap();
        assert_eq!((arg.mask, arg.k), (0xff00, 0x1200));
        let fact = |field| arg.witnesses[0].witness(field);
        assert_eq!(fact(Field::Arch), Some(AUDIT_ARCH_X86_64));
        assert_eq!(fact(Field::Nr), Some(2));
        let inputs = branch_inputs(&prog);
        let interp = cbpf::Interp::new(&prog);
        let results: HashSet<u32> = inputs.iter().map(|d| interp.run_seccomp(&d.to_bytes()).unwrap()).collect();
        assert_eq!(results, HashSet::from([0, 0x7fff_0000, 0x0005_0001]), "every return reached");
    }

    #[test]
    fn impossible_outcomes_are_the_leaves_a_range_rules_out() {
        // nr > 2: 9; nr 0, 1, 2: itself; else 3 (impossible: nr <= 2 and
        // not 0, 1).
        let prog = asm("ld [0]\n jgt #2, r9, n0\n n0: jeq #0, r0, n1\n n1: jeq #1, r1, n2\n n2: jeq #2, r2, r3\n \
             r2: ret #2\n r3: ret #3\n r0: ret #0\n r1: ret #1\n r9: ret #9");
        assert_eq!(super::super::impossible_outcomes(&prog), [(cbpf::Pc(4), false)]);
        let interp = cbpf::Interp::new(&prog);
        let results: HashSet<u32> =
            branch_inputs(&prog).iter().map(|d| interp.run_seccomp(&d.to_bytes()).unwrap()).collect();
        assert_eq!(results, HashSet::from([0, 1, 2, 9]));
    }

    #[test]
    fn seccomp_words_round_trip() {
        let words: [u32; 16] = std::array::from_fn(|i| 0x1000_0000 * (i as u32 % 3) + i as u32);
        let bytes = SeccompData::from_words(&words).to_bytes();
        for (i, chunk) in bytes.chunks_exact(4).enumerate() {
            assert_eq!(u32::from_ne_bytes(chunk.try_into().unwrap()), words[i]);
        }
        for f in Field::ALL {
            assert_eq!(word(f), f.index() as usize);
        }
    }
}
