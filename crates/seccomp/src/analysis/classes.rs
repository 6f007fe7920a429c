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

    /// Every comparison of `field` itself with a constant, and the first
    /// pc (in program order) where `field` reaches anything else (a
    /// comparison of the masked word among them).
    pub(super) fn scan(analyzer: &mut Analyzer, env: &Env, field: Field) -> (Vec<(JmpOp, u32, bool)>, Option<usize>) {
        let (tests, mut other) = scan_masked(analyzer, env, field);
        let mut whole = Vec::with_capacity(tests.len());
        for t in tests {
            if t.mask == u32::MAX {
                whole.push((t.op, t.k, t.field_is_lhs));
            } else {
                other = Some(other.map_or(t.pc, |o| o.min(t.pc)));
            }
        }
        (whole, other)
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

    /// One number of every class, as run starts: where the runs of
    /// numbers on which every test comes out the same begin, ascending from
    /// 0 (the rule of [`WordCuts::starts`] for the whole word), when the
    /// tests are order comparisons (`jeq`, `jgt`, `jge`: a run begins at a
    /// tested constant or just above it) or `jset`s of high bits (constant
    /// on runs of `2^j` numbers, `j` the lowest bit tested: Chromium's
    /// `jset #0x40000000` of the x32 bit cuts four runs). Every number has
    /// the class of the start at or below it. `None` when unclassified or
    /// when a `jset` tests a bit below [`MIN_JSET_RUN_BIT`] (too many runs).
    pub fn representatives(&self) -> Option<Vec<u32>> {
        let NrClasses::Tests(tests) = self else { return None };
        run_starts(u32::MAX, tests.iter().copied())
    }

    /// [`NrClasses::representatives`] of several filters' classes of one
    /// field at once: the runs on which every test of every filter comes
    /// out the same. `None` when one of them is unclassified.
    pub fn joint_representatives(all: &[NrClasses]) -> Option<Vec<u32>> {
        let mut tests = Vec::new();
        for classes in all {
            let NrClasses::Tests(t) = classes else { return None };
            tests.extend_from_slice(t);
        }
        NrClasses::Tests(tests).representatives()
    }
}

/// Where the runs of `word & mask` on which every test `(word & mask) OP
/// k` (or `k OP (word & mask)` where the bool, `field_is_lhs`, is false)
/// comes out the same start: 0, then each boundary, ascending. `None` when
/// a `jset` cuts too many runs ([`jset_run_starts`]).
fn run_starts(mask: u32, tests: impl IntoIterator<Item = (JmpOp, u32, bool)>) -> Option<Vec<u32>> {
    let mut starts = vec![0u32];
    for (op, k, field_is_lhs) in tests {
        // k > v is v < k, k >= v is v < k + 1.
        let boundaries: [Option<u32>; 2] = match (op, field_is_lhs) {
            (JmpOp::Jeq, _) => [Some(k), k.checked_add(1)],
            (JmpOp::Jgt, true) | (JmpOp::Jge, false) => [k.checked_add(1), None],
            (JmpOp::Jge, true) | (JmpOp::Jgt, false) => [Some(k), None],
            (JmpOp::Jset, _) => {
                starts.extend(jset_run_starts(mask, k)?);
                continue;
            }
        };
        starts.extend(boundaries.into_iter().flatten().filter(|&c| c != 0));
    }
    starts.sort_unstable();
    starts.dedup();
    Some(starts)
}

/// The lowest bit a `jset` may test for its runs to be cut one by one
/// (`2^(32 - j)` runs: at most 64).
pub const MIN_JSET_RUN_BIT: u32 = 26;

/// Where the runs of `v & mask` on which `jset #k` comes out the same
/// start (besides 0): at `2^j` when every bit of the mask from `j` (the
/// lowest bit of `k & mask`) up is in `k` (the test is then `v & mask >=
/// 2^j`), else at every multiple of `2^j` when `j >= MIN_JSET_RUN_BIT`;
/// `None` when there would be more runs. Empty when `k & mask` is 0 (the
/// test never holds).
fn jset_run_starts(mask: u32, k: u32) -> Option<Vec<u32>> {
    let b = k & mask;
    if b == 0 {
        return Some(Vec::new());
    }
    let j = b.trailing_zeros();
    let low = 1u32 << j;
    if mask & !(low - 1) & !b == 0 {
        return Some(vec![low]);
    }
    (j >= MIN_JSET_RUN_BIT).then(|| (1..1u32 << (32 - j)).map(|m| m << j).collect())
}

/// One comparison of a field, masked (`u32::MAX`: the field itself), with
/// a constant: `(field & mask) OP k`, or `k OP (field & mask)` when
/// `field_is_lhs` is false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MaskedTest {
    pub(super) op: JmpOp,
    pub(super) k: u32,
    pub(super) field_is_lhs: bool,
    pub(super) mask: u32,
    pub(super) pc: usize,
}

/// Every comparison of `field`, whole or masked (`and #m` of the loaded
/// word, [`Val::Masked`]), with a constant, and the first pc (in program
/// order) where `field` reaches anything else: the one data-flow scan
/// behind [`NrClasses`] and [`WordCuts`]. Branches on `field` stay out of
/// the control dependences ([`super::dataflow::Dataflow::run_hiding`]),
/// as the module docs argue.
fn scan_masked(analyzer: &mut Analyzer, env: &Env, field: Field) -> (Vec<MaskedTest>, Option<usize>) {
    let mut tests: Vec<MaskedTest> = Vec::new();
    let mut other: Option<usize> = None;
    analyzer.for_each_step_hiding(env, FieldSet::single(field), |pc, _, step| {
        let used_in = |v: Val| v.deps().contains(field);
        let masked = |v: Val| match v {
            Val::Exact(f) if f == field => Some(u32::MAX),
            Val::Masked { field: f, mask } if f == field => Some(mask),
            _ => None,
        };
        let used = match step {
            Step::Branch { cmp, .. } => match (cmp.lhs, cmp.rhs) {
                (l, Val::Known(k)) if masked(l).is_some() => {
                    let mask = masked(l).unwrap_or(u32::MAX);
                    tests.push(MaskedTest { op: cmp.op, k, field_is_lhs: true, mask, pc });
                    false
                }
                (Val::Known(k), r) if masked(r).is_some() => {
                    let mask = masked(r).unwrap_or(u32::MAX);
                    tests.push(MaskedTest { op: cmp.op, k, field_is_lhs: false, mask, pc });
                    false
                }
                (l, r) => used_in(l) || used_in(r),
            },
            Step::DivByX { divisor, .. } => used_in(divisor),
            Step::Return(v) => used_in(v),
            Step::Goto(_) => false,
        };
        if used {
            other.get_or_insert(pc);
        }
    });
    (tests, other)
}

/// How a filter tells the values of one word apart when it only compares
/// `word & mask` with constants, one mask for every test (libseccomp's and
/// seccompiler's `jeq`/`jgt`/`jge` on each half, OpenSSH's `and` masks
/// followed by `jeq`, a `jset` of the sign bit): the values of
/// `word & mask` cut into runs, each run taking the same side of every
/// test, so the filter gives every value of a run the same behaviour on
/// every other word (the argument of the module docs, for the masked
/// word). `fast::tree` switches on these runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordCuts {
    /// The bits tested (`u32::MAX`: the whole word).
    pub mask: u32,
    /// Where the runs of `word & mask` start, ascending; the first is 0.
    pub starts: Vec<u32>,
    /// The first pc that tests the word.
    pub first_test: usize,
    /// The word is also tested with other masks: the runs are those of one
    /// bit tested by a `jset` (`mask` is that bit), which decide only the
    /// tests of that bit. A value of a run is then no stand-in for the
    /// run: specialise on the bit, the word stays.
    pub partial: bool,
    /// The word is tested with several masks (OpenSSH's `mmap` rule:
    /// `word & ~7 == 0`, then `word & 6 != 6`) and no single bit splits
    /// it: `mask` is the union of their bits and `starts` is only `[0]`.
    /// The runs of `word & mask` are found by fixing its bits one at a
    /// time from the top, until the residual no longer reads the word
    /// (`fast::tree`): the tests with fewer bits then decide alike on
    /// every value left. Every test reads only bits of `mask`, so a value
    /// of a run stands for the run as with one mask.
    pub by_bits: bool,
    /// With `by_bits`: the constants of the word's whole-word `jeq`s, when
    /// narrower tests stand beside them (Chromium's `clone`: `flags ==
    /// the thread flags`, then cases of `flags & (CLONE_VM |
    /// CLONE_THREAD)`), ascending, at most [`MAX_PEELED`]. `mask` is then
    /// the union of the narrower tests' bits alone: each constant is a run
    /// of its own, and every other value one child in which those `jeq`s
    /// are false, switched on `mask` a level down. Without peeling, the
    /// union would be the whole word, too many bits to fix one at a time.
    pub peel: Vec<u32>,
}

/// Most whole-word `jeq` constants [`WordCuts::peel`] takes apart.
pub const MAX_PEELED: usize = 4;

impl WordCuts {
    /// The cuts of `tests`; `None` when two tests use different masks, or
    /// a `jset` cuts `word & mask` into too many runs
    /// ([`jset_run_starts`]).
    fn of(tests: &[MaskedTest]) -> Option<WordCuts> {
        // `jset #b` is `(word & b) != 0`, a run of `word & b` from 1: when
        // every test keeps the same bits that way (gVisor's and Chromium's
        // bit tests, `jset #mask` for "no bit outside the allowed ones"),
        // those bits are the mask.
        let own = |t: &MaskedTest| if t.op == JmpOp::Jset { t.mask & t.k } else { t.mask };
        let same = tests.first().map(own).filter(|&m| m != 0 && tests.iter().all(|t| own(t) == m));
        if let Some(mask) = same.filter(|&m| tests.iter().any(|t| t.mask != m)) {
            let as_runs: Vec<MaskedTest> = tests
                .iter()
                .map(|t| match t.op {
                    JmpOp::Jset => MaskedTest { op: JmpOp::Jgt, k: 0, field_is_lhs: true, mask, pc: t.pc },
                    _ => *t,
                })
                .collect();
            return WordCuts::of(&as_runs);
        }
        let mask = tests.first()?.mask;
        if tests.iter().any(|t| t.mask != mask) {
            return None;
        }
        let starts = run_starts(mask, tests.iter().map(|t| (t.op, t.k, t.field_is_lhs)))?;
        let first_test = tests.iter().map(|t| t.pc).min().unwrap_or(0);
        Some(WordCuts { mask, starts, first_test, partial: false, by_bits: false, peel: Vec::new() })
    }

    /// Where no one mask does: the first `jset` of a single bit (Chromium's
    /// sign-bit check of an argument's low word before its masked cases),
    /// as the runs of that bit ([`WordCuts::partial`]).
    fn split_bit(tests: &[MaskedTest]) -> Option<WordCuts> {
        let first_test = tests.iter().map(|t| t.pc).min()?;
        let bit = tests.iter().filter(|t| t.op == JmpOp::Jset).map(|t| t.k & t.mask).find(|b| b.is_power_of_two())?;
        Some(WordCuts { mask: bit, starts: vec![0, bit], first_test, partial: true, by_bits: false, peel: Vec::new() })
    }

    /// Where tests use several masks and no one bit splits them: the
    /// union of the bits they read, its runs left to be found by fixing
    /// bits ([`WordCuts::by_bits`]).
    fn by_bits(tests: &[MaskedTest]) -> Option<WordCuts> {
        let first_test = tests.iter().map(|t| t.pc).min()?;
        let own = |t: &MaskedTest| if t.op == JmpOp::Jset { t.mask & t.k } else { t.mask };
        let whole_jeq = |t: &&MaskedTest| t.op == JmpOp::Jeq && t.mask == u32::MAX;
        let mut peel: Vec<u32> = tests.iter().filter(whole_jeq).map(|t| t.k).collect();
        peel.sort_unstable();
        peel.dedup();
        let narrower = tests.iter().filter(|t| !whole_jeq(t)).map(own).fold(0, |all, m| all | m);
        if !peel.is_empty() && peel.len() <= MAX_PEELED && narrower != 0 && narrower != u32::MAX {
            return Some(WordCuts { mask: narrower, starts: vec![0], first_test, partial: false, by_bits: true, peel });
        }
        let mask = tests.iter().map(own).fold(0, |all, m| all | m);
        (mask != 0).then(|| WordCuts {
            mask,
            starts: vec![0],
            first_test,
            partial: false,
            by_bits: true,
            peel: Vec::new(),
        })
    }

    /// A value `v` of the word with `start <= v & mask <= end`: the least
    /// submask of `mask` at or above `start`, when it is at most `end`.
    pub fn representative(&self, start: u32, end: u32) -> Option<u32> {
        least_submask_at_least(self.mask, start).filter(|&v| v <= end)
    }
}

/// The least `x` with `x & !mask == 0` and `x >= a`.
fn least_submask_at_least(mask: u32, a: u32) -> Option<u32> {
    if a & !mask == 0 {
        return Some(a);
    }
    // Past `a`, the least such x agrees with `a` above some bit q where `a`
    // has 0 and x has 1, and is 0 below: the smallest q that works wins.
    (0..32).find_map(|q| {
        let bit = 1u32 << q;
        // The bits of `a` from q up: above q, since a q that works has
        // bit q clear in `a`.
        let above = a & !(bit - 1);
        (mask & bit != 0 && a & bit == 0 && above & !mask == 0).then_some(above | bit)
    })
}

impl super::Analyzer {
    /// How the filter tells values of `field` apart when every reachable
    /// use of it is a comparison of `field & mask` with a constant (one
    /// mask, or else one bit a `jset` tests: [`WordCuts::partial`]), with
    /// `arch` fixed where given ([`WordCuts`]); `None` when it reaches
    /// anything else, is never tested, or the tests admit no runs.
    /// Charges one step per instruction.
    pub fn word_cuts(&mut self, arch: Option<u32>, field: Field) -> Result<Option<WordCuts>, super::AnalysisError> {
        self.budget.charge_steps(self.ops().len() as u64)?;
        let env = Env::new(None, arch, arch.unwrap_or(crate::arch::AUDIT_ARCH_X86_64));
        Ok(match scan_masked(self, &env, field) {
            (tests, None) => {
                WordCuts::of(&tests).or_else(|| WordCuts::split_bit(&tests)).or_else(|| WordCuts::by_bits(&tests))
            }
            (_, Some(_)) => None,
        })
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
        // Each start begins a run: the number before it is in another class.
        assert_eq!(starts, [0, 10, 12, 13, 50, 300]);
        for &s in &starts[1..] {
            assert_ne!(classes.key(s - 1), classes.key(s), "start {s}");
        }
        assert_eq!(NrClasses::Tests(vec![(Jset, 4, true)]).representatives(), None);
        // The x32 bit: four runs of 2^30 numbers.
        let x32 = NrClasses::Tests(vec![(Jset, 0x4000_0000, true), (Jge, 300, true)]);
        let starts = x32.representatives().unwrap();
        for nr in (0..400).chain([0x3fff_ffff, 0x4000_0000, 0x4000_0100, 0x8000_0000, 0xc000_0001, u32::MAX]) {
            let start = *starts.iter().rev().find(|&&b| b <= nr).unwrap();
            assert_eq!(x32.key(nr), x32.key(start), "nr {nr:#x}");
        }
    }

    #[test]
    fn least_submasks() {
        for mask in [u32::MAX, 0xffff_fe7f, 0xf0, 0x8000_0001, 0] {
            for a in [0u32, 1, 7, 0x10, 0x7f, 0x80, 0x181, 0xfff0_0000, u32::MAX] {
                let brute = (a..=a.saturating_add(0x200)).find(|x| x & !mask == 0);
                let got = least_submask_at_least(mask, a);
                match brute {
                    Some(b) => assert_eq!(got, Some(b), "mask {mask:#x} a {a:#x}"),
                    None => assert!(got.is_none_or(|g| g > a.saturating_add(0x200) && g & !mask == 0)),
                }
            }
        }
    }

    /// Every value of the word takes, on every test, the side of the
    /// start of its run.
    #[test]
    fn word_cuts_are_runs_of_the_masked_word() {
        use JmpOp::*;
        let t = |op, k, field_is_lhs, mask| MaskedTest { op, k, field_is_lhs, mask, pc: 0 };
        let cases: [Vec<MaskedTest>; 5] = [
            vec![t(Jeq, 0, true, 0xffff_fe7f), t(Jeq, 9, true, 0xffff_fe7f), t(Jeq, 4, true, 0xffff_fe7f)],
            vec![t(Jset, 0x8000_0000, true, u32::MAX), t(Jeq, 7, true, u32::MAX), t(Jgt, 300, false, u32::MAX)],
            vec![t(Jset, 0xffff_fffc, true, 0xffff_fffc)],
            vec![t(Jset, 0xfffd_97cc, true, u32::MAX), t(Jeq, 0, true, 0xfffd_97cc)],
            vec![t(Jset, 0x4000_0000, true, u32::MAX), t(Jge, 0x1000, true, u32::MAX)],
        ];
        for tests in cases {
            let cuts = WordCuts::of(&tests).unwrap();
            let side = |v: u32| -> Vec<bool> {
                tests
                    .iter()
                    .map(|t| if t.field_is_lhs { t.op.eval(v & t.mask, t.k) } else { t.op.eval(t.k, v & t.mask) })
                    .collect()
            };
            for v in (0..0x400).chain([0x7fff_ffff, 0x8000_0000, 0x8000_0189, u32::MAX]) {
                let m = v & cuts.mask;
                let i = cuts.starts.partition_point(|&s| s <= m) - 1;
                let end = cuts.starts.get(i + 1).map_or(u32::MAX, |&e| e - 1);
                let rep = cuts.representative(cuts.starts[i], end).unwrap();
                assert_eq!(side(v), side(rep), "{tests:?} v {v:#x} rep {rep:#x}");
            }
        }
        // A single low bit under a wider mask cuts too many runs; two masks
        // are no runs; a `jset` alone is a run of its own bits.
        assert_eq!(WordCuts::of(&[t(Jset, 0x100, true, u32::MAX), t(Jeq, 3, true, u32::MAX)]), None);
        let bits = WordCuts::of(&[t(Jset, 0xfffd_97cc, true, u32::MAX)]).unwrap();
        assert_eq!((bits.mask, bits.starts), (0xfffd_97cc, vec![0, 1]));
        assert_eq!(WordCuts::of(&[t(Jeq, 0, true, 0xff), t(Jeq, 0, true, 0xf)]), None);
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

    const JEQ_K: u16 = 0x15;
    const JGT_X: u16 = 0x2d;

    fn seccomp(insns: &[Insn]) -> cbpf::Program {
        cbpf::validate(insns, Mode::Seccomp).unwrap()
    }

    /// The numbers of one class share one analysis: once the first number
    /// of each class has been analysed, every other number costs no step.
    #[test]
    fn a_class_is_analysed_once() {
        let mut classified = 0;
        for (name, p) in programs() {
            let Some(starts) = NrClasses::of(&mut Analyzer::new(&p).unwrap(), X86_64).representatives() else {
                continue;
            };
            classified += 1;
            let mut a = Analyzer::new(&p).unwrap();
            for &nr in &starts {
                a.try_result(X86_64, nr).unwrap();
            }
            let spent = a.budget().steps_used();
            for nr in (0..600).chain([0x4000_0000, u32::MAX]) {
                a.try_result(X86_64, nr).unwrap();
            }
            assert_eq!(a.budget().steps_used(), spent, "{name}");
        }
        assert!(classified >= 8, "{classified}");
    }

    /// A compare with the field on the right (the constant in A, the field
    /// in X) is a test of the field only when X is the field itself:
    /// `5 > nr + 1` is another use of `nr`, at the jump.
    #[test]
    fn the_field_on_the_right_through_arithmetic_is_another_use() {
        let ld = |k| Insn::stmt(0x20, k);
        let ret = |k| Insn::stmt(0x06, k);
        let (tax, ld5) = (Insn::stmt(0x07, 0), Insn::stmt(0x00, 5));
        let plus_one = seccomp(&[ld(0), Insn::stmt(0x04, 1), tax, ld5, Insn::jump(JGT_X, 0, 0, 1), ret(1), ret(2)]);
        let mut a = Analyzer::new(&plus_one).unwrap();
        assert_eq!(NrClasses::of(&mut a, X86_64), NrClasses::Unclassified);
        assert_eq!(a.field_other_use(Some(X86_64), Field::Nr).unwrap(), Some(4));
        let itself = seccomp(&[ld(0), tax, ld5, Insn::jump(JGT_X, 0, 0, 1), ret(1), ret(2)]);
        let mut a = Analyzer::new(&itself).unwrap();
        assert_eq!(NrClasses::of(&mut a, X86_64), NrClasses::Tests(vec![(JmpOp::Jgt, 5, false)]));
        assert_eq!(a.field_other_use(Some(X86_64), Field::Nr).unwrap(), None);
    }

    /// `word & mask` compared with constants (OpenSSH's `and` then `jeq`)
    /// cuts the masked word into runs; `nr` masked is no class.
    #[test]
    fn a_masked_word_is_cut_by_its_mask() {
        let ld = |k| Insn::stmt(0x20, k);
        let ret = |k| Insn::stmt(0x06, k);
        let and_ff = Insn::stmt(0x54, 0xff);
        let p = seccomp(&[ld(16), and_ff, Insn::jump(JEQ_K, 3, 0, 1), ret(1), ret(2)]);
        let cuts = Analyzer::new(&p).unwrap().word_cuts(Some(X86_64), Field::ArgLo(0)).unwrap().unwrap();
        assert_eq!((cuts.mask, cuts.starts, cuts.first_test), (0xff, vec![0, 3, 4], 2));
        assert!(!cuts.partial && !cuts.by_bits);
        let p = seccomp(&[ld(0), and_ff, Insn::jump(JEQ_K, 3, 0, 1), ret(1), ret(2)]);
        assert_eq!(NrClasses::of(&mut Analyzer::new(&p).unwrap(), X86_64), NrClasses::Unclassified);
    }

    /// Several filters' classes at once are cut at every filter's tests;
    /// one unclassified filter leaves no classes.
    #[test]
    fn joint_representatives_cut_at_every_filters_tests() {
        use JmpOp::*;
        let a = NrClasses::Tests(vec![(Jeq, 5, true)]);
        let b = NrClasses::Tests(vec![(Jgt, 9, true), (Jset, 0x8000_0000, true)]);
        let joint = NrClasses::joint_representatives(&[a.clone(), b.clone()]);
        assert_eq!(joint, Some(vec![0, 5, 6, 10, 0x8000_0000]));
        assert_eq!(NrClasses::joint_representatives(std::slice::from_ref(&b)), b.representatives());
        assert_eq!(NrClasses::joint_representatives(&[a, NrClasses::Unclassified]), None);
        assert_eq!(NrClasses::joint_representatives(&[]), Some(vec![0]));
    }

    /// `jset #k` of every bit from the lowest of `k` up is `v >= 2^j`: one
    /// cut at any `j`. Otherwise a run per multiple of `2^j`, and only for
    /// `j >= MIN_JSET_RUN_BIT`.
    #[test]
    fn jset_runs_are_one_cut_when_the_test_is_an_order() {
        use JmpOp::*;
        let reps = |k: u32| NrClasses::Tests(vec![(Jset, k, true)]).representatives();
        assert_eq!(reps(0xc000_0000), Some(vec![0, 0x4000_0000]));
        assert_eq!(reps(0xffff_0000), Some(vec![0, 0x1_0000]));
        assert_eq!(reps(u32::MAX), Some(vec![0, 1]));
        assert_eq!(reps(0x4000_0000), Some(vec![0, 0x4000_0000, 0x8000_0000, 0xc000_0000]));
        assert_eq!(reps(1), None);
        assert_eq!(reps(0x0400_0001), None);
        assert_eq!(reps(0x8400_0000).map(|r| r.len()), Some(1 + 63));
        assert_eq!(reps(0), Some(vec![0]));
    }

    /// No one mask and no single bit: the first `jset` of a single bit
    /// (Chromium's sign-bit check) splits the word on that bit alone.
    #[test]
    fn a_word_with_several_masks_splits_on_its_first_single_bit_jset() {
        use JmpOp::*;
        let t = |op, k, mask, pc| MaskedTest { op, k, field_is_lhs: true, mask, pc };
        // A masked jeq whose constant is a power of two does not count.
        let tests = [t(Jeq, 4, 0xff, 5), t(Jset, 0x7, u32::MAX, 2), t(Jset, 0x8000_0000, u32::MAX, 7)];
        let cuts = WordCuts::split_bit(&tests).unwrap();
        assert_eq!((cuts.mask, cuts.starts, cuts.first_test), (0x8000_0000, vec![0, 0x8000_0000], 2));
        assert!(cuts.partial && !cuts.by_bits && cuts.peel.is_empty());
        // The bit is the one under the test's mask.
        let cuts = WordCuts::split_bit(&[t(Jset, 0x30, 0x10, 1)]).unwrap();
        assert_eq!(cuts.mask, 0x10);
        assert_eq!(WordCuts::split_bit(&[t(Jeq, 4, 0xff, 0), t(Jset, 6, u32::MAX, 1)]), None);
    }

    /// Several masks, no single bit: the union of the bits the tests read,
    /// with up to `MAX_PEELED` whole-word `jeq` constants taken apart when
    /// narrower tests stand beside them (Chromium's `clone`).
    #[test]
    fn several_masks_are_fixed_bit_by_bit_with_whole_jeqs_peeled() {
        use JmpOp::*;
        let t = |op, k, mask, pc| MaskedTest { op, k, field_is_lhs: true, mask, pc };
        let by_bits = |mask, peel: Vec<u32>, first_test| WordCuts {
            mask,
            starts: vec![0],
            first_test,
            partial: false,
            by_bits: true,
            peel,
        };
        // OpenSSH's mmap: `word & ~7 == 0`, then `word & 6 != 6`.
        let mmap = [t(Jeq, 0, 0xffff_fff8, 3), t(Jeq, 6, 6, 5)];
        assert_eq!(WordCuts::by_bits(&mmap), Some(by_bits(0xffff_fffe, vec![], 3)));
        // Chromium's clone: whole-word constants, then CLONE_VM | CLONE_THREAD cases.
        let clone = [
            t(Jeq, 0x3d_0f00, u32::MAX, 4),
            t(Jeq, 0x0120_0011, u32::MAX, 2),
            t(Jeq, 0x3d_0f00, u32::MAX, 9),
            t(Jeq, 0x1_0100, 0x1_0100, 6),
            t(Jeq, 0x100, 0x100, 7),
            t(Jset, 0x8000_0000, 0x8000_0001, 8),
        ];
        let want = by_bits(0x8001_0100, vec![0x3d_0f00, 0x0120_0011], 2);
        assert_eq!(WordCuts::by_bits(&clone), Some(want));
        // MAX_PEELED constants are peeled; one more, and the union is the whole word.
        let many = |n: u32| -> Vec<MaskedTest> {
            (0..n).map(|i| t(Jeq, 100 + i, u32::MAX, 1)).chain([t(Jeq, 2, 2, 0)]).collect()
        };
        let peeled = WordCuts::by_bits(&many(MAX_PEELED as u32)).unwrap();
        assert_eq!((peeled.mask, peeled.peel.len()), (2, MAX_PEELED));
        assert_eq!(WordCuts::by_bits(&many(MAX_PEELED as u32 + 1)), Some(by_bits(u32::MAX, vec![], 0)));
        // Whole-word jeqs alone, or beside a test of every bit: nothing to peel.
        assert_eq!(WordCuts::by_bits(&[t(Jeq, 5, u32::MAX, 1)]), Some(by_bits(u32::MAX, vec![], 1)));
        let every_bit = [t(Jeq, 5, u32::MAX, 1), t(Jset, u32::MAX, u32::MAX, 2)];
        assert_eq!(WordCuts::by_bits(&every_bit), Some(by_bits(u32::MAX, vec![], 1)));
        // Tests that read no bit: no runs at all.
        assert_eq!(WordCuts::by_bits(&[t(Jset, 0xf0, 0x0f, 1)]), None);
        assert_eq!(WordCuts::by_bits(&[]), None);
    }
}
