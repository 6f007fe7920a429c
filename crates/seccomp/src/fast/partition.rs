//! A filter's answer as a partition of (arch, nr): per arch the filter
//! names, the syscall numbers `0..=u32::MAX` cut into maximal ranges with
//! one outcome each (a constant action or a residual program, identical
//! residuals shared), and one outcome for every other arch.
//!
//! This is the [`FastFilter`](super::FastFilter)'s specialisation laid out
//! for a code generator (`bpfconv optimize` builds a dispatch tree over the
//! ranges) instead of a lookup table:
//!
//! - the arches are the constants the filter compares `arch` with, in the
//!   order the filter first compares them; arches it does not name get the
//!   filter specialised on "`arch` is none of those" ([`KeyFact::NoneOf`]);
//!   a filter that never loads `arch` has one partition for every arch;
//! - per arch, when every use of `nr` is a comparison with a constant (a
//!   `jset` of high bits only: [`crate::analysis::NrClasses::representatives`],
//!   from [`Analyzer::field_classes`]), the numbers are cut at those
//!   representatives (where a run begins: 0, a compared constant or the
//!   number above it) and each run is specialised once, on its first number:
//!   numbers of one run take the same side of every test, so the filter
//!   gives them the same answer. Otherwise every
//!   number of the arch's syscall table and every number compared is
//!   specialised on its own and all other numbers run the filter
//!   specialised on the arch alone (exact, as the fast engine does);
//! - neighbouring ranges with the same outcome are merged;
//! - a residual whose argument checks compare words with constants is
//!   grown into a tree ([`super::tree`]): [`Outcome::Switch`] names the
//!   root, [`Partition::switches`] holds every switch, and each still
//!   names the residual it stands for. A partition made elsewhere (`policy`'s
//!   compiler writes one from a profile) grows the same trees with
//!   [`Partition::grow_trees`].
//!
//! A residual is a classic program from the filter's start with `arch`
//! (and `nr`) known: it reloads what it reads from `struct seccomp_data`,
//! never assumes `nr` or `arch` in a register, and its scratch words are
//! written before they are read (it passed [`cbpf::validate()`]). It may rely
//! on A and X being 0 at its entry, as at a filter's start:
//! [`Residual::reads_a`] and [`Residual::reads_x`] say so.

use cbpf::{Mode, Op, Program};

pub use super::outcome::{Outcome, Residual};
use super::specialize::{KeyFact, Specialized, Specializer};
use super::tree::{Forest, Switch};
use crate::analysis::{AnalysisError, Analyzer, Budget};
use crate::data::{OFFSET_ARCH, OFFSET_NR};
use crate::domain::Field;

/// The ranges of one arch: `(first nr, outcome)`, ascending, the first
/// starting at 0, each running to the next one's start (the last to
/// `u32::MAX`); neighbours differ.
pub type Ranges = Vec<(u32, Outcome)>;

/// How the numbers of an arch were cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// At the constants `nr` is compared with (every range specialised).
    Classes,
    /// One range per syscall-table number and per compared number; the
    /// rest run the filter specialised on the arch alone.
    Table,
}

/// The partition of one arch the filter names.
#[derive(Debug, Clone)]
pub struct ArchPartition {
    /// The AUDIT_ARCH value.
    pub arch: u32,
    pub ranges: Ranges,
    pub cut: Cut,
}

/// Why a partition was not built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartitionError {
    /// The program was validated as a socket filter.
    #[error("program was validated in {mode} mode; the partition needs a seccomp filter")]
    NotSeccomp { mode: Mode },
    /// The shared step budget ran out.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// The distinct residual programs of the ranges hold more than this
    /// many instructions.
    #[error("residual programs exceed {limit} instructions")]
    ResidualInsns { limit: usize },
}

/// A filter's answer per (arch, range of nr). See the module docs.
#[derive(Debug, Clone)]
pub struct Partition {
    /// The arches the filter names, in the order it first compares them;
    /// empty when it never loads `arch`.
    pub arches: Vec<ArchPartition>,
    /// When the filter never loads `arch`: the ranges of every arch.
    pub any_arch: Option<Ranges>,
    /// Arches not in [`Partition::arches`].
    pub other_arches: Outcome,
    /// The residual programs, each once: those of the ranges, and the
    /// leaves and stand-ins of the switches.
    pub residuals: Vec<Residual>,
    /// The residuals' argument checks as trees ([`super::tree`]), each
    /// switch after its children.
    pub switches: Vec<Switch>,
}

/// Forward-pass steps the trees of one partition may take (specialisations
/// and the data-flow scans that choose their words).
pub const TREE_STEP_BUDGET: usize = 4_000_000;
/// Instructions the residuals under the trees of one partition may hold.
pub const TREE_INSN_BUDGET: usize = 200_000;

/// Builds residuals and their trees, sharing identical ones.
struct Builder<'p> {
    program: &'p Program,
    forest: Forest,
    /// The whole filter as a residual, once needed.
    whole: Option<usize>,
    /// Instructions of the residuals the ranges themselves need.
    insns: usize,
    max_insns: usize,
}

impl Builder<'_> {
    fn outcome(&mut self, specialized: Specialized<'_>, reads: (bool, bool)) -> Result<Outcome, PartitionError> {
        let insns = match specialized {
            Specialized::Action(v) => return Ok(Outcome::Action(v)),
            Specialized::Whole => return self.whole(),
            Specialized::Residual(insns) => insns,
        };
        let Ok((outcome, added)) = self.forest.outcome(insns, reads) else { return self.whole() };
        self.count(added)?;
        Ok(outcome)
    }

    /// The whole filter, which may read A and X at entry.
    fn whole(&mut self) -> Result<Outcome, PartitionError> {
        if let Some(i) = self.whole {
            return Ok(Outcome::Residual(i));
        }
        self.count(self.program.len())?;
        let residual = Residual { program: self.program.clone(), reads_a: true, reads_x: true };
        let i = self.forest.keep(self.program.original().to_vec(), residual);
        self.whole = Some(i);
        Ok(Outcome::Residual(i))
    }

    /// Counts `n` more instructions of residuals the ranges need.
    fn count(&mut self, n: usize) -> Result<(), PartitionError> {
        self.insns += n;
        if self.insns > self.max_insns {
            return Err(PartitionError::ResidualInsns { limit: self.max_insns });
        }
        Ok(())
    }
}

/// Specialises and charges the work to `budget`.
fn specialize(
    spec: &mut Specializer,
    builder: &mut Builder<'_>,
    budget: &mut Budget,
    arch: Option<u32>,
    nr: Option<u32>,
) -> Result<Outcome, PartitionError> {
    spec.specialize(arch, nr);
    settle(spec, builder, budget)
}

/// The outcome of the specialisation `spec` just made, its work charged.
fn settle(spec: &Specializer, builder: &mut Builder<'_>, budget: &mut Budget) -> Result<Outcome, PartitionError> {
    budget.charge_steps(spec.last_work() as u64)?;
    builder.outcome(spec.last(), spec.entry_reads())
}

/// Appends `(start, outcome)` unless it continues the last range.
fn push_range(ranges: &mut Ranges, start: u32, outcome: Outcome) {
    if ranges.last().is_none_or(|&(_, last)| last != outcome) {
        ranges.push((start, outcome));
    }
}

impl Partition {
    /// Partitions `program` (validated in seccomp mode), charging every
    /// data-flow pass and specialisation to `budget` and stopping when the
    /// distinct residuals of the ranges exceed `max_insns` instructions;
    /// their trees have budgets of their own ([`TREE_STEP_BUDGET`],
    /// [`TREE_INSN_BUDGET`]), past which a residual stays a leaf.
    pub fn build(program: &Program, budget: &mut Budget, max_insns: usize) -> Result<Partition, PartitionError> {
        if program.mode() != Mode::Seccomp {
            return Err(PartitionError::NotSeccomp { mode: program.mode() });
        }
        let mut spec = Specializer::new(program);
        let forest = Forest::new(TREE_STEP_BUDGET, TREE_INSN_BUDGET);
        let mut builder = Builder { program, forest, whole: None, insns: 0, max_insns };
        budget.charge_steps(program.len() as u64)?;
        let (arches, _) = spec.specialize_watching(None, None, OFFSET_ARCH);
        let arches = in_program_order(program, arches);
        let reads_arch =
            program.insns().iter().any(|i| matches!(i.op(), Some(Op::LdxAbsSeccomp { k }) if k == OFFSET_ARCH));
        if !reads_arch {
            let ranges = arch_ranges(program, &mut spec, &mut builder, budget, None)?.0;
            let other_arches = ranges.first().map_or(Outcome::Action(0), |&(_, o)| o);
            return Ok(Partition {
                arches: Vec::new(),
                any_arch: Some(ranges),
                other_arches,
                residuals: builder.forest.residuals,
                switches: builder.forest.switches,
            });
        }
        let mut parts = Vec::with_capacity(arches.len());
        for &arch in &arches {
            let (ranges, cut) = arch_ranges(program, &mut spec, &mut builder, budget, Some(arch))?;
            parts.push(ArchPartition { arch, ranges, cut });
        }
        other_arches(&mut spec, arches);
        let other_arches = settle(&spec, &mut builder, budget)?;
        Ok(Partition {
            arches: parts,
            any_arch: None,
            other_arches,
            residuals: builder.forest.residuals,
            switches: builder.forest.switches,
        })
    }
}

impl Partition {
    /// Grows the residuals of a partition made without trees (a code
    /// generator's own, [`Partition::switches`] empty) into trees, as
    /// [`Partition::build`] grows its own: each residual kept once (the
    /// whole list rebuilt, identical programs shared), the ranges and
    /// [`Partition::other_arches`] pointed at the trees, neighbouring ranges
    /// that now agree merged. Within [`TREE_STEP_BUDGET`] and
    /// [`TREE_INSN_BUDGET`]; past them a residual stays a leaf (exact
    /// either way). A partition that has switches already is left as it is.
    pub fn grow_trees(&mut self) {
        if !self.switches.is_empty() {
            return;
        }
        let mut forest = Forest::new(TREE_STEP_BUDGET, TREE_INSN_BUDGET);
        let grown: Vec<Outcome> = std::mem::take(&mut self.residuals)
            .into_iter()
            .map(|r| match forest.outcome(r.program.original(), (r.reads_a, r.reads_x)) {
                Ok((o, _)) => o,
                Err(_) => Outcome::Residual(forest.keep(r.program.original().to_vec(), r)),
            })
            .collect();
        let moved = |o: Outcome| match o {
            Outcome::Residual(i) => grown.get(i).copied().unwrap_or(o),
            o => o,
        };
        let ranges = self.arches.iter_mut().map(|a| &mut a.ranges).chain(self.any_arch.as_mut());
        for r in ranges {
            let mut merged = Ranges::with_capacity(r.len());
            for &(start, o) in r.iter() {
                push_range(&mut merged, start, moved(o));
            }
            *r = merged;
        }
        self.other_arches = moved(self.other_arches);
        self.residuals = forest.residuals;
        self.switches = forest.switches;
    }
}

/// The filter specialised for every arch that is none of `arches` (the
/// constants it compares `arch` with): each `jeq` of `arch` with one of
/// them is false, so every such arch takes the same path. Shared by
/// [`Partition::build`] and [`FastFilter::build`](super::FastFilter::build).
pub(super) fn other_arches(spec: &mut Specializer, mut arches: Vec<u32>) -> Specialized<'_> {
    arches.sort_unstable();
    arches.dedup();
    spec.specialize_key(OFFSET_ARCH, &KeyFact::NoneOf(arches))
}

/// `arches` ordered by the first instruction that compares with each.
fn in_program_order(program: &Program, mut arches: Vec<u32>) -> Vec<u32> {
    let first = |arch: u32| {
        program
            .insns()
            .iter()
            .position(|i| matches!(i.op(), Some(Op::Jmp { src: cbpf::Src::K, k, .. }) if k == arch))
            .unwrap_or(usize::MAX)
    };
    arches.sort_by_key(|&a| (first(a), a));
    arches
}

/// The ranges of `arch` (`None`: a filter that never loads `arch`).
fn arch_ranges(
    program: &Program,
    spec: &mut Specializer,
    builder: &mut Builder<'_>,
    budget: &mut Budget,
    arch: Option<u32>,
) -> Result<(Ranges, Cut), PartitionError> {
    // Any arch value serves a filter that never loads it.
    let class_arch = arch.unwrap_or(crate::arch::AUDIT_ARCH_X86_64);
    let mut ranges = Ranges::new();
    let mut analyzer = Analyzer::with_budget(program, std::mem::take(budget))?;
    let classes = analyzer.field_classes(Some(class_arch), Field::Nr);
    *budget = analyzer.into_budget();
    if let Some(starts) = classes?.representatives() {
        for start in starts {
            let outcome = specialize(spec, builder, budget, arch, Some(start))?;
            push_range(&mut ranges, start, outcome);
        }
        return Ok((ranges, Cut::Classes));
    }
    // Numbers the filter may tell apart in other ways: each table number
    // and each compared number alone, the rest on the arch alone.
    budget.charge_steps(program.len() as u64)?;
    let (compared, _) = spec.specialize_watching(arch, None, OFFSET_NR);
    let other = specialize(spec, builder, budget, arch, None)?;
    let dense = super::dense_len(arch.unwrap_or(0), &compared);
    let mut points: Vec<u32> = (0..dense).chain(compared.iter().copied().filter(|&nr| nr >= dense)).collect();
    points.sort_unstable();
    points.dedup();
    let mut next = 0u32;
    for nr in points {
        if nr > next {
            push_range(&mut ranges, next, other);
        }
        let outcome = specialize(spec, builder, budget, arch, Some(nr))?;
        push_range(&mut ranges, nr, outcome);
        match nr.checked_add(1) {
            Some(n) => next = n,
            None => return Ok((ranges, Cut::Table)),
        }
    }
    push_range(&mut ranges, next, other);
    Ok((ranges, Cut::Table))
}
