//! Constant-action analysis of seccomp filters.
//!
//! For one arch and one syscall number, which action does a filter return?
//! Either the same value for every argument and instruction pointer (a
//! *constant* action, a promise), or a value that depends on some of them.
//! [`analyze`] answers for a list of numbers; [`explain`] turns the answers
//! into a policy (per action: the numbers that always get it, and the
//! conditions under which the others do); [`audit`] looks for common
//! mistakes (no arch check, x32 bypass, default allow, ...).
//!
//! # How
//!
//! The validated, rewritten program ([`cbpf::Program::insns`]) runs on an
//! abstract machine where `nr` and `arch` are concrete and every other
//! `struct seccomp_data` half (`ip.lo/hi`, `args[i].lo/hi`) is symbolic.
//! Each of A, X and `M[0..16]` is a known `u32`, exactly one field, or "some
//! value computed from these fields". Arithmetic on known values is exact
//! (the converted eBPF's semantics: wrapping 32-bit, shift amounts masked to
//! 5 bits, division by zero returns 0); a branch on a known value goes one
//! way, on anything else both ways.
//! When [`explain`] records a path's conditions it also follows what the
//! computed values are ([`crate::domain::expr`]), so a condition on one
//! prints as its expression, `(args[0].lo + 0x1) > 0x5`.
//!
//! 1. A forward data-flow pass (jumps only go forward, so one pass in pc
//!    order is the fixpoint) joins the states of paths that meet. It is
//!    linear in the program and settles almost every (arch, nr).
//! 2. When it cannot promise a constant, a path-sensitive exploration
//!    follows each feasible path separately, remembering what the branches
//!    taken imply about each field (`args[0].lo == 5` on this path, so a
//!    later `args[0].lo == 6` is false). It has a step budget; when the
//!    budget runs out the data-flow answer stands.
//!
//! Besides those per-number limits, a [`Budget`] bounds a whole run: every
//! instruction executed (data flow and exploration, all numbers, all
//! arches) and every path and condition [`explain`] reports draws on it.
//! Past it the `*_in` entry points stop with [`AnalysisError::Budget`].
//!
//! Both are sound: a [`ActionResult::Constant`] is returned only if every
//! path the real program can take for that (arch, nr) returns that value.
//! When in doubt the answer is [`ActionResult::Depends`].
//!
//! The analysis never reads [`cbpf::Program::original`]; the kernel's own,
//! much weaker, constant-action emulator is [`crate::cache`].

mod audit;
mod classes;
mod dataflow;
mod deepest;
mod explain;
mod paths;

pub use crate::domain::{Field, FieldSet};
pub use audit::{audit, audit_in, Finding, FindingKind, Severity, SIBLINGS_X86_64};
pub use deepest::{deepest_input_in, Deepest};
pub use explain::{explain, explain_in, ActionRules, NrPaths, Policy, PolicyEvent, Returned};
pub use paths::{Cond, Operand, Relation};

use cbpf::{Mode, Op, Program};

use std::collections::HashMap;

use crate::domain::{self, Env, Step, Val};
pub use classes::{NrClasses, WordCuts, MAX_PEELED, MIN_JSET_RUN_BIT};
use dataflow::Dataflow;
use paths::{explore, Limits, Outcome, Work};

/// Why a program cannot be analysed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// The program was validated as a socket filter; the analysis needs the
    /// seccomp rewrite (loads from `struct seccomp_data`).
    #[error("program was validated in {mode} mode; the analysis needs a seccomp filter")]
    NotSeccomp { mode: Mode },
    /// A run's [`Budget`] ran out.
    #[error("analysis budget exhausted: more than {limit} {kind} (raise it with {flag} N)", flag = kind.flag())]
    Budget { kind: BudgetKind, limit: u64 },
}

/// Which [`Budget`] bound struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetKind {
    /// Abstract instructions executed ([`Budget::max_steps`]).
    Steps,
    /// Paths reported by `explain` ([`Budget::max_paths`]).
    Paths,
    /// Conditions reported by `explain` ([`Budget::max_conds`]).
    Conds,
    /// Expression nodes reported by `explain` ([`Budget::max_expr_nodes`]).
    ExprNodes,
}

impl BudgetKind {
    /// The `bpfconv analyze` flag that raises it.
    pub fn flag(self) -> &'static str {
        match self {
            BudgetKind::Steps => "--max-steps",
            BudgetKind::Paths => "--max-paths",
            BudgetKind::Conds => "--max-conds",
            BudgetKind::ExprNodes => "--max-expr-nodes",
        }
    }
}

impl std::fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BudgetKind::Steps => "analysis steps",
            BudgetKind::Paths => "explained paths",
            BudgetKind::Conds => "explained conditions",
            BudgetKind::ExprNodes => "explained expression nodes",
        })
    }
}

/// Work allowed to one run (shared by every call it is passed to), and
/// what has been spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Abstract instructions executed, data flow and exploration.
    pub max_steps: u64,
    /// Paths `explain` reports.
    pub max_paths: u64,
    /// Conditions `explain` reports (the size of its output).
    pub max_conds: u64,
    /// Nodes of the expressions `explain` reports (the tree size of every
    /// computed operand of every reported condition, summed; 0 for
    /// conditions on words and constants).
    pub max_expr_nodes: u64,
    steps: Work,
    report: Report,
}

/// What `explain` has reported, against its bounds (apart from the step
/// counter, which the exploration holds while its visitor charges these).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Report {
    paths: u64,
    conds: u64,
    expr_nodes: u64,
    max_paths: u64,
    max_conds: u64,
    max_expr_nodes: u64,
}

impl Report {
    /// Charges one reported path of `n` conditions whose expressions have
    /// `nodes` nodes.
    fn charge(&mut self, n: usize, nodes: u64) -> Result<(), AnalysisError> {
        self.paths += 1;
        if self.paths > self.max_paths {
            return Err(AnalysisError::Budget { kind: BudgetKind::Paths, limit: self.max_paths });
        }
        self.conds = self.conds.saturating_add(n as u64);
        if self.conds > self.max_conds {
            return Err(AnalysisError::Budget { kind: BudgetKind::Conds, limit: self.max_conds });
        }
        self.expr_nodes = self.expr_nodes.saturating_add(nodes);
        if self.expr_nodes > self.max_expr_nodes {
            return Err(AnalysisError::Budget { kind: BudgetKind::ExprNodes, limit: self.max_expr_nodes });
        }
        Ok(())
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(Budget::DEFAULT_STEPS, Budget::DEFAULT_PATHS, Budget::DEFAULT_CONDS)
    }
}

impl Budget {
    /// Default [`Budget::max_steps`].
    pub const DEFAULT_STEPS: u64 = 1 << 24;
    /// Default [`Budget::max_paths`].
    pub const DEFAULT_PATHS: u64 = 1 << 14;
    /// Default [`Budget::max_conds`].
    pub const DEFAULT_CONDS: u64 = 1 << 18;
    /// Default [`Budget::max_expr_nodes`].
    pub const DEFAULT_EXPR_NODES: u64 = 1 << 20;

    /// A fresh budget with these bounds ([`Budget::DEFAULT_EXPR_NODES`]
    /// expression nodes: [`Budget::with_max_expr_nodes`]).
    pub fn new(max_steps: u64, max_paths: u64, max_conds: u64) -> Budget {
        let max_expr_nodes = Budget::DEFAULT_EXPR_NODES;
        Budget {
            max_steps,
            max_paths,
            max_conds,
            max_expr_nodes,
            steps: Work { used: 0, max: max_steps },
            report: Report { paths: 0, conds: 0, expr_nodes: 0, max_paths, max_conds, max_expr_nodes },
        }
    }

    /// The same bounds, with at most `n` expression nodes reported.
    pub fn with_max_expr_nodes(mut self, n: u64) -> Budget {
        self.max_expr_nodes = n;
        self.report.max_expr_nodes = n;
        self
    }

    /// Abstract instructions executed so far.
    pub fn steps_used(&self) -> u64 {
        self.steps.used
    }

    pub(crate) fn charge_steps(&mut self, n: u64) -> Result<(), AnalysisError> {
        if self.steps.charge(n) {
            Ok(())
        } else {
            Err(self.exhausted(BudgetKind::Steps))
        }
    }

    fn exhausted(&self, kind: BudgetKind) -> AnalysisError {
        let limit = match kind {
            BudgetKind::Steps => self.max_steps,
            BudgetKind::Paths => self.max_paths,
            BudgetKind::Conds => self.max_conds,
            BudgetKind::ExprNodes => self.max_expr_nodes,
        };
        AnalysisError::Budget { kind, limit }
    }
}

/// What a filter returns for one (arch, nr).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ActionResult {
    /// Exactly this value, whatever the arguments and instruction pointer.
    Constant(u32),
    /// Not provably constant; the value may depend on these fields
    /// (`ip.lo/hi`, `args[i].lo/hi`), in [`Field::index`] order.
    Depends(Vec<Field>),
}

/// The result for one syscall number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    pub nr: u32,
    pub result: ActionResult,
}

/// Instructions a path-sensitive refinement may execute for one (arch, nr)
/// before the data-flow answer is kept.
const REFINE_STEPS: usize = 1 << 16;

/// Reusable analysis state for one program.
#[derive(Debug)]
pub struct Analyzer {
    ops: Vec<Option<Op>>,
    flow: Dataflow,
    budget: Budget,
    /// Per arch, how the filter tells numbers apart ([`classes`]).
    classes: HashMap<u32, NrClasses>,
    /// Answers already found, per (arch, class of numbers).
    answers: HashMap<(u32, Vec<u64>), ActionResult>,
}

impl Analyzer {
    /// Prepares `prog` (decoded once, buffers reused across calls).
    pub fn new(prog: &Program) -> Result<Self, AnalysisError> {
        if prog.mode() != Mode::Seccomp {
            return Err(AnalysisError::NotSeccomp { mode: prog.mode() });
        }
        Analyzer::with_budget(prog, Budget::default())
    }

    /// Prepares `prog`; every later call draws on `budget`.
    pub fn with_budget(prog: &Program, budget: Budget) -> Result<Self, AnalysisError> {
        if prog.mode() != Mode::Seccomp {
            return Err(AnalysisError::NotSeccomp { mode: prog.mode() });
        }
        Ok(Analyzer {
            ops: prog.insns().iter().map(|i| i.op()).collect(),
            flow: Dataflow::default(),
            budget,
            classes: HashMap::new(),
            answers: HashMap::new(),
        })
    }

    /// The budget, with what has been spent.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Hands the budget back (to pass it on to the next call of a run).
    pub fn into_budget(self) -> Budget {
        self.budget
    }

    /// What the filter returns for `nr` on `arch`. Once the run's budget
    /// is spent, the (sound) data-flow answer.
    pub fn result(&mut self, arch: u32, nr: u32) -> ActionResult {
        let env = Env::new(Some(nr), Some(arch), arch);
        match self.try_result(arch, nr) {
            Ok(r) => r,
            Err(_) => {
                let summary = self.flow.run(&self.ops, &env);
                match summary.constant() {
                    Some(v) => ActionResult::Constant(v),
                    None => ActionResult::Depends(summary.deps.to_vec()),
                }
            }
        }
    }

    /// What the filter returns for `nr` on `arch`, or the budget error.
    ///
    /// Numbers the filter cannot tell apart (`analysis::classes`) share one answer:
    /// only the first of each class is analysed.
    pub fn try_result(&mut self, arch: u32, nr: u32) -> Result<ActionResult, AnalysisError> {
        if !self.classes.contains_key(&arch) {
            self.budget.charge_steps(self.ops.len() as u64)?;
            let classes = NrClasses::of(self, arch);
            self.classes.insert(arch, classes);
        }
        let key = self.classes.get(&arch).and_then(|c| c.key(nr));
        if let Some(key) = &key {
            if let Some(known) = self.answers.get(&(arch, key.clone())) {
                return Ok(known.clone());
            }
        }
        let result = self.result_uncached(arch, nr)?;
        if let Some(key) = key {
            self.answers.insert((arch, key), result.clone());
        }
        Ok(result)
    }

    /// [`Analyzer::try_result`] without the class memo.
    fn result_uncached(&mut self, arch: u32, nr: u32) -> Result<ActionResult, AnalysisError> {
        let env = Env::new(Some(nr), Some(arch), arch);
        self.budget.charge_steps(self.ops.len() as u64)?;
        let summary = self.flow.run(&self.ops, &env);
        if let Some(v) = summary.constant() {
            return Ok(ActionResult::Constant(v));
        }
        let mut returns: Vec<u32> = Vec::new();
        let mut computed = false;
        let mut deps = domain::FieldSet::EMPTY;
        let limits = Limits { max_steps: REFINE_STEPS, max_paths: usize::MAX };
        let outcome = explore(&self.ops, &env, limits, &mut self.budget.steps, |end| {
            deps = deps.union(end.deps);
            match end.ret {
                Val::Known(v) if !returns.contains(&v) => returns.push(v),
                Val::Known(_) => {}
                _ => computed = true,
            }
            true
        });
        match outcome {
            Outcome::Complete => {}
            Outcome::Exhausted => return Err(self.budget.exhausted(BudgetKind::Steps)),
            Outcome::Truncated | Outcome::Stopped => return Ok(ActionResult::Depends(summary.deps.to_vec())),
        }
        Ok(match returns.as_slice() {
            [v] if !computed => ActionResult::Constant(*v),
            _ => ActionResult::Depends(deps.to_vec()),
        })
    }

    /// How the filter tells values of `field` (`Field::Nr` or
    /// `Field::Arch`) apart, with `arch` fixed where given (and `nr`
    /// unknown): the constants every reachable use compares the field with,
    /// or [`NrClasses::Unclassified`] when the field reaches anything else.
    /// Values with equal outcomes on every listed test give the filter the
    /// same behaviour on every other word (module `classes`). Charges one
    /// step per instruction.
    pub fn field_classes(&mut self, arch: Option<u32>, field: Field) -> Result<NrClasses, AnalysisError> {
        self.budget.charge_steps(self.ops.len() as u64)?;
        let env = Env::new(None, arch, arch.unwrap_or(crate::arch::AUDIT_ARCH_X86_64));
        Ok(NrClasses::of_field(self, &env, field))
    }

    /// The first instruction (pc) where `field` reaches something other
    /// than a comparison with a constant (arithmetic feeding a jump, a
    /// divisor, a returned value, a compare with another word), with `arch`
    /// fixed where given; `None` when it reaches nothing else. Charges one
    /// step per instruction.
    pub fn field_other_use(&mut self, arch: Option<u32>, field: Field) -> Result<Option<usize>, AnalysisError> {
        self.budget.charge_steps(self.ops.len() as u64)?;
        let env = Env::new(None, arch, arch.unwrap_or(crate::arch::AUDIT_ARCH_X86_64));
        Ok(NrClasses::scan(self, &env, field).1)
    }

    /// The decoded program.
    fn ops(&self) -> &[Option<Op>] {
        &self.ops
    }

    /// Runs the data-flow pass under `env`, then calls `f` with every
    /// reachable instruction's pc, entry state and step.
    fn for_each_step(&mut self, env: &Env, f: impl FnMut(usize, &domain::State, Step)) {
        self.for_each_step_hiding(env, domain::FieldSet::EMPTY, f);
    }

    /// [`Analyzer::for_each_step`] over [`Dataflow::run_hiding`].
    fn for_each_step_hiding(
        &mut self,
        env: &Env,
        hidden: domain::FieldSet,
        mut f: impl FnMut(usize, &domain::State, Step),
    ) {
        self.flow.run_hiding(&self.ops, env, hidden);
        for (pc, op) in self.ops.iter().enumerate() {
            let Some(state) = self.flow.state_at(pc) else { continue };
            let mut after = *state;
            let step = domain::step(pc, *op, &mut after, env);
            f(pc, state, step);
        }
    }

    /// Every constant `k` that a reachable conditional jump compares the
    /// field `field` itself against (`jeq/jgt/jge/jset`, either operand
    /// order), with the other field of (`nr`, `arch`) fixed by `env`.
    fn compared_constants(&mut self, env: &Env, field: Field) -> Vec<u32> {
        let mut out = Vec::new();
        self.for_each_step(env, |_, _, step| {
            if let Step::Branch { cmp, .. } = step {
                out.extend(cmp.constant_against(field));
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// What `prog` returns for each of `nrs` on `arch`, in the order given.
///
/// Fast enough for whole syscall tables: one linear data-flow pass per
/// number, plus a budgeted path exploration for the numbers it cannot settle.
pub fn analyze(prog: &Program, arch: u32, nrs: impl IntoIterator<Item = u32>) -> Result<Vec<Entry>, AnalysisError> {
    analyze_in(prog, arch, nrs, &mut Budget::default())
}

/// [`analyze`] drawing on a run's `budget`: stops with
/// [`AnalysisError::Budget`] rather than exceed it.
pub fn analyze_in(
    prog: &Program,
    arch: u32,
    nrs: impl IntoIterator<Item = u32>,
    budget: &mut Budget,
) -> Result<Vec<Entry>, AnalysisError> {
    let mut analyzer = Analyzer::with_budget(prog, std::mem::take(budget))?;
    let entries: Result<Vec<Entry>, AnalysisError> =
        nrs.into_iter().map(|nr| Ok(Entry { nr, result: analyzer.try_result(arch, nr)? })).collect();
    *budget = analyzer.into_budget();
    entries
}

/// Every constant the filter compares `nr` itself against on `arch`
/// (ascending): the numbers outside a syscall table that still deserve an
/// entry (FORMATS.md §3). Comparisons of a value computed from `nr` (say
/// `nr & 0x3fffffff`) are not listed.
pub fn compared_nrs(prog: &Program, arch: u32) -> Result<Vec<u32>, AnalysisError> {
    let mut analyzer = Analyzer::new(prog)?;
    Ok(analyzer.compared_constants(&Env::new(None, Some(arch), arch), Field::Nr))
}

/// Numbers standing for every class of syscall numbers `prog` can tell
/// apart on `arch` (ascending): every number gets the answer of one of
/// them, the one whose class it shares (the module `classes`: every test of `nr` comes out the same). `None` when `nr`
/// reaches more than order comparisons with constants (arithmetic, a
/// return, a bit test), so that no finite list stands for every number.
pub fn nr_representatives(prog: &Program, arch: u32) -> Result<Option<Vec<u32>>, AnalysisError> {
    let mut analyzer = Analyzer::new(prog)?;
    Ok(NrClasses::of(&mut analyzer, arch).representatives())
}

/// Every constant the filter compares `arch` against (ascending): the
/// arches it handles explicitly.
pub fn compared_arches(prog: &Program) -> Result<Vec<u32>, AnalysisError> {
    let mut analyzer = Analyzer::new(prog)?;
    Ok(analyzer.compared_constants(&Env::new(None, None, 0), Field::Arch))
}
