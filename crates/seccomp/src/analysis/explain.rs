//! The policy a filter implements, as data: per action, the syscall numbers
//! that always get it and, for the others, the branch conditions under which
//! they do. Formatting is the caller's business.

use std::collections::BTreeMap;

use cbpf::Program;

use cbpf::uapi::seccomp::{SECCOMP_RET_ERRNO, SECCOMP_RET_TRACE, SECCOMP_RET_TRAP};

use super::paths::{explore, explore_recorded, Cond, Limits, Outcome};
use super::{ActionResult, AnalysisError, Analyzer, Budget, BudgetKind};
use crate::domain::expr::Arena;
use crate::domain::{Env, Expr, Val};
use crate::Action;

/// What one path returns: a constant, or the value `ret a` computes.
/// Constants order first (ascending), then expressions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Returned {
    Const(u32),
    Computed(Expr),
}

impl Returned {
    /// The constant returned, `None` for a computed value.
    pub fn action(&self) -> Option<u32> {
        match self {
            Returned::Const(v) => Some(*v),
            Returned::Computed(_) => None,
        }
    }
}

impl std::fmt::Display for Returned {
    /// A constant as its action (`ERRNO(1)`). A computed value whose
    /// action bits are the same on every input ([`Expr::action_data`]) as
    /// that action with the data expression, `ERRNO(args[0].lo & 0xfff)`
    /// (TRAP, ERRNO, TRACE: the actions whose data the kernel uses), or
    /// `ALLOW (returns (args[0].lo | 0x7fff0000))` (the kernel ignores the
    /// data of the others); any other as `returns <expression>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = match self {
            Returned::Const(v) => return write!(f, "{}", Action::from_u32(*v)),
            Returned::Computed(e) => e,
        };
        match e.action_data() {
            Some((action, data)) => {
                let name = match action {
                    SECCOMP_RET_TRAP => "TRAP",
                    SECCOMP_RET_ERRNO => "ERRNO",
                    SECCOMP_RET_TRACE => "TRACE",
                    _ => match Action::from_u32(action) {
                        Action::Unknown(_) => return write!(f, "returns {e}"),
                        a => return write!(f, "{a} (returns {e})"),
                    },
                };
                write!(f, "{name}({})", data.bare())
            }
            None => write!(f, "returns {e}"),
        }
    }
}

/// The paths of one syscall number that end in the same result: `P` is
/// a path's conditions (with the expression returned, for computed values).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NrPaths<P = Vec<Cond>> {
    pub nr: u32,
    /// One conjunction of conditions per feasible path; the result is
    /// produced when any of them holds. Only undecided branches appear.
    pub paths: Vec<P>,
    /// The exploration hit its limit: there may be more paths (and results)
    /// than listed.
    pub truncated: bool,
}

/// Everything known about one action value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionRules {
    /// The full 32-bit return value.
    pub action: u32,
    /// Numbers that get it whatever the arguments (ascending).
    pub always: Vec<u32>,
    /// Numbers that get it under conditions.
    pub when: Vec<NrPaths>,
}

/// A filter's policy for one arch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    pub arch: u32,
    /// One entry per action value the examined numbers can get, ascending.
    pub actions: Vec<ActionRules>,
    /// Paths that return a computed value (`ret a`), per number: the
    /// expression returned and the conditions.
    pub computed: Vec<NrPaths<(Expr, Vec<Cond>)>>,
}

impl Policy {
    fn rules(&mut self, action: u32) -> &mut ActionRules {
        let i = match self.actions.binary_search_by_key(&action, |r| r.action) {
            Ok(i) => i,
            Err(i) => {
                self.actions.insert(i, ActionRules { action, always: Vec::new(), when: Vec::new() });
                i
            }
        };
        // `i` is the position found or just filled by the insert above.
        #[allow(clippy::indexing_slicing)]
        &mut self.actions[i]
    }
}

/// Limits of the exploration of one dependent number.
const EXPLAIN_LIMITS: Limits = Limits { max_steps: 1 << 18, max_paths: 2048 };

/// One piece of a policy, in the order [`explain_in`] proves them: per
/// action value (ascending) a header, then its conditional paths number by
/// number; last the paths returning a computed value (`action: None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyEvent<'a> {
    /// The section of `action` (`None`: computed return values) begins;
    /// `always` are the numbers that get it whatever the arguments.
    Action { action: Option<u32>, always: &'a [u32] },
    /// `nr` gets `returns` when every condition holds (a path of the
    /// section of `returns.action()`).
    Path { returns: &'a Returned, nr: u32, conds: &'a [Cond] },
    /// The exploration of `nr` hit its limit: there may be more paths to
    /// `action` than reported.
    Truncated { action: Option<u32>, nr: u32 },
}

/// A number whose action depends on the input: what its paths return.
struct Dependent {
    nr: u32,
    /// Values its explored paths return (`None`: computed), first-seen order.
    values: Vec<Option<u32>>,
    truncated: bool,
}

/// The policy of `prog` on `arch` over the syscall numbers `nrs`.
///
/// Numbers with a constant action (as [`super::analyze`] promises) are
/// listed under [`ActionRules::always`]; for each other number the feasible
/// paths are enumerated (up to a limit) and grouped by the value they return.
pub fn explain(prog: &Program, arch: u32, nrs: impl IntoIterator<Item = u32>) -> Result<Policy, AnalysisError> {
    let mut policy = Policy { arch, actions: Vec::new(), computed: Vec::new() };
    let mut budget = Budget::default();
    // A path (`Some`) or the truncation (`None`) of `nr`, into `list`.
    fn add<P>(list: &mut Vec<NrPaths<P>>, nr: u32, path: Option<P>) {
        let last = match list.last_mut() {
            Some(last) if last.nr == nr => last,
            _ => {
                list.push(NrPaths { nr, paths: Vec::new(), truncated: false });
                let Some(last) = list.last_mut() else { return };
                last
            }
        };
        match path {
            Some(p) => last.paths.push(p),
            None => last.truncated = true,
        }
    }
    explain_in(prog, arch, nrs, &mut budget, |event| {
        match event {
            PolicyEvent::Action { action: Some(v), always } => policy.rules(v).always = always.to_vec(),
            PolicyEvent::Action { action: None, .. } => {}
            PolicyEvent::Path { returns: Returned::Const(v), nr, conds } => {
                add(&mut policy.rules(*v).when, nr, Some(conds.to_vec()));
            }
            PolicyEvent::Path { returns: Returned::Computed(e), nr, conds } => {
                add(&mut policy.computed, nr, Some((e.clone(), conds.to_vec())));
            }
            PolicyEvent::Truncated { action: Some(v), nr } => add(&mut policy.rules(v).when, nr, None),
            PolicyEvent::Truncated { action: None, nr } => add(&mut policy.computed, nr, None),
        }
        Ok::<(), AnalysisError>(())
    })?;
    Ok(policy)
}

/// [`explain`] as a stream: hands each proved piece of the policy to
/// `sink` as soon as it is known, holding at most one path at a time, and
/// draws on the run's `budget` (every instruction explored, every path and
/// condition reported). Stops at the first error of `sink` or of the budget.
pub fn explain_in<E: From<AnalysisError>>(
    prog: &Program,
    arch: u32,
    nrs: impl IntoIterator<Item = u32>,
    budget: &mut Budget,
    sink: impl FnMut(PolicyEvent<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut analyzer = Analyzer::with_budget(prog, std::mem::take(budget))?;
    let result = stream(&mut analyzer, arch, nrs, sink);
    *budget = analyzer.into_budget();
    result
}

fn stream<E: From<AnalysisError>>(
    analyzer: &mut Analyzer,
    arch: u32,
    nrs: impl IntoIterator<Item = u32>,
    mut sink: impl FnMut(PolicyEvent<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let env_of = |nr: u32| Env::new(Some(nr), Some(arch), arch);
    let key = |ret: Val| match ret {
        Val::Known(v) => Some(v),
        _ => None,
    };
    // Pass 1: constant numbers, and the values the others' paths return.
    let mut always: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut dependents: Vec<Dependent> = Vec::new();
    for nr in nrs {
        if let ActionResult::Constant(v) = analyzer.try_result(arch, nr)? {
            let list = always.entry(v).or_default();
            if let Err(i) = list.binary_search(&nr) {
                list.insert(i, nr);
            }
            continue;
        }
        let mut values: Vec<Option<u32>> = Vec::new();
        let outcome = explore(&analyzer.ops, &env_of(nr), EXPLAIN_LIMITS, &mut analyzer.budget.steps, |end| {
            let k = key(end.ret);
            if !values.contains(&k) {
                values.push(k);
            }
            true
        });
        if outcome == Outcome::Exhausted {
            return Err(analyzer.budget.exhausted(BudgetKind::Steps).into());
        }
        dependents.push(Dependent { nr, values, truncated: outcome != Outcome::Complete });
    }
    let mut actions: Vec<u32> = always.keys().copied().collect();
    actions.extend(dependents.iter().flat_map(|d| d.values.iter().flatten().copied()));
    actions.sort_unstable();
    actions.dedup();

    // Pass 2: per action, re-explore the numbers that can get it and
    // report its paths one at a time.
    let mut conds: Vec<Cond> = Vec::new();
    let mut arena = Arena::default();
    for action in actions.iter().copied().map(Some).chain([None]) {
        let empty = Vec::new();
        let list = action.and_then(|v| always.get(&v)).unwrap_or(&empty);
        sink(PolicyEvent::Action { action, always: list })?;
        for d in &dependents {
            if action.is_none() && d.values.is_empty() {
                // The limit struck before any path ended: say so rather
                // than silently drop the number.
                sink(PolicyEvent::Truncated { action, nr: d.nr })?;
                continue;
            }
            if !d.values.contains(&action) {
                continue;
            }
            let mut failed: Option<E> = None;
            let Budget { steps, report, .. } = &mut analyzer.budget;
            let env = env_of(d.nr);
            let outcome = explore_recorded(&analyzer.ops, &env, &mut arena, EXPLAIN_LIMITS, steps, |end| {
                if key(end.ret) != action {
                    return true;
                }
                let reported = match report.charge(end.cond_count(), end.expr_nodes()) {
                    Ok(()) => {
                        end.conds_into(&mut conds);
                        let returns = match action {
                            Some(v) => Returned::Const(v),
                            // Recording names every computed value.
                            None => Returned::Computed(end.ret_expr().unwrap_or_else(Expr::unknown)),
                        };
                        sink(PolicyEvent::Path { returns: &returns, nr: d.nr, conds: &conds })
                    }
                    Err(e) => Err(e.into()),
                };
                match reported {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            if outcome == Outcome::Exhausted {
                return Err(analyzer.budget.exhausted(BudgetKind::Steps).into());
            }
            if d.truncated {
                sink(PolicyEvent::Truncated { action, nr: d.nr })?;
            }
        }
    }
    Ok(())
}
