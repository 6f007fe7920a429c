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
//! This is the API skeleton shared by `equiv`, `optimize` and `decompile`;
//! the decision procedure is filled in behind it.

use cbpf::{Mode, Program, SeccompData};

/// One side of a comparison: a stack of validated seccomp filters, newest
/// first (the kernel's list order, as [`seccomp::chain`] takes them). One
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
    /// Abstract steps (classes, specialisation, formula building) over the
    /// whole check.
    pub max_steps: u64,
    /// Solver conflicts over the whole check.
    pub max_conflicts: u64,
    /// Clauses held by the solver at once (memory).
    pub max_clauses: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_steps: 1 << 24, max_conflicts: 1 << 20, max_clauses: 1 << 23 }
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
}

impl std::fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BudgetKind::Steps => "abstract steps",
            BudgetKind::Conflicts => "solver conflicts",
            BudgetKind::Clauses => "solver clauses",
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
}

/// Decides whether `left` and `right` agree on every input.
pub fn check(left: Side<'_>, right: Side<'_>, options: &Options) -> Result<Verdict, EquivError> {
    let _ = (left, right);
    Err(EquivError::Budget { kind: BudgetKind::Steps, limit: options.limits.max_steps })
}
