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
//! - per arch, when every use of `nr` is a comparison with a constant other
//!   than `jset` ([`crate::analysis::NrClasses::representatives`], from
//!   [`Analyzer::field_classes`]), the numbers are cut at those
//!   representatives (each compared constant, its neighbours, 0 and
//!   `u32::MAX`) and each run is specialised once, on its first number:
//!   numbers of one run take the same side of every test, so the filter
//!   gives them the same answer. Otherwise every
//!   number of the arch's syscall table and every number compared is
//!   specialised on its own and all other numbers run the filter
//!   specialised on the arch alone (exact, as the fast engine does);
//! - neighbouring ranges with the same outcome are merged.
//!
//! A residual is a classic program from the filter's start with `arch`
//! (and `nr`) known: it reloads what it reads from `struct seccomp_data`,
//! never assumes `nr` or `arch` in a register, and its scratch words are
//! written before they are read (it passed [`cbpf::validate()`]). It may rely
//! on A and X being 0 at its entry, as at a filter's start:
//! [`Residual::reads_a`] and [`Residual::reads_x`] say so.

use std::collections::HashMap;

use cbpf::{Insn, Mode, Op, Program};

use super::key::KeyFact;
use super::specialize::{Specialized, Specializer};
use crate::analysis::{AnalysisError, Analyzer, Budget};
use crate::data::{OFFSET_ARCH, OFFSET_NR};
use crate::domain::Field;

/// What the filter does for a range of (arch, nr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Returns this value whatever the arguments and instruction pointer.
    Action(u32),
    /// Runs [`Partition::residuals`]`[i]`.
    Residual(usize),
}

/// A residual program of a [`Partition`].
#[derive(Debug, Clone)]
pub struct Residual {
    /// Validated in seccomp mode; [`Program::original`] is what to emit.
    pub program: Program,
    /// It reads A before writing it, so it needs A == 0 at entry.
    pub reads_a: bool,
    /// It reads X before writing it, so it needs X == 0 at entry.
    pub reads_x: bool,
}

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
    /// The distinct residual programs hold more than this many instructions.
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
    /// The residual programs, each once.
    pub residuals: Vec<Residual>,
}

/// Builds residuals, sharing identical ones.
struct Builder<'p> {
    program: &'p Program,
    residuals: Vec<Residual>,
    index: HashMap<Vec<Insn>, usize>,
    /// The whole filter as a residual, once needed.
    whole: Option<usize>,
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
        if let Some(&i) = self.index.get(insns) {
            return Ok(Outcome::Residual(i));
        }
        let Ok(program) = cbpf::validate(insns, Mode::Seccomp) else { return self.whole() };
        self.push(insns.to_vec(), Residual { program, reads_a: reads.0, reads_x: reads.1 })
    }

    /// The whole filter, which may read A and X at entry.
    fn whole(&mut self) -> Result<Outcome, PartitionError> {
        if let Some(i) = self.whole {
            return Ok(Outcome::Residual(i));
        }
        let residual = Residual { program: self.program.clone(), reads_a: true, reads_x: true };
        let outcome = self.push(self.program.original().to_vec(), residual)?;
        if let Outcome::Residual(i) = outcome {
            self.whole = Some(i);
        }
        Ok(outcome)
    }

    fn push(&mut self, insns: Vec<Insn>, residual: Residual) -> Result<Outcome, PartitionError> {
        self.insns += insns.len();
        if self.insns > self.max_insns {
            return Err(PartitionError::ResidualInsns { limit: self.max_insns });
        }
        let i = self.residuals.len();
        self.index.insert(insns, i);
        self.residuals.push(residual);
        Ok(Outcome::Residual(i))
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
    /// distinct residuals exceed `max_insns` instructions.
    pub fn build(program: &Program, budget: &mut Budget, max_insns: usize) -> Result<Partition, PartitionError> {
        if program.mode() != Mode::Seccomp {
            return Err(PartitionError::NotSeccomp { mode: program.mode() });
        }
        let mut spec = Specializer::new(program);
        let mut builder =
            Builder { program, residuals: Vec::new(), index: HashMap::new(), whole: None, insns: 0, max_insns };
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
                residuals: builder.residuals,
            });
        }
        let mut parts = Vec::with_capacity(arches.len());
        for &arch in &arches {
            let (ranges, cut) = arch_ranges(program, &mut spec, &mut builder, budget, Some(arch))?;
            parts.push(ArchPartition { arch, ranges, cut });
        }
        other_arches(&mut spec, arches);
        let other_arches = settle(&spec, &mut builder, budget)?;
        Ok(Partition { arches: parts, any_arch: None, other_arches, residuals: builder.residuals })
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
