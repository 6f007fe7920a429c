//! Classes of syscall numbers a filter cannot tell apart.
//!
//! `analyze` asks the same question for every number of a syscall table
//! (383 on x86_64). When the answer needs the path exploration, a filter
//! that never looks at `nr` past its first tests (or not at all) would be
//! explored 383 times over the same paths. Two numbers get the same answer
//! when every test the filter makes on `nr` comes out the same for both,
//! provided that `nr` reaches nothing but such tests.
//!
//! That is checked once per arch with `nr` symbolic: in the data-flow pass
//! every reachable use of a value that depends on `nr` must be a
//! conditional jump comparing `nr` itself with a known constant (either
//! operand order). Branches on `nr` are kept out of the control
//! dependences in that pass ([`super::dataflow::Dataflow::run_hiding`]):
//! numbers of one class take the same side of each of them, so a value
//! chosen by them alone is the same for the whole class. Any other use (arithmetic that reaches a jump, a
//! divisor, a returned value, a join of `nr` with another value) makes the
//! filter *unclassified* and every number is analysed on its own, as
//! before. The data-flow pass over-approximates every concrete run, so a
//! number's concrete exploration takes only jumps on `nr` that appear in
//! the list; numbers with equal outcomes on all of them run the same
//! abstract instructions and get the same [`super::ActionResult`].

use cbpf::JmpOp;

use super::Analyzer;
use crate::domain::{Env, Field, FieldSet, Step, Val};

/// How one arch's reachable code tests `nr` (or, with `arch` unknown, how
/// the whole filter tests `arch`): the same argument holds for any field
/// whose value reaches nothing but comparisons with constants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NrClasses {
    /// Every use of the field is one of these comparisons:
    /// `(op, k, field_is_lhs)`, sorted, without repeats.
    Tests(Vec<(JmpOp, u32, bool)>),
    /// The field reaches arithmetic, a return or a join: no classes.
    Unclassified,
}

impl NrClasses {
    /// Classifies the program `analyzer` holds under `arch`.
    pub(super) fn of(analyzer: &mut Analyzer, arch: u32) -> NrClasses {
        NrClasses::of_field(analyzer, &Env::new(None, Some(arch), arch), Field::Nr)
    }

    /// Classifies the values of `field` under `env` (where `field` is
    /// unknown).
    pub(super) fn of_field(analyzer: &mut Analyzer, env: &Env, field: Field) -> NrClasses {
        match NrClasses::scan(analyzer, env, field) {
            (_, Some(_)) => NrClasses::Unclassified,
            (mut tests, None) => {
                tests.sort_unstable_by_key(|&(op, k, lhs)| (op.bits(), k, lhs));
                tests.dedup();
                NrClasses::Tests(tests)
            }
        }
    }

    /// Every comparison of `field` with a constant, and the first pc (in
    /// program order) where `field` reaches anything else.
    pub(super) fn scan(analyzer: &mut Analyzer, env: &Env, field: Field) -> (Vec<(JmpOp, u32, bool)>, Option<usize>) {
        let mut tests: Vec<(JmpOp, u32, bool)> = Vec::new();
        let mut other: Option<usize> = None;
        analyzer.for_each_step_hiding(env, FieldSet::single(field), |pc, _, step| {
            let nr_in = |v: Val| v.deps().contains(field);
            let used = match step {
                Step::Branch { cmp, .. } => match (cmp.lhs, cmp.rhs) {
                    (Val::Exact(f), Val::Known(k)) if f == field => {
                        tests.push((cmp.op, k, true));
                        false
                    }
                    (Val::Known(k), Val::Exact(f)) if f == field => {
                        tests.push((cmp.op, k, false));
                        false
                    }
                    (l, r) => nr_in(l) || nr_in(r),
                },
                Step::DivByX { divisor, .. } => nr_in(divisor),
                Step::Return(v) => nr_in(v),
                Step::Goto(_) => false,
            };
            if used {
                other.get_or_insert(pc);
            }
        });
        (tests, other)
    }

    /// The class of `nr`: the outcome of every test, one bit each; `None`
    /// when unclassified.
    pub fn key(&self, nr: u32) -> Option<Vec<u64>> {
        let NrClasses::Tests(tests) = self else { return None };
        let mut key = vec![0u64; tests.len().div_ceil(64)];
        for (i, &(op, k, nr_is_lhs)) in tests.iter().enumerate() {
            let holds = if nr_is_lhs { op.eval(nr, k) } else { op.eval(k, nr) };
            if holds {
                if let Some(word) = key.get_mut(i / 64) {
                    *word |= 1 << (i % 64);
                }
            }
        }
        Some(key)
    }
    /// One number of every class when the tests are order comparisons
    /// (`jeq`, `jgt`, `jge`: each class is a union of runs of numbers
    /// whose ends are a tested constant, its neighbour, 0 or `u32::MAX`):
    /// those ends, ascending. `None` when unclassified or when a `jset`
    /// tests `nr` (its classes are not runs).
    pub fn representatives(&self) -> Option<Vec<u32>> {
        let NrClasses::Tests(tests) = self else { return None };
        let mut out = vec![0, u32::MAX];
        for &(op, k, _) in tests {
            if op == JmpOp::Jset {
                return None;
            }
            out.extend([k.wrapping_sub(1), k, k.wrapping_add(1)]);
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use cbpf::{Insn, Mode};

    use super::*;

    use cbpf::uapi::audit::{AUDIT_ARCH_AARCH64 as AARCH64, AUDIT_ARCH_I386 as I386, AUDIT_ARCH_X86_64 as X86_64};

    fn programs() -> Vec<(String, cbpf::Program)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "bpf") {
                let insns = cbpf::raw::decode(&std::fs::read(&path).unwrap()).unwrap();
                out.push((path.display().to_string(), cbpf::validate(&insns, Mode::Seccomp).unwrap()));
            }
        }
        assert!(out.len() >= 8, "testdata/filters missing");
        // Hand-made: nr through arithmetic (unclassified), nr compared
        // with `jgt`/`jset` both ways round, nr returned.
        let ld = |k| Insn::stmt(0x20, k);
        let ret = |k| Insn::stmt(0x06, k);
        let hand: [(&str, Vec<Insn>); 4] = [
            ("nr+1 == 5", vec![ld(0), Insn::jump(0x04, 1, 0, 0), Insn::jump(0x15, 5, 0, 1), ret(1), ret(2)]),
            (
                "jgt/jset on nr, nr in X",
                vec![
                    ld(0),
                    Insn::jump(0x25, 300, 0, 2),
                    Insn::jump(0x45, 4, 0, 1),
                    ret(7),
                    Insn::stmt(0x07, 0),       // tax
                    Insn::stmt(0x00, 100),     // ld #100
                    Insn::jump(0x3d, 0, 0, 1), // jge x: 100 >= nr
                    ret(8),
                    ret(9),
                ],
            ),
            ("nr == args[0].lo", vec![ld(0), Insn::stmt(0x07, 0), ld(16), Insn::jump(0x1d, 0, 0, 1), ret(1), ret(2)]),
            ("ret nr", vec![ld(0), Insn::jump(0x16, 0, 0, 0)]),
        ];
        for (name, insns) in hand {
            out.push((name.to_string(), cbpf::validate(&insns, Mode::Seccomp).unwrap()));
        }
        out
    }

    /// The memo changes no answer: every filter, three arches, numbers
    /// 0..600 and the edges, with and without classes.
    #[test]
    fn classes_give_the_answers_of_separate_analyses() {
        for (name, p) in programs() {
            for arch in [X86_64, I386, AARCH64] {
                let mut memo = Analyzer::new(&p).unwrap();
                let mut plain = Analyzer::new(&p).unwrap();
                for nr in (0..600).chain([0x4000_0000, 0x4000_0001, u32::MAX - 1, u32::MAX]) {
                    let a = memo.try_result(arch, nr).unwrap();
                    let b = plain.result_uncached(arch, nr).unwrap();
                    assert_eq!(a, b, "{name} arch {arch:#x} nr {nr}");
                }
            }
        }
    }

    /// Representatives as run starts (how `fast::Partition` cuts numbers):
    /// every number has the class of the nearest representative at or
    /// below it.
    #[test]
    fn every_number_has_the_class_of_the_representative_below_it() {
        use JmpOp::*;
        let classes = NrClasses::Tests(vec![(Jgt, 9, true), (Jeq, 12, false), (Jge, 300, true), (Jgt, 50, false)]);
        let starts = classes.representatives().unwrap();
        for nr in (0..400).chain([u32::MAX - 1, u32::MAX]) {
            let start = *starts.iter().rev().find(|&&b| b <= nr).unwrap();
            assert_eq!(classes.key(nr), classes.key(start), "nr {nr}");
        }
        assert_eq!(NrClasses::Tests(vec![(Jset, 4, true)]).representatives(), None);
    }

    #[test]
    fn nr_through_arithmetic_or_returned_is_unclassified() {
        let progs = programs();
        let find = |n: &str| &progs.iter().find(|(name, _)| name == n).unwrap().1;
        for n in ["nr+1 == 5", "ret nr", "nr == args[0].lo"] {
            let mut a = Analyzer::new(find(n)).unwrap();
            assert_eq!(NrClasses::of(&mut a, X86_64), NrClasses::Unclassified, "{n}");
        }
        let mut a = Analyzer::new(find("jgt/jset on nr, nr in X")).unwrap();
        match NrClasses::of(&mut a, X86_64) {
            NrClasses::Tests(t) => assert_eq!(t.len(), 3, "{t:?}"),
            other => panic!("{other:?}"),
        }
    }
}
