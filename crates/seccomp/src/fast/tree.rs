//! Argument checks as trees: a residual program (what a filter does once
//! `arch` and `nr` are known) turned into a decision tree over the values
//! of the words it tests, the same cut [`super::Partition`] makes on
//! (arch, nr), one level down.
//!
//! A residual that tests a word only by comparing `word & mask` with
//! constants (one mask; [`crate::analysis::WordCuts`], found by the
//! analysis's data-flow scan over [`crate::domain`]) behaves the same for
//! every value in a run of `word & mask` between the constants: those runs
//! are the word's classes. The residual is specialised once per run with
//! the word fixed to a value of the run (the specialiser's key facts),
//! each specialisation (a constant or a shorter residual, which no longer
//! reads the word) becomes a child, neighbouring runs with the same child
//! merge, and the children are grown the same way, one word per level:
//!
//! ```text
//! chdir: 100 rules `A0 == i && A1 != 0 && A2 < SSIZE_MAX`, as libseccomp
//!        lays them out: 1100 instructions walked one rule after another
//! tree:  args[0].hi: [0] ──► args[0].lo: [0, 100) ──► args[1].hi ─► ...
//!                   [1, ..) ─► KILL    [100, ..) ─► KILL
//! ```
//!
//! The 100 `jeq`s of `args[0].lo` become one run: the residuals of
//! `A0 == 5` and `A0 == 7` are the same program (rule 5's checks and rule
//! 7's are the same instructions), and identical residuals are one node
//! (hash-consed), so a condition several rules share is one test. A word
//! tested with several masks (OpenSSH's `mmap` rule: `prot & ~7 == 0`,
//! then `prot & 6 != 6`) is switched on the union of their bits, its runs
//! found by fixing those bits one at a time from the top until the
//! residual no longer reads the word (`Forest::bit_runs`, a bounded
//! search). Whole-word `jeq`s beside narrower tests (Chromium's `clone`:
//! the thread flags exactly, else cases of two flag bits) would make that
//! union the whole word; their constants are peeled off instead
//! (`Forest::peel`): each a run of its own, every other value one child
//! in which they are false, switched on the narrower bits a level down.
//! What no tree can say (a word used in arithmetic, masks whose
//! runs are too many, a comparison of two words) stays a residual leaf.
//! `nr` and `arch` are never switched on here: the partition already cut
//! them.
//!
//! [`Switch`] is the one representation both consumers read: `optimize`
//! lays a switch out as cBPF (`ld`, an `and` or a `jset`, a balanced tree
//! of `jge`), the fast engine evaluates it itself (the word masked, a
//! binary search over the run starts), so a filter whose argument checks
//! are all trees never reaches the classic interpreter.
//!
//! Work is bounded: every specialisation is charged to the forest's step
//! budget and every residual kept to its instruction budget, trees nest at
//! most [`MAX_TREE_DEPTH`] words deep, and past a budget the residual
//! simply stays a leaf (exact either way).

use std::collections::HashMap;

use cbpf::{Insn, Mode, Op, Program};

use super::outcome::{Outcome, Residual};
use super::specialize::{KeyFact, Specialized, Specializer};
use crate::analysis::{Analyzer, WordCuts};
use crate::arch::AUDIT_ARCH_X86_64;
use crate::domain::Field;

/// Most words one path through a tree fixes (a `struct seccomp_data` has
/// 14 besides `nr` and `arch`).
pub const MAX_TREE_DEPTH: u32 = 14;

/// Most specialisations [`Forest::bit_runs`] makes for one switch.
const MAX_BIT_SEARCH: usize = 256;
/// Most runs a switch found by fixing bits may have.
const MAX_BIT_RUNS: usize = 32;

/// Runs a cut past the plain bound specialises first to price the rest
/// ([`Forest::cut_cap`]), spread evenly over the word.
const SAMPLED_RUNS: usize = 8;

/// A run's child before it is kept: a constant, or a residual (user form,
/// not yet validated) with its entry reads.
type Child = Result<Outcome, (Vec<Insn>, (bool, bool))>;

/// What [`Forest::run_children`] found: each run's child (from its start),
/// a constant or an index into `residuals`, the distinct residuals (user
/// form, not yet validated) with their entry reads.
struct RunChildren {
    runs: Vec<(u32, Result<Outcome, usize>)>,
    residuals: Vec<(Vec<Insn>, (bool, bool))>,
}

/// Whether user-form `insns` load the word at byte `offset`.
fn reads_word(insns: &[Insn], offset: u32) -> bool {
    insns.iter().any(|&insn| Op::from_insn(insn) == Some(Op::LdAbs { size: cbpf::Size::W, k: offset }))
}

/// The byte order the forest names words in: the specialiser's
/// ([`Field::from_offset`] on any fixed arch maps offsets one to one).
const LAYOUT_ARCH: u32 = AUDIT_ARCH_X86_64;

/// A decision on one `struct seccomp_data` word: which child handles each
/// run of `word & mask`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Switch {
    /// Byte offset of the word, as the residual's `ld [offset]` reads it.
    pub offset: u32,
    /// The bits tested (`u32::MAX`: the whole word).
    pub mask: u32,
    /// `(first value of word & mask, child)`, ascending, the first at 0,
    /// each run to the next one's start (the last to `u32::MAX`);
    /// neighbours differ. Each start is a value `word & mask` takes (the
    /// least of its run). A child [`Outcome::Switch`] names an earlier
    /// switch of the forest.
    pub ranges: Vec<(u32, Outcome)>,
    /// The residual program this switch stands for
    /// ([`super::Partition::residuals`]).
    pub residual: usize,
}

impl Switch {
    /// The child for a value of the word.
    pub fn child(&self, word: u32) -> Outcome {
        let v = word & self.mask;
        let i = self.ranges.partition_point(|&(start, _)| start <= v);
        self.ranges.get(i.wrapping_sub(1)).map_or(Outcome::Residual(self.residual), |&(_, o)| o)
    }
}

/// Why [`Forest::outcome`] kept no residual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The residual does not validate (never seen; the `fast_equiv` fuzz
    /// target looks for one).
    Invalid,
    /// The instruction budget is spent.
    Budget,
}

/// Residual programs and the trees grown from them, each once.
#[derive(Debug)]
pub(crate) struct Forest {
    pub(crate) residuals: Vec<Residual>,
    /// Children before parents: a switch's children name smaller indices.
    pub(crate) switches: Vec<Switch>,
    index: HashMap<Vec<Insn>, Outcome>,
    /// Forward-pass steps (specialisations, data-flow scans) left.
    steps_left: usize,
    /// Residual instructions left.
    insns_left: usize,
    /// Switches not built, and residuals not kept, for want of budget.
    pub(crate) budget_fallbacks: usize,
}

impl Forest {
    /// An empty forest that may spend `steps` forward-pass steps and keep
    /// `insns` residual instructions.
    pub(crate) fn new(steps: usize, insns: usize) -> Forest {
        Forest {
            residuals: Vec::new(),
            switches: Vec::new(),
            index: HashMap::new(),
            steps_left: steps,
            insns_left: insns,
            budget_fallbacks: 0,
        }
    }

    /// Whether `work` more steps fit the budget; a refusal is counted.
    pub(crate) fn affordable(&mut self, work: usize) -> bool {
        if self.steps_left >= work {
            true
        } else {
            self.budget_fallbacks += 1;
            false
        }
    }

    /// Charges `work` steps.
    pub(crate) fn charge(&mut self, work: usize) {
        self.steps_left = self.steps_left.saturating_sub(work);
    }

    /// Keeps `program` as a residual as it is (no tree, not hash-consed by
    /// its validated form): the whole filter as a fallback.
    pub(crate) fn keep(&mut self, key: Vec<Insn>, residual: Residual) -> usize {
        let i = self.residuals.len();
        self.insns_left = self.insns_left.saturating_sub(residual.program.len());
        self.residuals.push(residual);
        self.index.insert(key, Outcome::Residual(i));
        i
    }

    /// The outcome of the residual `insns` (user form, not yet validated)
    /// whose entry reads A/X as `reads` says: a residual kept once and
    /// grown into a tree where its words allow, with the instructions newly
    /// kept for it (0 when it was already known). Refused when it does not
    /// validate or the instruction budget is spent: the caller runs the
    /// whole filter instead, which is exact.
    pub(crate) fn outcome(&mut self, insns: &[Insn], reads: (bool, bool)) -> Result<(Outcome, usize), Refused> {
        if let Some(&o) = self.index.get(insns) {
            return Ok((o, 0));
        }
        let o = self.fresh(insns.to_vec(), reads, 0)?;
        Ok((o, insns.len()))
    }

    /// A residual not seen before: validated, kept, grown.
    fn fresh(&mut self, insns: Vec<Insn>, (reads_a, reads_x): (bool, bool), depth: u32) -> Result<Outcome, Refused> {
        if self.insns_left < insns.len() {
            self.budget_fallbacks += 1;
            return Err(Refused::Budget);
        }
        let program = cbpf::validate(&insns, Mode::Seccomp).map_err(|_| Refused::Invalid)?;
        let i = self.keep(insns.clone(), Residual { program, reads_a, reads_x });
        let o = self.grow(i, depth);
        self.index.insert(insns, o);
        Ok(o)
    }

    /// The tree of residual `i`, or the residual itself.
    fn grow(&mut self, i: usize, depth: u32) -> Outcome {
        let leaf = Outcome::Residual(i);
        if depth >= MAX_TREE_DEPTH {
            return leaf;
        }
        let Some(program) = self.residuals.get(i).map(|r| r.program.clone()) else { return leaf };
        let Some((field, cuts)) = self.choose(&program) else { return leaf };
        let offset = field.offset(LAYOUT_ARCH);
        if cuts.by_bits {
            if !self.affordable(program.len().saturating_mul(cuts.starts.len())) {
                return leaf;
            }
            if !cuts.peel.is_empty() {
                return self.peel(&program, offset, &cuts.peel, depth, i).unwrap_or(leaf);
            }
            return match self.bit_runs(&program, offset, cuts.mask, depth) {
                Some(ranges) => self.switch_of(offset, cuts.mask, ranges, i),
                None => leaf,
            };
        }
        // One fact per run, the run's least value of `word & mask` first.
        let facts: Vec<(u32, KeyFact)> = cuts
            .starts
            .iter()
            .enumerate()
            .filter_map(|(c, &start)| {
                if cuts.partial {
                    // One bit: its two runs, the word still read otherwise.
                    return Some((start, KeyFact::Bits { ones: start & cuts.mask, zeros: cuts.mask & !start }));
                }
                let end = cuts.starts.get(c + 1).map_or(u32::MAX, |&next| next - 1);
                // A run no value of `word & mask` falls in: nothing to decide.
                cuts.representative(start, end).map(|v| (v, KeyFact::Equals(v)))
            })
            .collect();
        let mut spec = Specializer::new(&program);
        let Some(cap) = self.cut_cap(&mut spec, offset, &facts, program.len()) else { return leaf };
        let Some(RunChildren { runs, mut residuals }) = self.run_children(&mut spec, offset, &facts, cap) else {
            return leaf;
        };
        // Each distinct residual kept once, in the order the runs name them.
        let mut outcomes: Vec<Option<Outcome>> = vec![None; residuals.len()];
        let mut ranges: Vec<(u32, Outcome)> = Vec::with_capacity(runs.len());
        for (start, child) in runs {
            let o = match child {
                Ok(o) => o,
                Err(r) => match outcomes.get(r).copied().flatten() {
                    Some(o) => o,
                    None => {
                        let Some(residual) = residuals.get_mut(r).map(std::mem::take) else { return leaf };
                        let Some(o) = self.kept(Err(residual), depth) else { return leaf };
                        if let Some(slot) = outcomes.get_mut(r) {
                            *slot = Some(o);
                        }
                        o
                    }
                },
            };
            if ranges.last().is_none_or(|&(_, last)| last != o) {
                ranges.push((start, o));
            }
        }
        self.switch_of(offset, cuts.mask, ranges, i)
    }

    /// The steps a cut of `program` into the runs of `facts` may spend on
    /// its specialisations, or `None` (counted) where it is not tried. A
    /// specialisation visits at most the program's instructions, so runs
    /// times length that fit the steps left need no cap. Past that bound the
    /// cost is what the specialisations visit, far less where the runs are
    /// settled by the specialiser's binary search over a `jeq` run
    /// (libseccomp's allow-list of 2,000 `ioctl` requests: a few
    /// instructions a run against its 2,000): [`SAMPLED_RUNS`] runs spread
    /// over the word are specialised, and the cut is tried when the
    /// costliest of them times the runs fits half the steps left, capped
    /// there (a sample can mislead; a cut that passes its cap is given up,
    /// leaving the other half to the rest of the forest).
    fn cut_cap(&mut self, spec: &mut Specializer, offset: u32, facts: &[(u32, KeyFact)], len: usize) -> Option<usize> {
        let runs = facts.len();
        if len.saturating_mul(runs) <= self.steps_left {
            return Some(usize::MAX);
        }
        let mut costliest = 0;
        for s in 0..SAMPLED_RUNS.min(runs) {
            let at = s * (runs - 1) / (SAMPLED_RUNS - 1).max(1);
            let (_, fact) = facts.get(at)?;
            let _ = spec.specialize_key(offset, fact);
            costliest = costliest.max(spec.last_work());
            self.charge(spec.last_work());
        }
        let half = self.steps_left / 2;
        if costliest.saturating_mul(runs) > half {
            self.budget_fallbacks += 1;
            return None;
        }
        Some(half)
    }

    /// Every run's specialisation, in order, neighbours with the same child
    /// merged, nothing kept yet (so a cut given up leaves nothing behind)
    /// and each distinct residual held once: `None` where one is refused,
    /// or (counted) once they have visited more than `cap` instructions.
    fn run_children(
        &mut self,
        spec: &mut Specializer,
        offset: u32,
        facts: &[(u32, KeyFact)],
        cap: usize,
    ) -> Option<RunChildren> {
        let mut spent = 0usize;
        let mut found = RunChildren { runs: Vec::new(), residuals: Vec::new() };
        let mut seen: HashMap<Vec<Insn>, usize> = HashMap::new();
        for (start, fact) in facts {
            let child = match self.specialised(spec, offset, fact)? {
                Ok(o) => Ok(o),
                Err((insns, reads)) => Err(match seen.get(&insns) {
                    Some(&r) => r,
                    None => {
                        seen.insert(insns.clone(), found.residuals.len());
                        found.residuals.push((insns, reads));
                        found.residuals.len() - 1
                    }
                }),
            };
            spent = spent.saturating_add(spec.last_work());
            if spent > cap {
                self.budget_fallbacks += 1;
                return None;
            }
            if found.runs.last().is_none_or(|(_, last)| *last != child) {
                found.runs.push((*start, child));
            }
        }
        Some(found)
    }

    /// A child found by a specialisation, kept (and grown a level down)
    /// when it is a residual not seen before; `None` where it is refused.
    fn kept(&mut self, child: Child, depth: u32) -> Option<Outcome> {
        match child {
            Ok(o) => Some(o),
            Err((insns, reads)) => match self.index.get(&insns).copied() {
                Some(o) => Some(o),
                None => self.fresh(insns, reads, depth + 1).ok(),
            },
        }
    }

    /// The child of one run: the program `spec` holds specialised on
    /// `fact`, a constant or a residual kept (and grown) a level down.
    /// `None` where the specialisation or the residual is refused: the
    /// parent stays a leaf.
    fn child(&mut self, spec: &mut Specializer, offset: u32, fact: &KeyFact, depth: u32) -> Option<Outcome> {
        let child = self.specialised(spec, offset, fact)?;
        self.kept(child, depth)
    }

    /// The program `spec` holds specialised on `fact`, its work charged:
    /// a constant, or a residual (not yet kept) with its entry reads;
    /// `None` where the specialiser gives up (the whole filter).
    fn specialised(&mut self, spec: &mut Specializer, offset: u32, fact: &KeyFact) -> Option<Child> {
        let found = match spec.specialize_key(offset, fact) {
            Specialized::Action(a) => Ok(Outcome::Action(a)),
            Specialized::Whole => return None,
            Specialized::Residual(insns) => Err(insns.to_vec()),
        };
        self.charge(spec.last_work());
        Some(found.map_err(|insns| (insns, spec.entry_reads())))
    }

    /// A switch on the whole word for a word whose whole-word `jeq`s stand
    /// beside narrower tests ([`WordCuts::peel`]): each `jeq` constant a
    /// run of its own (the program specialised on that value), every other
    /// value one child, the program specialised on "none of them", which
    /// still tests the narrower masks and grows a switch on their bits a
    /// level down. `peel.len() + 1` specialisations; `None` past the
    /// budget or where one is refused.
    fn peel(&mut self, program: &Program, offset: u32, peel: &[u32], depth: u32, i: usize) -> Option<Outcome> {
        let mut spec = Specializer::new(program);
        if !self.affordable(program.len().saturating_mul(peel.len() + 1)) {
            return None;
        }
        let others = self.child(&mut spec, offset, &KeyFact::NoneOf(peel.to_vec()), depth)?;
        let mut ranges: Vec<(u32, Outcome)> = Vec::with_capacity(2 * peel.len() + 1);
        let mut push = |start: u32, child: Outcome| {
            if ranges.last().is_none_or(|&(_, last)| last != child) {
                ranges.push((start, child));
            }
        };
        let mut gap = Some(0u32);
        for &v in peel {
            if let Some(from) = gap.filter(|&g| g < v) {
                push(from, others);
            }
            push(v, self.child(&mut spec, offset, &KeyFact::Equals(v), depth)?);
            gap = v.checked_add(1);
        }
        if let Some(from) = gap {
            push(from, others);
        }
        Some(self.switch_of(offset, u32::MAX, ranges, i))
    }

    /// The switch of residual `i` on the word at `offset` with these runs
    /// (or their one child).
    fn switch_of(&mut self, offset: u32, mask: u32, ranges: Vec<(u32, Outcome)>, i: usize) -> Outcome {
        match ranges.as_slice() {
            [(_, only)] => *only,
            _ => {
                self.switches.push(Switch { offset, mask, ranges, residual: i });
                Outcome::Switch(self.switches.len() - 1)
            }
        }
    }

    /// The runs of `word & mask` for a word tested with several masks
    /// ([`WordCuts::by_bits`]): the bits of `mask` fixed one at a time from
    /// the top, 0 before 1, until the residual specialised on the bits
    /// fixed so far no longer reads the word; each such set of values is a
    /// run from its least value (the fixed ones), and they come in
    /// ascending order. `None` past [`MAX_BIT_SEARCH`] specialisations or
    /// [`MAX_BIT_RUNS`] runs, or when the budget is spent: the residual
    /// stays a leaf.
    fn bit_runs(&mut self, program: &Program, offset: u32, mask: u32, depth: u32) -> Option<Vec<(u32, Outcome)>> {
        // Children are kept only once the search has succeeded, so a
        // search that gives up leaves nothing behind.
        let mut spec = Specializer::new(program);
        let mut runs: Vec<(u32, Child)> = Vec::new();
        // (known ones, known zeros, bits of the mask not yet fixed); the
        // zero side is pushed last, so it is taken first.
        let mut pending = vec![(0u32, 0u32, mask)];
        let mut searched = 0;
        while let Some((ones, zeros, free)) = pending.pop() {
            searched += 1;
            if searched > MAX_BIT_SEARCH || !self.affordable(program.len()) {
                return None;
            }
            let found: Option<Result<Outcome, Vec<Insn>>> =
                match spec.specialize_key(offset, &KeyFact::Bits { ones, zeros }) {
                    Specialized::Action(a) => Some(Ok(Outcome::Action(a))),
                    Specialized::Whole => return None,
                    Specialized::Residual(insns) if !reads_word(insns, offset) => Some(Err(insns.to_vec())),
                    Specialized::Residual(_) => None,
                };
            self.charge(spec.last_work());
            // The entry reads of the specialisation just made.
            let Some(child) = found.map(|c| c.map_err(|insns| (insns, spec.entry_reads()))) else {
                // Still read: fix the highest free bit (none left means a
                // use of the word the analysis did not see; give up).
                let bit = 1u32.checked_shl(31u32.checked_sub(free.leading_zeros())?)?;
                pending.push((ones | bit, zeros, free & !bit));
                pending.push((ones, zeros | bit, free & !bit));
                continue;
            };
            // Equal programs are one node (hash-consed): neighbours with the
            // same child are one run.
            if runs.last().is_none_or(|(_, last)| *last != child) {
                if runs.len() == MAX_BIT_RUNS {
                    return None;
                }
                runs.push((ones, child));
            }
        }
        let mut ranges: Vec<(u32, Outcome)> = Vec::with_capacity(runs.len());
        for (start, child) in runs {
            let o = self.kept(child, depth)?;
            if ranges.last().is_none_or(|&(_, last)| last != o) {
                ranges.push((start, o));
            }
        }
        Some(ranges)
    }

    /// The word to switch on first: of the words the program loads (not
    /// `nr` nor `arch`) whose uses are all masked comparisons with
    /// constants, the one it tests first.
    fn choose(&mut self, program: &Program) -> Option<(Field, WordCuts)> {
        let mut loaded: Vec<Field> = program
            .insns()
            .iter()
            .filter_map(|insn| match insn.op() {
                Some(Op::LdxAbsSeccomp { k }) => Field::from_offset(k, LAYOUT_ARCH),
                _ => None,
            })
            .filter(|f| !matches!(f, Field::Nr | Field::Arch))
            .collect();
        loaded.sort_unstable();
        loaded.dedup();
        if loaded.is_empty() || !self.affordable(program.len().saturating_mul(loaded.len())) {
            return None;
        }
        self.charge(program.len().saturating_mul(loaded.len()));
        let mut analyzer = Analyzer::new(program).ok()?;
        loaded
            .into_iter()
            .filter_map(|f| Some((f, analyzer.word_cuts(None, f).ok()??)))
            .filter(|(_, cuts)| cuts.starts.len() > 1 || cuts.by_bits)
            .min_by_key(|(f, cuts)| (cuts.first_test, f.index()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    /// `args[0].lo` against 350 constants `10 * i` (701 runs), each sending
    /// a run to a 1,000-instruction tail on `args[1].lo`; the values between
    /// them, among them every one [`Forest::cut_cap`] samples (every
    /// `2 * 350 / 7`-th run), end at once.
    fn misleading() -> Vec<Insn> {
        let mut text = String::from("ld [16]\n");
        for (b, block) in (1..=350u32).collect::<Vec<_>>().chunks(200).enumerate() {
            text.extend(block.iter().map(|i| format!("jeq #{}, t{b}\n", 10 * i)));
            text.push_str(&format!("ja n{b}\nt{b}: ja tail\nn{b}: "));
        }
        text += "ret #0x50001\ntail: ld [24]\n";
        text += &"add #1\n".repeat(1000);
        text += "ret a\n";
        cbpf::text::parse_auto(text.as_bytes()).unwrap().1
    }

    /// Past the plain bound (runs times length), a cut whose sample says it
    /// is cheap is tried under a cap of half the steps left; when the runs
    /// cost more (350 tails of 1,000 instructions) it is given up, counted,
    /// and leaves nothing behind: the program stays one residual leaf.
    /// Within the plain bound the same program is a switch.
    #[test]
    fn a_cut_whose_sample_misleads_is_given_up_leaving_nothing_behind() {
        let insns = misleading();
        let runs = 2 * 350 + 1;
        assert!(insns.len() * runs > 400_000);
        let mut forest = Forest::new(400_000, 1_000_000);
        let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
        assert_eq!(o, Outcome::Residual(0));
        assert_eq!((forest.residuals.len(), forest.switches.len(), forest.budget_fallbacks), (1, 0, 1));
        assert!(forest.steps_left < 400_000 / 2, "{}", forest.steps_left);
        let mut forest = Forest::new(insns.len() * runs + 100_000, 1_000_000);
        let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
        assert_eq!(o, Outcome::Switch(0));
        assert_eq!(forest.switches[0].ranges.len(), runs);
    }

    /// A user-form program from bpf_asm text.
    fn program(text: &str) -> Vec<Insn> {
        cbpf::text::parse_auto(text.as_bytes()).unwrap().1
    }

    /// `args[0].lo == 5`: ALLOW, else KILL (a switch of constants).
    const ONE_TEST: &str = "ld [16]\njeq #5, hit\nret #0\nhit: ret #0x7fff0000\n";

    /// The instruction budget admits a residual of exactly its size and
    /// refuses a longer one, counted, keeping nothing; the step budget, too
    /// small to choose a word, leaves the residual a leaf, counted, having
    /// charged nothing.
    #[test]
    fn budgets_admit_what_fits_and_count_each_refusal() {
        let insns = program(ONE_TEST);
        let mut forest = Forest::new(1_000_000, insns.len());
        assert_eq!(forest.outcome(&insns, (false, false)).map(|(o, _)| o), Ok(Outcome::Switch(0)));
        assert_eq!(forest.budget_fallbacks, 0);
        let mut forest = Forest::new(1_000_000, insns.len() - 1);
        assert_eq!(forest.outcome(&insns, (false, false)), Err(Refused::Budget));
        assert_eq!((forest.residuals.len(), forest.budget_fallbacks), (0, 1));
        // Too few steps to choose a word (one loaded word: the program's
        // length): refused before anything is charged.
        let mut forest = Forest::new(insns.len() - 1, 1_000_000);
        assert_eq!(forest.outcome(&insns, (false, false)).map(|(o, _)| o), Ok(Outcome::Residual(0)));
        assert_eq!((forest.switches.len(), forest.budget_fallbacks, forest.steps_left), (0, 1, insns.len() - 1));
    }

    /// Masked tests of `args[0].lo` with two masks (`jset #6`, `& 1`) and
    /// no single bit: switched by fixing bits, where a child that reads
    /// only `args[1].lo` is a child (it no longer reads the word); and
    /// with a single-bit `jset` (`#4`, the runs of that bit, the word still
    /// read, each run knowing its bit as one or zero): both trees, and
    /// every answer the classic interpreter's.
    #[test]
    fn words_tested_with_several_masks_are_trees_with_the_interpreters_answers() {
        for first in ["jset #6, out", "jset #4, out"] {
            let text = format!(
                "ld [16]\n{first}\nld [16]\nand #1\njeq #1, chk\nret #0x7fff0000\n\
                 chk: ld [24]\njeq #9, pass\nout: ret #0\npass: ret #0x50001\n"
            );
            let insns = program(&text);
            let mut forest = Forest::new(1_000_000, 1_000_000);
            let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
            assert!(matches!(o, Outcome::Switch(_)), "{first}: {o:?}");
            // Each run knows its bits: no child is the switch's own program.
            for sw in &forest.switches {
                assert!(sw.ranges.iter().all(|&(_, c)| c != Outcome::Residual(sw.residual)), "{first}: {sw:?}");
            }
            let prog = cbpf::validate(&insns, Mode::Seccomp).unwrap();
            let (fast, interp) = (super::super::FastFilter::build(&prog).unwrap(), cbpf::Interp::new(&prog));
            for a0 in 0..16u64 {
                for a1 in [8, 9, 10] {
                    let data = cbpf::SeccompData {
                        nr: 1,
                        arch: AUDIT_ARCH_X86_64,
                        args: [a0, a1, 0, 0, 0, 0],
                        ..Default::default()
                    };
                    let want = interp.run_seccomp(&data.to_bytes()).unwrap();
                    assert_eq!(fast.eval(&data), want, "{first}: args {a0} {a1}");
                }
            }
        }
    }

    /// The sample is spread over the word: where only the runs at its top
    /// are costly (the 350 constants `10 * i` end at once, every other
    /// value above 2,000 runs a 1,000-instruction tail), the samples at its
    /// top find them and the cut is given up before it is tried, counted,
    /// having spent only the samples.
    #[test]
    fn a_cut_costly_only_at_the_top_of_the_word_is_priced_by_the_sample() {
        let mut text = String::from("ld [16]\n");
        for (b, block) in (1..=350u32).collect::<Vec<_>>().chunks(200).enumerate() {
            text.extend(block.iter().map(|i| format!("jeq #{}, t{b}\n", 10 * i)));
            text.push_str(&format!("ja n{b}\nt{b}: ret #0\nn{b}: "));
        }
        text += "jgt #2000, tail\nret #0x50001\ntail: ld [24]\n";
        text += &"add #1\n".repeat(1000);
        text += "ret a\n";
        let insns = program(&text);
        let mut forest = Forest::new(400_000, 1_000_000);
        let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
        assert_eq!(o, Outcome::Residual(0));
        assert_eq!(forest.budget_fallbacks, 1);
        assert!(forest.steps_left > 400_000 / 2, "{}", forest.steps_left);
    }

    /// The deepest path below `o`, in switches.
    fn depth(forest: &Forest, o: Outcome) -> u32 {
        match o {
            Outcome::Switch(j) => {
                1 + forest.switches[j].ranges.iter().map(|&(_, c)| depth(forest, c)).max().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// Sixteen single-bit `jset`s of one word, each a level of its own (the
    /// runs of one bit, the word still read): the tree stops
    /// [`MAX_TREE_DEPTH`] levels down, a residual leaf below.
    #[test]
    fn trees_stop_at_the_depth_bound() {
        let mut text = String::from("ld [16]\n");
        for b in 0..16 {
            text += &format!("jset #{:#x}, out\n", 1u32 << b);
        }
        text += "ld [24]\nand #3\njeq #1, out\nret #0x7fff0000\nout: ret #0\n";
        let insns = program(&text);
        let mut forest = Forest::new(10_000_000, 10_000_000);
        let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
        assert_eq!(depth(&forest, o), MAX_TREE_DEPTH);
    }

    /// A word whose runs all lead to the same residual is no switch: the
    /// run's child stands in its place (here every way through the masked
    /// tests of `args[0]` goes on to the same test of `args[1]`, one switch
    /// on it).
    #[test]
    fn a_switch_of_one_child_is_that_child() {
        let tail = |l: &str| format!("ld [24]\njeq #1, p{l}\nret #0\np{l}: ret #0x7fff0000\n");
        let text = format!(
            "ld [16]\njset #6, lx\nld [16]\nand #1\njeq #1, ly\n{}lx: {}ly: {}",
            tail("a"),
            tail("b"),
            tail("c")
        );
        let insns = program(&text);
        let mut forest = Forest::new(1_000_000, 1_000_000);
        let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
        assert_eq!(o, Outcome::Switch(0));
        assert_eq!(forest.switches.iter().map(|s| s.offset).collect::<Vec<_>>(), [24]);
    }

    /// A word switched by fixing bits (`jset #6` and `& 1`), and one whose
    /// whole-word `jeq` is peeled beside a narrower test: given the steps
    /// to choose the word and grow (one loaded word: the program's length
    /// each) but short of the bit search's second specialisation or of the
    /// peel's `peel.len() + 1`, each stays a residual leaf, counted; with
    /// enough, a switch.
    #[test]
    fn the_bit_search_and_the_peel_keep_to_the_step_budget() {
        let bits = "ld [16]\njset #6, out\nld [16]\nand #1\njeq #1, out\nret #0x7fff0000\nout: ret #0\n";
        let peel = "ld [16]\njeq #0x3d0f00, pass\nld [16]\nand #0x100\njeq #0x100, out\nret #0x7fff0000\n\
                    out: ret #0\npass: ret #0x50001\n";
        // The bit search: the length to choose, the length to grow, then its
        // first specialisation charged, its second refused. The peel: the
        // length to choose and to grow, one short of twice it to peel.
        for (text, lengths, less) in [(bits, 2, 0), (peel, 3, 1)] {
            let insns = program(text);
            let mut forest = Forest::new(lengths * insns.len() - less, 1_000_000);
            let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
            assert_eq!((o, forest.switches.len(), forest.budget_fallbacks), (Outcome::Residual(0), 0, 1), "{text}");
            let mut forest = Forest::new(1_000_000, 1_000_000);
            let (o, _) = forest.outcome(&insns, (false, false)).unwrap();
            assert!(matches!(o, Outcome::Switch(_)), "{text}: {o:?}");
        }
    }
}
