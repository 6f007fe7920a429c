//! Brute force over the regions of comparison-only seccomp filters: an
//! input set on which two (or more) filters agree exactly when they agree on
//! every `struct seccomp_data` of the classes it covers. It is the check
//! `equiv`'s suites hold the SAT decision against, written without its
//! circuits or solver.
//!
//! A word that a program only compares with constants by `jeq`, `jgt` and
//! `jge` (either operand order) gets the same outcome from every test for
//! all values of a run between two "ends" (a tested constant or a
//! neighbour of one, 0 and `u32::MAX`), so the ends stand for every value
//! ([`NrClasses::representatives`] is the same argument for `nr`). A word
//! only tested through bits (`jset`, or a comparison of `word & mask`) gets
//! the same outcomes for all values with the same bits under the union of
//! its masks, so the subsets of those bits stand for every value.
//!
//! Classes are the (arch, nr) pairs of those ends for `arch` and, per arch,
//! `nr`. In each class a forward pass of [`step`] with both fixed
//! ([`Env`]) lists how the other words are tested; the product of their
//! stand-ins is the class's inputs. A class is skipped (and counted) when a
//! program's reachable code there uses a word any other way (arithmetic
//! feeding a test, a word against a word, a divisor, a returned word, a
//! word mixing order and bit tests, more than [`MAX_BITS`] tested bits), or
//! when its product exceeds the cap.

use std::collections::{BTreeMap, BTreeSet};

use cbpf::{JmpOp, Program, SeccompData};
use seccomp::analysis::{Analyzer, Field, NrClasses};
use seccomp::domain::{data_of_fields, step, Env, State, Step, Val};

/// Tested bits of one word enumerated at most (2^12 values).
pub const MAX_BITS: u32 = 12;

/// The inputs and what they cover.
#[derive(Debug, Default)]
pub struct Regions {
    /// One input per combination of stand-ins of every enumerated class.
    pub inputs: Vec<SeccompData>,
    /// Classes enumerated whole.
    pub enumerated: usize,
    /// Classes skipped (a use beyond constant tests, or over the cap).
    pub skipped: usize,
    /// The arch or an arch's `nr` is used beyond constant tests: the classes
    /// listed do not cover every arch (or every number of one).
    pub classes_incomplete: bool,
}

impl Regions {
    /// Every class of every arch and number was enumerated.
    pub fn complete(&self) -> bool {
        self.skipped == 0 && !self.classes_incomplete
    }
}

/// How one word is tested in one class.
#[derive(Debug, Default, Clone)]
struct Tests {
    /// Ends of the runs of `jeq`/`jgt`/`jge` tests.
    ends: BTreeSet<u32>,
    /// Union of the masks of bit tests.
    bits: u32,
}

impl Tests {
    /// The values standing for every value of the word; `None` when the
    /// word mixes order and bit tests or has too many bits tested.
    fn stand_ins(&self) -> Option<Vec<u32>> {
        match (self.ends.is_empty(), self.bits) {
            (true, 0) => Some(vec![0]),
            (false, 0) => {
                let mut v: BTreeSet<u32> = self.ends.clone();
                v.extend([0, u32::MAX]);
                Some(v.into_iter().collect())
            }
            (true, bits) if bits.count_ones() <= MAX_BITS => {
                // Every subset of `bits`: `(s - 1) & bits` walks the non-empty ones down.
                let mut out = vec![0];
                let mut s = bits;
                while s != 0 {
                    out.push(s);
                    s = s.wrapping_sub(1) & bits;
                }
                Some(out)
            }
            _ => None,
        }
    }
}

/// The stand-ins for `field` (`Field::Arch` with `arch` `None`, or
/// `Field::Nr` under `arch`): both ends of every run of values on which
/// each test of every program comes out the same; `None` when a program
/// uses it beyond such tests.
fn field_ends(analyzers: &mut [Analyzer], arch: Option<u32>, field: Field) -> Option<Vec<u32>> {
    let mut all = Vec::with_capacity(analyzers.len());
    for a in analyzers.iter_mut() {
        all.push(a.field_classes(arch, field).ok()?);
    }
    // Both ends of every run: its start, and the number before the next
    // start (0's predecessor, u32::MAX, ends the last run).
    let starts = NrClasses::joint_representatives(&all)?;
    let ends: BTreeSet<u32> = starts.iter().flat_map(|&s| [s, s.wrapping_sub(1)]).collect();
    Some(ends.into_iter().collect())
}

/// How `prog` tests each word other than `nr` and `arch` in the class
/// `env` fixes, merged into `tests`; `false` when it uses one otherwise.
fn class_tests(prog: &Program, env: &Env, tests: &mut BTreeMap<Field, Tests>) -> bool {
    let insns = prog.insns();
    let mut states: Vec<Option<State>> = vec![None; insns.len()];
    if let Some(first) = states.first_mut() {
        *first = Some(State::entry());
    }
    for pc in 0..insns.len() {
        let Some(mut state) = states.get_mut(pc).and_then(Option::take) else { continue };
        let mut flow = |target: usize, s: State| {
            if let Some(slot) = states.get_mut(target) {
                match slot {
                    Some(existing) => existing.join(&s),
                    None => *slot = Some(s),
                }
            }
        };
        match step(pc, insns.get(pc).and_then(|i| i.op()), &mut state, env) {
            Step::Goto(next) => flow(next, state),
            Step::Branch { cmp, taken, not_taken } => match cmp.decided() {
                Some(true) => flow(taken, state),
                Some(false) => flow(not_taken, state),
                None => {
                    let tested = match (cmp.lhs, cmp.rhs) {
                        (Val::Exact(f), Val::Known(k)) | (Val::Known(k), Val::Exact(f)) => Some((f, u32::MAX, k)),
                        (Val::Masked { field, mask }, Val::Known(k)) | (Val::Known(k), Val::Masked { field, mask }) => {
                            Some((field, mask, k))
                        }
                        _ => None,
                    };
                    let Some((field, mask, k)) = tested else { return false };
                    let t = tests.entry(field).or_default();
                    match (cmp.op, mask) {
                        (JmpOp::Jset, u32::MAX) => t.bits |= k,
                        (_, u32::MAX) => t.ends.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]),
                        (_, mask) => t.bits |= mask,
                    }
                    flow(taken, state);
                    flow(not_taken, state);
                }
            },
            Step::DivByX { divisor, next } => {
                if divisor.known().is_none() {
                    return false;
                }
                flow(next, state);
            }
            Step::Return(v) => {
                if v.known().is_none() {
                    return false;
                }
            }
        }
    }
    true
}

/// The inputs of every class of `programs` (seccomp filters) whose product
/// of stand-ins is at most `cap`.
pub fn region_inputs(programs: &[&Program], cap: usize) -> Regions {
    let mut out = Regions::default();
    let Ok(mut analyzers) = programs.iter().map(|p| Analyzer::new(p)).collect::<Result<Vec<_>, _>>() else {
        out.classes_incomplete = true;
        return out;
    };
    let Some(arches) = field_ends(&mut analyzers, None, Field::Arch) else {
        out.classes_incomplete = true;
        return out;
    };
    for arch in arches {
        let Some(nrs) = field_ends(&mut analyzers, Some(arch), Field::Nr) else {
            out.classes_incomplete = true;
            continue;
        };
        for nr in nrs {
            let env = Env::new(Some(nr), Some(arch), arch);
            let mut tests = BTreeMap::new();
            if !programs.iter().all(|p| class_tests(p, &env, &mut tests)) {
                out.skipped += 1;
                continue;
            }
            let Some(words) = tests.iter().map(|(f, t)| Some((*f, t.stand_ins()?))).collect::<Option<Vec<_>>>() else {
                out.skipped += 1;
                continue;
            };
            let product = words.iter().try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()).filter(|&n| n <= cap));
            let Some(product) = product else {
                out.skipped += 1;
                continue;
            };
            out.enumerated += 1;
            for i in 0..product {
                // Input `i` is a mixed-radix number, one digit per word.
                let mut digit = i;
                let mut chosen: BTreeMap<Field, u32> = BTreeMap::new();
                for (f, values) in &words {
                    chosen.insert(*f, values.get(digit % values.len()).copied().unwrap_or(0));
                    digit /= values.len();
                }
                out.inputs.push(data_of_fields(arch, |f| match f {
                    Field::Nr => nr,
                    Field::Arch => arch,
                    f => chosen.get(&f).copied().unwrap_or(0),
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn program(text: &str) -> Program {
        crate::asm_program(text, cbpf::Mode::Seccomp).unwrap()
    }

    /// Two filters that differ only where `args[0].lo` is 7 and `args[1].lo`
    /// has bit 2 set: the regions contain such an input, and cover every
    /// class.
    #[test]
    fn the_regions_reach_a_difference_at_one_value_and_one_bit() {
        let a = program(
            "ld [4]\n jeq #0xc000003e, x86, kill\n x86: ld [0]\n jeq #1, write, allow\n \
             write: ld [16]\n jeq #7, arg1, allow\n arg1: ld [24]\n jset #4, deny, allow\n \
             deny: ret #0x50001\n allow: ret #0x7fff0000\n kill: ret #0\n",
        );
        let b = program("ld [4]\n jeq #0xc000003e, allow, kill\n allow: ret #0x7fff0000\n kill: ret #0\n");
        let r = region_inputs(&[&a, &b], 1 << 12);
        assert!(r.complete(), "{r:?}");
        let run = |p: &Program, d: &SeccompData| cbpf::trace_seccomp(p, &d.to_bytes(), |_| {}).unwrap();
        let differing: Vec<&SeccompData> = r.inputs.iter().filter(|d| run(&a, d) != run(&b, d)).collect();
        assert!(!differing.is_empty());
        for d in differing {
            assert_eq!((d.nr, d.args[0] as u32, d.args[1] as u32 & 4), (1, 7, 4));
        }
    }

    /// Arithmetic on an argument that feeds a test skips its class.
    #[test]
    fn arithmetic_skips_the_class() {
        let a = program("ld [0]\n jeq #1, arith, allow\n arith: ld [16]\n add #1\n jeq #8, deny, allow\n deny: ret #0\n allow: ret #0x7fff0000\n");
        let r = region_inputs(&[&a], 1 << 12);
        assert!(r.skipped >= 1 && !r.complete(), "{r:?}");
        assert!(r.enumerated >= 1, "{r:?}");
    }
}
