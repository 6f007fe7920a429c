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
        if !self.affordable(program.len().saturating_mul(cuts.starts.len())) {
            return leaf;
        }
        let offset = field.offset(LAYOUT_ARCH);
        if cuts.by_bits && !cuts.peel.is_empty() {
            return self.peel(&program, offset, &cuts.peel, depth, i).unwrap_or(leaf);
        }
        if cuts.by_bits {
            return match self.bit_runs(&program, offset, cuts.mask, depth) {
                Some(ranges) => self.switch_of(offset, cuts.mask, ranges, i),
                None => leaf,
            };
        }
        let mut spec = Specializer::new(&program);
        let mut ranges: Vec<(u32, Outcome)> = Vec::with_capacity(cuts.starts.len());
        for (c, &start) in cuts.starts.iter().enumerate() {
            let end = cuts.starts.get(c + 1).map_or(u32::MAX, |&next| next - 1);
            // The run's least value of `word & mask` starts it.
            let (start, fact) = if cuts.partial {
                // One bit: its two runs, the word still read otherwise.
                (start, KeyFact::Bits { ones: start & cuts.mask, zeros: cuts.mask & !start })
            } else {
                // A run no value of `word & mask` falls in: nothing to decide.
                let Some(v) = cuts.representative(start, end) else { continue };
                (v, KeyFact::Equals(v))
            };
            let Some(child) = self.child(&mut spec, offset, &fact, depth) else { return leaf };
            if ranges.last().is_none_or(|&(_, last)| last != child) {
                ranges.push((start, child));
            }
        }
        self.switch_of(offset, cuts.mask, ranges, i)
    }

    /// The child of one run: the program `spec` holds specialised on
    /// `fact`, a constant or a residual kept (and grown) a level down.
    /// `None` where the specialisation or the residual is refused: the
    /// parent stays a leaf.
    fn child(&mut self, spec: &mut Specializer, offset: u32, fact: &KeyFact, depth: u32) -> Option<Outcome> {
        let sub = match spec.specialize_key(offset, fact) {
            Specialized::Action(a) => Ok(Outcome::Action(a)),
            Specialized::Whole => return None,
            Specialized::Residual(insns) => Err(insns.to_vec()),
        };
        self.charge(spec.last_work());
        match sub {
            Ok(o) => Some(o),
            Err(insns) => match self.index.get(&insns).copied() {
                Some(o) => Some(o),
                None => self.fresh(insns, spec.entry_reads(), depth + 1).ok(),
            },
        }
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
        // A run's child before it is kept: a constant, or a residual with
        // its entry reads. Children are kept only once the search has
        // succeeded, so a search that gives up leaves nothing behind.
        type Child = Result<Outcome, (Vec<Insn>, (bool, bool))>;
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
            let o = match child {
                Ok(o) => o,
                Err((insns, reads)) => match self.index.get(&insns).copied() {
                    Some(o) => o,
                    None => self.fresh(insns, reads, depth + 1).ok()?,
                },
            };
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
