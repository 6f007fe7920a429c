//! Equivalence of seccomp filters: do two filters (or two stacks of
//! filters, combined with the kernel's precedence) return the same value for
//! every `struct seccomp_data` — every bit of `nr`, `arch`, the instruction
//! pointer and the six arguments?
//!
//! [`check`] answers [`Verdict::Equal`] only when that is proved, and
//! [`Verdict::Differ`] only with an input that tells the two sides apart,
//! re-run on both by the classic interpreter. When a [`Limits`] bound
//! strikes first it returns [`EquivError::Budget`]: undecided, never a guess.
//!
//! # How
//! 1. **Classes of (arch, nr).** Every filter of both sides says how it
//!    tests `arch` and, per arch, `nr` ([`seccomp::analysis::Analyzer::field_classes`]):
//!    when a field reaches nothing but `jeq`/`jgt`/`jge` with constants
//!    (or a `jset` of high bits), the tests cut its 2^32 values into runs
//!    on which every filter behaves alike, and one representative per run
//!    stands for it ([`seccomp::analysis::NrClasses::joint_representatives`]).
//!    A field that reaches arithmetic, a return or a `jset` of low bits
//!    stays symbolic (one class, decided over all its values).
//! 2. **Partial evaluation.** Each filter is specialised for the class
//!    ([`seccomp::fast::Partial`], the fast engine's specialiser): a
//!    constant or a residual program. Two constant sides are compared
//!    directly; identical residuals are equal without more work.
//! 3. **Argument words cut into runs.** Where every residual that reads
//!    an argument word (or an instruction pointer half) compares only
//!    `word & mask` with constants, one mask for all, the word is cut as
//!    `nr` is: the union of the residuals' run starts
//!    ([`seccomp::analysis::WordCuts`]), each run decided by one value
//!    (every residual specialised on it, [`Partial::specialize_word`]), a
//!    word at a time, identical problems once (module `class`). A cut
//!    past [`Limits::max_word_runs`] is not made; one whose runs times the
//!    programs' lengths pass half the steps left is made only where a few
//!    sampled runs price it within that half, and gives up there.
//! 4. **Bit-blasting.** Otherwise both sides become one circuit
//!    (module `blast`, an and-inverter graph with structural hashing,
//!    module `aig`), stacks combined as the kernel does, and a miter (some
//!    compared bit differs) goes to a SAT solver (module `sat`). No
//!    model: equal on the class. A model: its words, with the words the
//!    class fixed (arch, nr, the argument words cut), are re-run on both
//!    sides by [`cbpf::Interp`] and reported only when the two results
//!    differ there too.
//!
//! Every loop is bounded by [`Limits`]: specialisation and blasting steps,
//! solver conflicts, and clauses (circuit nodes) per solver call.

mod aig;
mod blast;
mod class;
mod sat;
#[cfg(test)]
mod tests;

use std::rc::Rc;

use cbpf::{Interp, Mode, Program, SeccompData};
use seccomp::analysis::{Analyzer, Field, NrClasses};
use seccomp::fast::{Partial, PartialResult};

use class::{constants, Decider, Fixed, Piece};

/// One side of a comparison: a stack of validated seccomp filters, newest
/// first (the kernel's list order, as [`seccomp::stack`] takes them). One
/// filter is a stack of one.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    newest_first: &'a [Program],
}

impl<'a> Side<'a> {
    /// A single filter.
    pub fn single(filter: &'a Program) -> Side<'a> {
        Side { newest_first: std::slice::from_ref(filter) }
    }

    /// A stack, newest first. Every filter must have been validated in
    /// seccomp mode, and the stack must not be empty.
    pub fn stack(newest_first: &'a [Program]) -> Result<Side<'a>, EquivError> {
        if newest_first.is_empty() {
            return Err(EquivError::EmptyStack);
        }
        for (index, p) in newest_first.iter().enumerate() {
            if p.mode() != Mode::Seccomp {
                return Err(EquivError::NotSeccomp { index, mode: p.mode() });
            }
        }
        Ok(Side { newest_first })
    }

    /// The filters, newest first.
    pub fn filters(&self) -> &'a [Program] {
        self.newest_first
    }
}

/// What "the same" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compare {
    /// The full 32-bit return value (action and data).
    #[default]
    Value,
    /// The action only (`SECCOMP_RET_ACTION_FULL`), data ignored.
    Action,
}

/// Bounds on the work of one [`check`] (time and memory on hostile input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Abstract steps over the whole check: each scan of the filters for
    /// a field's classes costs their total length (one scan for `arch`,
    /// one per arch class for `nr`), each filter's specialisation for a
    /// class one plus the instructions it visited, each argument cut its
    /// programs' lengths (read once, then once per word by each program
    /// reading it; the specialiser of each reader built) and one plus the
    /// instructions visited per specialisation of a run, and each blasted
    /// program one per reachable instruction. A check that spends exactly
    /// this many still answers.
    pub max_steps: u64,
    /// Solver conflicts over the whole check; each solver call is also
    /// held to 32 propagations per allowed conflict (checked every 64
    /// conflicts), which bounds its time when single conflicts get costly.
    pub max_conflicts: u64,
    /// Clauses held by the solver at once (memory).
    pub max_clauses: u64,
    /// Most runs the argument words cut within one class of (arch, nr)
    /// may multiply to along one path (module `class`); a word whose cut
    /// would pass it stays an input of the solver. 0: every class goes to
    /// the solver whole. The default, 2^15, holds a 64-bit argument cut
    /// whole: its high half's runs (libseccomp tests it against 0: 2) times
    /// its low half's (up to 8,193 for the 4,096 constants a filter can
    /// compare). The steps bound what the runs cost.
    pub max_word_runs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_steps: 1 << 24, max_conflicts: 1 << 18, max_clauses: 1 << 23, max_word_runs: 1 << 15 }
    }
}

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    pub compare: Compare,
    /// Find one counterexample per differing class instead of stopping at
    /// the first.
    pub all: bool,
    pub limits: Limits,
}

/// An input the two sides answer differently, with both answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counterexample {
    pub data: SeccompData,
    /// What the left side returns for `data`.
    pub left: u32,
    /// What the right side returns for `data`.
    pub right: u32,
}

/// The answer of [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Proved: the same result for every input.
    Equal,
    /// At least one input tells the sides apart (never empty).
    Differ(Vec<Counterexample>),
}

/// Which [`Limits`] bound struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetKind {
    Steps,
    Conflicts,
    Clauses,
    /// The solver's propagations, allowed in proportion to `max_conflicts`.
    Propagations,
}

impl BudgetKind {
    /// The `bpfconv equiv` flag that raises this bound.
    pub fn flag(self) -> &'static str {
        match self {
            BudgetKind::Steps => "--max-steps",
            BudgetKind::Conflicts | BudgetKind::Propagations => "--max-conflicts",
            BudgetKind::Clauses => "--max-clauses",
        }
    }
}

impl std::fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BudgetKind::Steps => "abstract steps",
            BudgetKind::Conflicts => "solver conflicts",
            BudgetKind::Clauses => "solver clauses",
            BudgetKind::Propagations => "solver propagations",
        })
    }
}

/// Why [`check`] gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EquivError {
    /// A stack with no filter.
    #[error("a filter stack must hold at least one filter")]
    EmptyStack,
    /// Filter `index` of a stack (newest first) is not a seccomp filter.
    #[error("filter {index} was validated in {mode} mode; equivalence needs seccomp filters")]
    NotSeccomp { index: usize, mode: Mode },
    /// Undecided: a [`Limits`] bound struck before a verdict.
    #[error("undecided: more than {limit} {kind}")]
    Budget { kind: BudgetKind, limit: u64 },
    /// Filter `index` (left side first, each newest first) holds an
    /// instruction the circuit does not model (never in a validated seccomp
    /// filter).
    #[error("filter {index}: instruction {pc} cannot be modelled")]
    Unsupported { index: usize, pc: usize },
    /// The solver's input did not tell the sides apart on the classic
    /// interpreter: a bug of this crate, reported rather than printed as a
    /// counterexample.
    #[error("internal error: the solver's counterexample {data:?} gives {left:#010x} on both sides")]
    Unconfirmed { data: SeccompData, left: u32 },
}

/// What one [`check`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// (arch, nr) classes examined.
    pub classes: u64,
    /// Classes both sides answer with a constant.
    pub constant_classes: u64,
    /// SAT problems solved (identical problems are asked once).
    pub solver_calls: u64,
    /// Solver conflicts over all calls.
    pub conflicts: u64,
    /// Clauses given to the solver over all calls.
    pub clauses: u64,
    /// Abstract steps spent (classes, specialisation, blasting).
    pub steps: u64,
    /// True when `arch` stayed symbolic (no classes).
    pub symbolic_arch: bool,
    /// Arch classes in which `nr` stayed symbolic.
    pub symbolic_nr: u64,
    /// Runs of argument words decided within the classes (module
    /// `class`): each a specialisation of the pieces that read the word.
    pub word_runs: u64,
}

/// Decides whether `left` and `right` agree on every input.
pub fn check(left: Side<'_>, right: Side<'_>, options: &Options) -> Result<Verdict, EquivError> {
    check_with_stats(left, right, options).map(|(v, _)| v)
}

/// Why [`prove`] did not show two sides equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotProved {
    /// The first input [`check`] found that tells the sides apart.
    Differ(Counterexample),
    /// No verdict: [`check`]'s error.
    Undecided(EquivError),
}

/// [`check`] for a caller that must have equality (a filter it wrote
/// against the one it was written from): `Ok` only when proved, else the
/// first counterexample or why there was no verdict.
pub fn prove(left: Side<'_>, right: Side<'_>, options: &Options) -> Result<(), NotProved> {
    match check(left, right, options) {
        Ok(Verdict::Equal) => Ok(()),
        Ok(Verdict::Differ(found)) => Err(match found.first() {
            Some(&c) => NotProved::Differ(c),
            // `Differ` is never empty; were it, that is no verdict.
            None => {
                NotProved::Undecided(EquivError::Budget { kind: BudgetKind::Steps, limit: options.limits.max_steps })
            }
        }),
        Err(e) => Err(NotProved::Undecided(e)),
    }
}

/// The bits [`Compare`] looks at.
fn mask(compare: Compare) -> u32 {
    match compare {
        Compare::Value => u32::MAX,
        Compare::Action => seccomp::action::SECCOMP_RET_ACTION_FULL,
    }
}

/// Whether results `l` and `r` differ in the bits `mask` compares.
fn differs(l: u32, r: u32, mask: u32) -> bool {
    (l ^ r) & mask != 0
}

/// What one side returns for `data` on the classic interpreter: a lone
/// filter's own value, a stack's combined as `seccomp_run_filters()` does
/// ([`seccomp::stack::combine`]). Compiles the side's interpreters for this
/// one input; [`SideRunner`] keeps them for many.
pub fn side_value(side: Side<'_>, data: &SeccompData) -> u32 {
    SideRunner::new(side).value(data)
}

/// One side's filters compiled once for the classic interpreter, to run
/// many inputs: a check confirms each of its counterexamples on both sides,
/// and compiling a 1000-instruction filter costs far more than running it.
#[derive(Debug, Clone)]
pub struct SideRunner {
    newest_first: Vec<Interp>,
}

impl SideRunner {
    /// Compiles every filter of `side`.
    pub fn new(side: Side<'_>) -> SideRunner {
        SideRunner { newest_first: side.filters().iter().map(Interp::new).collect() }
    }

    /// What the side returns for `data`: see [`side_value`].
    pub fn value(&self, data: &SeccompData) -> u32 {
        let bytes = data.to_bytes();
        let run = |i: &Interp| i.run_seccomp(&bytes).unwrap_or(seccomp::action::SECCOMP_RET_KILL_PROCESS);
        match self.newest_first.as_slice() {
            [one] => run(one),
            many => seccomp::stack::combine(many.iter().map(run)),
        }
    }
}

/// The run's budget.
struct Spend<'a> {
    limits: &'a Limits,
    stats: Stats,
    /// The step count past which the cut being decided gives up (the
    /// innermost priced cut's, `class::Cut`; `u64::MAX` outside one).
    ceiling: u64,
}

impl<'a> Spend<'a> {
    fn new(limits: &'a Limits) -> Spend<'a> {
        Spend { limits, stats: Stats::default(), ceiling: u64::MAX }
    }

    /// Steps left before [`Limits::max_steps`] strikes.
    fn left(&self) -> u64 {
        self.limits.max_steps.saturating_sub(self.stats.steps)
    }

    /// Steps left before the budget or the ceiling of the cut being decided.
    fn room(&self) -> u64 {
        self.left().min(self.ceiling.saturating_sub(self.stats.steps))
    }

    fn steps(&mut self, n: u64) -> Result<(), EquivError> {
        self.stats.steps = self.stats.steps.saturating_add(n);
        if self.stats.steps > self.limits.max_steps {
            return Err(EquivError::Budget { kind: BudgetKind::Steps, limit: self.limits.max_steps });
        }
        Ok(())
    }
}

/// [`check`], with what it did.
pub fn check_with_stats(left: Side<'_>, right: Side<'_>, options: &Options) -> Result<(Verdict, Stats), EquivError> {
    let filters: Vec<&Program> = left.filters().iter().chain(right.filters()).collect();
    let n_left = left.filters().len();
    for (index, p) in filters.iter().enumerate() {
        if p.mode() != Mode::Seccomp {
            return Err(EquivError::NotSeccomp { index, mode: p.mode() });
        }
    }
    let mut spend = Spend::new(&options.limits);
    let unlimited = || seccomp::analysis::Budget::new(u64::MAX, u64::MAX, u64::MAX);
    let mut analyzers = Vec::with_capacity(filters.len());
    let mut partials = Vec::with_capacity(filters.len());
    for p in &filters {
        analyzers.push(
            Analyzer::with_budget(p, unlimited()).map_err(|_| EquivError::NotSeccomp { index: 0, mode: p.mode() })?,
        );
        partials.push(Partial::new(p).map_err(|_| EquivError::NotSeccomp { index: 0, mode: p.mode() })?);
    }
    let total_len: u64 = filters.iter().map(|p| p.len() as u64).sum();
    // A class the specialiser cannot shorten is the whole filter, shared.
    let wholes: Vec<Rc<Program>> = filters.iter().map(|&p| Rc::new(p.clone())).collect();
    let mut classes_of =
        |arch: Option<u32>, field: Field, spend: &mut Spend<'_>| -> Result<Option<Vec<u32>>, EquivError> {
            spend.steps(total_len)?;
            let mut all = Vec::with_capacity(analyzers.len());
            for a in analyzers.iter_mut() {
                all.push(a.field_classes(arch, field).unwrap_or(NrClasses::Unclassified));
            }
            Ok(NrClasses::joint_representatives(&all))
        };
    let arch_reps = classes_of(None, Field::Arch, &mut spend)?;
    spend.stats.symbolic_arch = arch_reps.is_none();
    let arches: Vec<Option<u32>> = match arch_reps {
        Some(reps) => reps.into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mask = mask(options.compare);
    let mut found: Vec<Counterexample> = Vec::new();
    // Compiled at the first counterexample: an equal pair never pays for it.
    let mut confirm: Option<(SideRunner, SideRunner)> = None;
    let mut decider = Decider::new(n_left, mask);
    for arch in arches {
        let nr_reps = classes_of(arch, Field::Nr, &mut spend)?;
        if nr_reps.is_none() {
            spend.stats.symbolic_nr += 1;
        }
        let nrs: Vec<Option<u32>> = match nr_reps {
            Some(reps) => reps.into_iter().map(Some).collect(),
            None => vec![None],
        };
        for nr in nrs {
            spend.stats.classes += 1;
            let mut pieces = Vec::with_capacity(filters.len());
            for (whole, partial) in wholes.iter().zip(partials.iter_mut()) {
                let piece = match partial.specialize(arch, nr) {
                    PartialResult::Constant(v) => Piece::Const(v),
                    PartialResult::Residual(r) => Piece::Prog(Rc::new(r)),
                    PartialResult::Whole => Piece::Prog(Rc::clone(whole)),
                };
                spend.steps(partial.last_work() as u64 + 1)?;
                pieces.push(piece);
            }
            let (lp, rp) = pieces.split_at(n_left);
            let witness = if lp == rp {
                None
            } else if let (Some(l), Some(r)) = (constants(lp), constants(rp)) {
                spend.stats.constant_classes += 1;
                differs(l, r, mask).then_some([0u32; 16])
            } else {
                let mut fixed: Fixed = [None; 16];
                (fixed[0], fixed[1]) = (nr, arch);
                decider.decide(pieces, fixed, 1, &mut spend)?
            };
            let Some(mut words) = witness else { continue };
            let [n, a, ..] = &mut words;
            *n = nr.unwrap_or(*n);
            *a = arch.unwrap_or(*a);
            let data = SeccompData::from_words(&words);
            let runners = confirm.get_or_insert_with(|| (SideRunner::new(left), SideRunner::new(right)));
            let (l, r) = (runners.0.value(&data), runners.1.value(&data));
            if !differs(l, r, mask) {
                return Err(EquivError::Unconfirmed { data, left: l });
            }
            found.push(Counterexample { data, left: l, right: r });
            if !options.all {
                return Ok((Verdict::Differ(found), spend.stats));
            }
        }
    }
    let verdict = if found.is_empty() { Verdict::Equal } else { Verdict::Differ(found) };
    Ok((verdict, spend.stats))
}

/// Blasts one class's pieces and asks the solver for an input on which
/// the sides' compared bits differ.
fn solve(
    pieces: &[Piece],
    n_left: usize,
    fixed: &Fixed,
    mask: u32,
    spend: &mut Spend<'_>,
) -> Result<Option<[u32; 16]>, EquivError> {
    let limits = *spend.limits;
    let max_nodes = usize::try_from(limits.max_clauses / 3).unwrap_or(usize::MAX).max(2);
    let mut graph = aig::Aig::new(max_nodes);
    let words = blast::Words { fixed: *fixed };
    let mut values = Vec::with_capacity(pieces.len());
    for (index, piece) in pieces.iter().enumerate() {
        let v = match piece {
            Piece::Const(v) => aig::konst(*v),
            Piece::Prog(p) => {
                let mut steps = 0u64;
                let v = blast::blast(&mut graph, p.insns(), &words, &mut steps)
                    .map_err(|e| EquivError::Unsupported { index, pc: e.pc })?;
                spend.steps(steps)?;
                v
            }
        };
        if graph.overflowed() {
            return Err(EquivError::Budget { kind: BudgetKind::Clauses, limit: limits.max_clauses });
        }
        values.push(v);
    }
    let (lv, rv) = values.split_at(n_left);
    let l = blast::combine(&mut graph, lv);
    let r = blast::combine(&mut graph, rv);
    let mut differ = aig::FALSE;
    for (i, (&x, &y)) in l.iter().zip(&r).enumerate() {
        if mask >> i & 1 == 1 {
            let d = graph.xor(x, y);
            differ = graph.or(differ, d);
        }
    }
    if graph.overflowed() {
        return Err(EquivError::Budget { kind: BudgetKind::Clauses, limit: limits.max_clauses });
    }
    let left_conflicts = limits.max_conflicts.saturating_sub(spend.stats.conflicts);
    spend.stats.solver_calls += 1;
    let (answer, spent) = sat::solve(&graph, differ, left_conflicts, limits.max_clauses);
    spend.stats.conflicts = spend.stats.conflicts.saturating_add(spent.conflicts);
    spend.stats.clauses = spend.stats.clauses.saturating_add(spent.clauses);
    match answer {
        sat::Answer::Unsat => Ok(None),
        sat::Answer::Sat(words) => Ok(Some(words)),
        sat::Answer::OutOfConflicts => {
            Err(EquivError::Budget { kind: BudgetKind::Conflicts, limit: limits.max_conflicts })
        }
        sat::Answer::OutOfPropagations => Err(EquivError::Budget {
            kind: BudgetKind::Propagations,
            limit: limits.max_conflicts.saturating_mul(sat::PROPAGATIONS_PER_CONFLICT),
        }),
        sat::Answer::OutOfClauses => Err(EquivError::Budget { kind: BudgetKind::Clauses, limit: limits.max_clauses }),
    }
}
