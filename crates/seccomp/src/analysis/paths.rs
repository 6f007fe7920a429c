//! Path-sensitive exploration: follows every feasible path of the program
//! separately, keeping what the branches taken so far say about each field
//! ([`Facts`]), so correlated tests (`args[0] == 5` checked twice) do not
//! produce impossible paths. Exponential in the worst case, hence a step
//! budget; callers fall back to the data-flow result when it runs out.

use std::rc::Rc;

use cbpf::{JmpOp, Op, Pc};

use crate::domain::{step, Cmp, Env, Facts, Field, FieldSet, Node, State, Step, Val, DIV_BY_ZERO_RET};

/// One side of a [`Cond`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A constant.
    Const(u32),
    /// The value of a field.
    Field(Field),
    /// `field & mask` (`and #mask` of a loaded word), `mask != 0`.
    Masked { field: Field, mask: u32 },
    /// A value the program computed from these fields.
    Computed(FieldSet),
}

impl Operand {
    fn of(v: Val) -> Operand {
        match v {
            Val::Known(k) => Operand::Const(k),
            Val::Exact(f) => Operand::Field(f),
            Val::Masked { field, mask } => Operand::Masked { field, mask },
            Val::Unknown(s) => Operand::Computed(s),
        }
    }
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operand::Const(0) => f.write_str("0"),
            Operand::Const(k) => write!(f, "{k:#x}"),
            Operand::Field(field) => write!(f, "{field}"),
            Operand::Masked { field, mask } => write!(f, "({field} & {mask:#x})"),
            Operand::Computed(s) => {
                f.write_str("f(")?;
                for (i, field) in s.to_vec().iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{field}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// How the two sides of a [`Cond`] relate (unsigned 32-bit comparisons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relation {
    Eq,
    Ne,
    Gt,
    Le,
    Ge,
    Lt,
    /// `lhs & rhs != 0`.
    AnyBitSet,
    /// `lhs & rhs == 0`.
    NoBitSet,
}

impl Relation {
    fn of(op: JmpOp, holds: bool) -> Relation {
        match (op, holds) {
            (JmpOp::Jeq, true) => Relation::Eq,
            (JmpOp::Jeq, false) => Relation::Ne,
            (JmpOp::Jgt, true) => Relation::Gt,
            (JmpOp::Jgt, false) => Relation::Le,
            (JmpOp::Jge, true) => Relation::Ge,
            (JmpOp::Jge, false) => Relation::Lt,
            (JmpOp::Jset, true) => Relation::AnyBitSet,
            (JmpOp::Jset, false) => Relation::NoBitSet,
        }
    }
}

/// One branch decision on a path: `lhs REL rhs` held at instruction `pc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cond {
    /// The conditional jump (or `div x` / `mod x`) that decided.
    pub pc: Pc,
    pub lhs: Operand,
    pub rel: Relation,
    pub rhs: Operand,
}

impl std::fmt::Display for Cond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lhs, rhs) = (self.lhs, self.rhs);
        match self.rel {
            Relation::Eq => write!(f, "{lhs} == {rhs}"),
            Relation::Ne => write!(f, "{lhs} != {rhs}"),
            Relation::Gt => write!(f, "{lhs} > {rhs}"),
            Relation::Le => write!(f, "{lhs} <= {rhs}"),
            Relation::Ge => write!(f, "{lhs} >= {rhs}"),
            Relation::Lt => write!(f, "{lhs} < {rhs}"),
            Relation::AnyBitSet => write!(f, "{lhs} & {rhs} != 0"),
            Relation::NoBitSet => write!(f, "{lhs} & {rhs} == 0"),
        }
    }
}

/// How one path ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEnd<'a> {
    /// The returned value: known, or computed by `ret a`.
    pub ret: Val,
    /// Fields the undecided branches of this path (and a computed return
    /// value) depend on.
    pub deps: FieldSet,
    /// The undecided branches (none unless recording), newest first.
    conds: Option<&'a Rc<CondNode>>,
}

impl PathEnd<'_> {
    /// Number of undecided branches recorded on this path.
    pub fn cond_count(&self) -> usize {
        self.conds.map_or(0, |n| n.len)
    }

    /// Replaces `out` with the recorded undecided branches, in order.
    pub fn conds_into(&self, out: &mut Vec<Cond>) {
        out.clear();
        let mut node = self.conds.map(|n| &**n);
        while let Some(n) = node {
            out.push(n.item);
            node = n.older.as_deref();
        }
        out.reverse();
    }
}

/// A recorded condition and the older ones of the same path.
pub type CondNode = Node<Cond>;

fn push_cond(list: &Option<Rc<CondNode>>, cond: Cond) -> Option<Rc<CondNode>> {
    Node::push(list, cond)
}

/// Limits of one exploration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Instructions executed over all paths.
    pub max_steps: usize,
    /// Paths reported.
    pub max_paths: usize,
}

/// Work left for a whole run (every exploration of every number and arch
/// draws on it): instructions executed, abstract or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    pub used: u64,
    pub max: u64,
}

impl Work {
    /// Charges `n` units; false once the run's budget is exceeded.
    pub fn charge(&mut self, n: u64) -> bool {
        self.used = self.used.saturating_add(n);
        self.used <= self.max
    }
}

/// How an exploration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every feasible path was visited.
    Complete,
    /// A per-exploration [`Limits`] bound struck first.
    Truncated,
    /// The run's [`Work`] budget ran out.
    Exhausted,
    /// The visitor asked to stop.
    Stopped,
}

/// A pending path: where it continues and what it knows.
struct Pending {
    pc: usize,
    state: State,
    facts: Facts,
    conds: Option<Rc<CondNode>>,
}

/// Explores every feasible path of `ops` under `env`, calling `visit` at
/// each path's end (it returns false to stop). The visited ends are real
/// paths whatever the outcome.
pub fn explore(
    ops: &[Option<Op>],
    env: &Env,
    record: bool,
    limits: Limits,
    work: &mut Work,
    mut visit: impl FnMut(PathEnd<'_>) -> bool,
) -> Outcome {
    let mut stack = vec![Pending { pc: 0, state: State::entry(), facts: Facts::default(), conds: None }];
    let mut steps = 0usize;
    let mut paths = 0usize;
    while let Some(Pending { mut pc, mut state, mut facts, mut conds }) = stack.pop() {
        if paths >= limits.max_paths {
            return Outcome::Truncated;
        }
        loop {
            steps += 1;
            if steps > limits.max_steps {
                return Outcome::Truncated;
            }
            if !work.charge(1) {
                return Outcome::Exhausted;
            }
            let Some(op) = ops.get(pc) else {
                // Validation keeps jumps inside the program.
                return Outcome::Truncated;
            };
            let mut end = |ret: Val, state: &State, conds: &Option<Rc<CondNode>>| {
                paths += 1;
                let deps = state.ctrl.union(ret.deps());
                visit(PathEnd { ret, deps, conds: conds.as_ref() })
            };
            match step(pc, *op, &mut state, env) {
                Step::Goto(t) => pc = t,
                Step::Return(v) => {
                    if !end(v, &state, &conds) {
                        return Outcome::Stopped;
                    }
                    break;
                }
                Step::Branch { cmp, taken, not_taken } => match facts.decide(cmp) {
                    Some(true) => pc = taken,
                    Some(false) => pc = not_taken,
                    None => {
                        state.ctrl = state.ctrl.union(cmp.deps());
                        let mut facts_t = facts.clone();
                        let feasible_t = facts_t.assume(cmp, true);
                        let feasible_f = facts.assume(cmp, false);
                        let cond = |holds: bool| Cond {
                            pc: Pc(pc),
                            lhs: Operand::of(cmp.lhs),
                            rel: Relation::of(cmp.op, holds),
                            rhs: Operand::of(cmp.rhs),
                        };
                        if feasible_t {
                            let mut st = state;
                            if let (JmpOp::Jeq, known @ Val::Known(_)) = (cmp.op, cmp.rhs) {
                                st.a = known;
                            }
                            let conds_t = if record { push_cond(&conds, cond(true)) } else { None };
                            if feasible_f {
                                stack.push(Pending { pc: taken, state: st, facts: facts_t, conds: conds_t });
                            } else {
                                (pc, state, facts, conds) = (taken, st, facts_t, conds_t);
                                continue;
                            }
                        }
                        if !feasible_f {
                            break;
                        }
                        if record {
                            conds = push_cond(&conds, cond(false));
                        }
                        pc = not_taken;
                    }
                },
                Step::DivByX { divisor, next } => {
                    let is_zero = Cmp { op: JmpOp::Jeq, lhs: divisor, rhs: Val::Known(0) };
                    match facts.decide(is_zero) {
                        Some(true) => {
                            if !end(Val::Known(DIV_BY_ZERO_RET), &state, &conds) {
                                return Outcome::Stopped;
                            }
                            break;
                        }
                        Some(false) => pc = next,
                        None => {
                            state.ctrl = state.ctrl.union(divisor.deps());
                            let cond = |holds: bool| Cond {
                                pc: Pc(pc),
                                lhs: Operand::of(divisor),
                                rel: Relation::of(JmpOp::Jeq, holds),
                                rhs: Operand::Const(0),
                            };
                            let go_on = if record {
                                let zero_conds = push_cond(&conds, cond(true));
                                let go_on = end(Val::Known(DIV_BY_ZERO_RET), &state, &zero_conds);
                                conds = push_cond(&conds, cond(false));
                                go_on
                            } else {
                                end(Val::Known(DIV_BY_ZERO_RET), &state, &conds)
                            };
                            if !go_on {
                                return Outcome::Stopped;
                            }
                            if !facts.assume(is_zero, false) {
                                break;
                            }
                            pc = next;
                        }
                    }
                }
            }
        }
    }
    Outcome::Complete
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libseccomp's chdir rules in long_jumps_large (100 rules on three
    /// 64-bit arguments) explore completely within the analysis budget:
    /// the facts make every later `args[0] == j` test decided.
    #[test]
    fn long_jumps_chdir_fits_the_refinement_budget() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters/long_jumps_large.bpf");
        let insns = cbpf::raw::decode(&std::fs::read(path).unwrap()).unwrap();
        let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
        let ops: Vec<Option<Op>> = prog.insns().iter().map(|i| i.op()).collect();
        let env = Env::new(Some(80), Some(0xc000_003e), 0xc000_003e);
        let mut paths = 0;
        let limits = Limits { max_steps: super::super::REFINE_STEPS, max_paths: usize::MAX };
        let mut work = Work { used: 0, max: u64::MAX };
        let outcome = explore(&ops, &env, false, limits, &mut work, |_| {
            paths += 1;
            true
        });
        assert_eq!(outcome, Outcome::Complete);
        assert_eq!(paths, 902);
        // Without the facts every rule's tests would be independent and the
        // paths would multiply; a tiny budget must report incompleteness.
        let tiny = Limits { max_steps: 1000, max_paths: usize::MAX };
        assert_eq!(explore(&ops, &env, false, tiny, &mut work, |_| true), Outcome::Truncated);
        let few = Limits { max_steps: usize::MAX, max_paths: 10 };
        assert_eq!(explore(&ops, &env, false, few, &mut work, |_| true), Outcome::Truncated);
        // The run's budget is shared: once spent, every exploration says so.
        let mut spent = Work { used: 0, max: 500 };
        assert_eq!(explore(&ops, &env, false, limits, &mut spent, |_| true), Outcome::Exhausted);
    }
}
