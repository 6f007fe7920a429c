//! Path-sensitive exploration: follows every feasible path of the program
//! separately, keeping what the branches taken so far say about each field
//! ([`Facts`]), so correlated tests (`args[0] == 5` checked twice) do not
//! produce impossible paths. Exponential in the worst case, hence a step
//! budget; callers fall back to the data-flow result when it runs out.

use std::rc::Rc;

use cbpf::{JmpOp, Op, Pc};

use crate::domain::expr::{Arena, Shadow, EXACT};
use crate::domain::{step, Cmp, Env, Expr, Facts, Field, FieldSet, Node, State, Step, Val, DIV_BY_ZERO_RET};

/// One side of a [`Cond`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A constant.
    Const(u32),
    /// The value of a field.
    Field(Field),
    /// `field & mask` (`and #mask` of a loaded word), `mask != 0`.
    Masked { field: Field, mask: u32 },
    /// Any other value the program computed: the expression
    /// (`(args[0].lo + 0x1)`, `-nr`, `(args[0].lo - args[1].lo)`).
    Expr(Expr),
}

impl Operand {
    /// The value on an input whose words are `value(field)` (`None` where
    /// an [`Expr`] divides by zero).
    pub fn eval(&self, value: impl Fn(Field) -> u32) -> Option<u32> {
        match self {
            Operand::Const(k) => Some(*k),
            Operand::Field(f) => Some(value(*f)),
            Operand::Masked { field, mask } => Some(value(*field) & mask),
            Operand::Expr(e) => e.eval(value),
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
            Operand::Expr(e) => write!(f, "{e}"),
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
    /// Does `a REL b` hold? The classic jump whose outcome it is
    /// ([`JmpOp::eval`]), taken or not: the inverse of `Relation::of`.
    pub fn holds(self, a: u32, b: u32) -> bool {
        let (op, taken) = match self {
            Relation::Eq => (JmpOp::Jeq, true),
            Relation::Ne => (JmpOp::Jeq, false),
            Relation::Gt => (JmpOp::Jgt, true),
            Relation::Le => (JmpOp::Jgt, false),
            Relation::Ge => (JmpOp::Jge, true),
            Relation::Lt => (JmpOp::Jge, false),
            Relation::AnyBitSet => (JmpOp::Jset, true),
            Relation::NoBitSet => (JmpOp::Jset, false),
        };
        op.eval(a, b) == taken
    }
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cond {
    /// The conditional jump (or `div x` / `mod x`) that decided.
    pub pc: Pc,
    pub lhs: Operand,
    pub rel: Relation,
    pub rhs: Operand,
}

impl Cond {
    /// Does the condition hold on an input whose words are `value(field)`?
    /// `None` where an expression divides by zero (an earlier condition of
    /// the path excludes it).
    pub fn holds(&self, value: impl Fn(Field) -> u32) -> Option<bool> {
        Some(self.rel.holds(self.lhs.eval(&value)?, self.rhs.eval(&value)?))
    }
}

impl std::fmt::Display for Cond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lhs, rhs) = (&self.lhs, &self.rhs);
        match self.rel {
            Relation::Eq => write!(f, "{lhs} == {rhs}"),
            Relation::Ne => write!(f, "{lhs} != {rhs}"),
            Relation::Gt => write!(f, "{lhs} > {rhs}"),
            Relation::Le => write!(f, "{lhs} <= {rhs}"),
            Relation::Ge => write!(f, "{lhs} >= {rhs}"),
            Relation::Lt => write!(f, "{lhs} < {rhs}"),
            Relation::AnyBitSet => write!(f, "({lhs} & {rhs}) != 0"),
            Relation::NoBitSet => write!(f, "({lhs} & {rhs}) == 0"),
        }
    }
}

/// One side of a recorded condition: the domain's value, or (where the
/// domain has only [`Val::Unknown`]) an expression of the exploration's
/// [`Arena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Val(Val),
    Expr(u32),
}

/// A condition as recorded along a path (expressions as arena ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pc: Pc,
    lhs: Side,
    rel: Relation,
    rhs: Side,
}

/// How one path ended.
#[derive(Debug, Clone)]
pub struct PathEnd<'a> {
    /// The returned value: known, or computed by `ret a`.
    pub ret: Val,
    /// The returned value as recorded: an expression of the arena where
    /// `ret` is computed (recording only).
    ret_side: Side,
    /// Fields the undecided branches of this path (and a computed return
    /// value) depend on.
    pub deps: FieldSet,
    /// What the path's undecided branches say about each field (a
    /// division's zero test on the path that returns 0 included).
    pub facts: &'a Facts,
    /// The undecided branches (none unless recording), newest first.
    conds: Option<&'a Rc<CondNode>>,
    /// The expressions they name (recording only).
    arena: Option<&'a Arena>,
}

impl PathEnd<'_> {
    /// Number of undecided branches recorded on this path that say
    /// something (what [`PathEnd::conds_into`] gives).
    pub fn cond_count(&self) -> usize {
        let pins = self.pins();
        self.recorded().filter(|r| !implied(r, &pins)).count()
    }

    fn recorded(&self) -> impl Iterator<Item = &Recorded> {
        std::iter::successors(self.conds.map(|n| &**n), |n| n.older.as_deref()).map(|n| &n.item)
    }

    /// The fields the path pins to one value, by [`Field::index`]: the
    /// oldest recorded `field == k` of each (its pc and `k`).
    fn pins(&self) -> [Option<(Pc, u32)>; 16] {
        let mut pins = [None; 16];
        // Newest first: the oldest pin of a field is written last.
        for r in self.recorded() {
            let pin = match (r.lhs, r.rel, r.rhs) {
                (Side::Val(Val::Exact(f)), Relation::Eq, Side::Val(Val::Known(k)))
                | (Side::Val(Val::Known(k)), Relation::Eq, Side::Val(Val::Exact(f))) => Some((f, k)),
                _ => None,
            };
            if let Some((f, k)) = pin {
                if let Some(slot) = pins.get_mut(f.index() as usize) {
                    *slot = Some((r.pc, k));
                }
            }
        }
        pins
    }

    /// The size of every expression the recorded branches print (the sum of
    /// their tree sizes, saturating), before building them.
    pub fn expr_nodes(&self) -> u64 {
        if self.arena.is_none_or(|a| !a.named_any()) {
            return 0;
        }
        let size = |side: Side| match (side, self.arena) {
            (Side::Expr(id), Some(arena)) => arena.size(id),
            _ => 0,
        };
        self.recorded().fold(size(self.ret_side), |n, r| n.saturating_add(size(r.lhs)).saturating_add(size(r.rhs)))
    }

    /// The value returned as an expression: a word or masked word as
    /// such, a computed value as the expression the exploration recorded
    /// (`None` when it did not record).
    pub fn ret_expr(&self) -> Option<Expr> {
        match (self.ret_side, self.arena) {
            (Side::Expr(id), Some(arena)) => Some(arena.expr(id)),
            (Side::Val(v), _) => Expr::of_val(v),
            (Side::Expr(_), None) => None,
        }
    }

    /// Replaces `out` with the recorded undecided branches, in order.
    pub fn conds_into(&self, out: &mut Vec<Cond>) {
        out.clear();
        let operand = |side: Side| match (side, self.arena) {
            (Side::Val(Val::Known(k)), _) => Operand::Const(k),
            (Side::Val(Val::Exact(f)), _) => Operand::Field(f),
            (Side::Val(Val::Masked { field, mask }), _) => Operand::Masked { field, mask },
            (Side::Expr(id), Some(arena)) => Operand::Expr(arena.expr(id)),
            // Not recorded: recording names every unknown value by its id.
            (Side::Val(Val::Unknown(_)), _) | (Side::Expr(_), None) => Operand::Expr(Expr::unknown()),
        };
        let pins = self.pins();
        out.extend(self.recorded().filter(|r| !implied(r, &pins)).map(|r| Cond {
            pc: r.pc,
            lhs: operand(r.lhs),
            rel: r.rel,
            rhs: operand(r.rhs),
        }));
        out.reverse();
    }
}

/// Whether recorded branch `r` says nothing a pin of its path (`pins`,
/// [`PathEnd::pins`]) does not: it compares one pinned field (whole or
/// masked) with a constant, it holds at the pinned value, and it is not
/// the pin itself. On a libseccomp allow-list of `n` values of one
/// argument, the path to the `i`-th value is its `== k` alone rather than
/// the `i - 1` `!=` before it, so explaining the list reports `O(n)`
/// conditions, not `O(n^2)`. A branch that fails at the pinned value (a
/// path the exploration could not prove impossible) is kept.
fn implied(r: &Recorded, pins: &[Option<(Pc, u32)>; 16]) -> bool {
    // The side's value with `field` pinned to `v`; `None` for any other side.
    let value = |side: Side, field: Field, v: u32| match side {
        Side::Val(Val::Known(k)) => Some(k),
        Side::Val(Val::Exact(f)) if f == field => Some(v),
        Side::Val(Val::Masked { field: f, mask }) if f == field => Some(v & mask),
        _ => None,
    };
    let field = match (r.lhs, r.rhs) {
        (Side::Val(Val::Exact(f) | Val::Masked { field: f, .. }), _)
        | (_, Side::Val(Val::Exact(f) | Val::Masked { field: f, .. })) => f,
        _ => return false,
    };
    let Some(Some((pin_pc, v))) = pins.get(field.index() as usize).copied() else { return false };
    if pin_pc == r.pc {
        return false;
    }
    match (value(r.lhs, field, v), value(r.rhs, field, v)) {
        (Some(a), Some(b)) => r.rel.holds(a, b),
        _ => false,
    }
}

/// A recorded condition and the older ones of the same path.
type CondNode = Node<Recorded>;

/// What an exploration keeps beside the domain state: nothing (`()`, the
/// analysis' refinements: the same code as without it), or the
/// expressions of A, X and `M[]` ([`Arena`], recording conditions).
trait Track {
    type Regs: Copy;
    const RECORD: bool;
    fn entry(&mut self) -> Self::Regs;
    /// After [`step`] moved the domain from A, X = `before` to `state`.
    fn step(&mut self, op: Option<Op>, regs: &mut Self::Regs, before: (Val, Val), state: &State);
    fn sync(&mut self, regs: &mut Self::Regs, state: &State);
    /// A side of a condition: `v`, which is A (`x`: X) in `regs`.
    fn side(&mut self, regs: &Self::Regs, v: Val, x: bool) -> Side;
    fn arena(&self) -> Option<&Arena>;
}

impl Track for () {
    type Regs = ();
    const RECORD: bool = false;
    #[inline(always)]
    fn entry(&mut self) {}
    #[inline(always)]
    fn step(&mut self, _: Option<Op>, _: &mut (), _: (Val, Val), _: &State) {}
    #[inline(always)]
    fn sync(&mut self, _: &mut (), _: &State) {}
    #[inline(always)]
    fn side(&mut self, _: &(), v: Val, _: bool) -> Side {
        Side::Val(v)
    }
    #[inline(always)]
    fn arena(&self) -> Option<&Arena> {
        None
    }
}

impl Track for Arena {
    type Regs = Shadow;
    const RECORD: bool = true;
    fn entry(&mut self) -> Shadow {
        Arena::entry(self)
    }
    fn step(&mut self, op: Option<Op>, regs: &mut Shadow, before: (Val, Val), state: &State) {
        Arena::step(self, op, regs, before, state);
    }
    fn sync(&mut self, regs: &mut Shadow, state: &State) {
        Arena::sync(self, regs, state);
    }
    fn side(&mut self, regs: &Shadow, v: Val, x: bool) -> Side {
        let id = if x { regs.x } else { regs.a };
        match v {
            // A slot the domain does not know exactly is never EXACT.
            Val::Unknown(_) if id != EXACT => {
                self.mark_named();
                Side::Expr(id)
            }
            v => Side::Val(v),
        }
    }
    fn arena(&self) -> Option<&Arena> {
        Some(self)
    }
}

fn push_cond(list: &Option<Rc<CondNode>>, cond: Recorded) -> Option<Rc<CondNode>> {
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
struct Pending<R> {
    pc: usize,
    state: State,
    regs: R,
    facts: Facts,
    conds: Option<Rc<CondNode>>,
}

/// Explores every feasible path of `ops` under `env`, calling `visit` at
/// each path's end (it returns false to stop). The visited ends are real
/// paths whatever the outcome. Records no condition.
pub fn explore(
    ops: &[Option<Op>],
    env: &Env,
    limits: Limits,
    work: &mut Work,
    visit: impl FnMut(PathEnd<'_>) -> bool,
) -> Outcome {
    explore_with(ops, env, &mut (), limits, work, visit)
}

/// [`explore`] recording each path's undecided branches
/// ([`PathEnd::conds_into`]), with the expressions they compare built in
/// `arena` (cleared first: one exploration's nodes, at most three per step).
pub fn explore_recorded(
    ops: &[Option<Op>],
    env: &Env,
    arena: &mut Arena,
    limits: Limits,
    work: &mut Work,
    visit: impl FnMut(PathEnd<'_>) -> bool,
) -> Outcome {
    arena.clear();
    explore_with(ops, env, arena, limits, work, visit)
}

fn explore_with<T: Track>(
    ops: &[Option<Op>],
    env: &Env,
    track: &mut T,
    limits: Limits,
    work: &mut Work,
    mut visit: impl FnMut(PathEnd<'_>) -> bool,
) -> Outcome {
    let regs = track.entry();
    let mut stack = vec![Pending { pc: 0, state: State::entry(), regs, facts: Facts::default(), conds: None }];
    let mut steps = 0usize;
    let mut paths = 0usize;
    while let Some(Pending { mut pc, mut state, mut regs, mut facts, mut conds }) = stack.pop() {
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
            let before = regs;
            let vals = (state.a, state.x);
            let step = step(pc, *op, &mut state, env);
            // Jumps and returns change no register.
            if T::RECORD && !matches!(op, Some(Op::Jmp { .. } | Op::Ja { .. } | Op::RetK { .. } | Op::RetA)) {
                track.step(*op, &mut regs, vals, &state);
            }
            let mut end = |ret: Val,
                           ret_side: Side,
                           state: &State,
                           facts: &Facts,
                           conds: &Option<Rc<CondNode>>,
                           arena: Option<&Arena>| {
                paths += 1;
                let deps = state.ctrl.union(ret.deps());
                visit(PathEnd { ret, ret_side, deps, facts, conds: conds.as_ref(), arena })
            };
            match step {
                Step::Goto(t) => pc = t,
                Step::Return(v) => {
                    // A computed value is A's (`ret a`).
                    let side = if T::RECORD { track.side(&regs, v, false) } else { Side::Val(v) };
                    if !end(v, side, &state, &facts, &conds, track.arena()) {
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
                        // The sides: A, and X unless a constant.
                        let (lhs, rhs) = if T::RECORD {
                            (track.side(&before, cmp.lhs, false), track.side(&before, cmp.rhs, true))
                        } else {
                            (Side::Val(cmp.lhs), Side::Val(cmp.rhs))
                        };
                        let cond = |holds: bool| Recorded { pc: Pc(pc), lhs, rel: Relation::of(cmp.op, holds), rhs };
                        if feasible_t {
                            let mut st = state;
                            let mut regs_t = regs;
                            if let (JmpOp::Jeq, known @ Val::Known(_)) = (cmp.op, cmp.rhs) {
                                st.a = known;
                                if T::RECORD {
                                    track.sync(&mut regs_t, &st);
                                }
                            }
                            let conds_t = if T::RECORD { push_cond(&conds, cond(true)) } else { None };
                            if feasible_f {
                                stack.push(Pending {
                                    pc: taken,
                                    state: st,
                                    regs: regs_t,
                                    facts: facts_t,
                                    conds: conds_t,
                                });
                            } else {
                                (pc, state, regs, facts, conds) = (taken, st, regs_t, facts_t, conds_t);
                                continue;
                            }
                        }
                        if !feasible_f {
                            break;
                        }
                        if T::RECORD {
                            conds = push_cond(&conds, cond(false));
                        }
                        pc = not_taken;
                    }
                },
                Step::DivByX { divisor, next } => {
                    // `if X == 0 return 0`, emitted before `div x` / `mod x`.
                    let zero = Val::Known(DIV_BY_ZERO_RET);
                    let is_zero = Cmp { op: JmpOp::Jeq, lhs: divisor, rhs: Val::Known(0) };
                    match facts.decide(is_zero) {
                        Some(true) => {
                            if !end(zero, Side::Val(zero), &state, &facts, &conds, track.arena()) {
                                return Outcome::Stopped;
                            }
                            break;
                        }
                        Some(false) => pc = next,
                        None => {
                            state.ctrl = state.ctrl.union(divisor.deps());
                            let lhs = if T::RECORD { track.side(&before, divisor, true) } else { Side::Val(divisor) };
                            let cond = |holds: bool| Recorded {
                                pc: Pc(pc),
                                lhs,
                                rel: Relation::of(JmpOp::Jeq, holds),
                                rhs: Side::Val(Val::Known(0)),
                            };
                            // Rare (division by X): the zero path's facts are a copy.
                            let mut zero_facts = facts.clone();
                            zero_facts.assume(is_zero, true);
                            let go_on = if T::RECORD {
                                let zero_conds = push_cond(&conds, cond(true));
                                let go_on = end(zero, Side::Val(zero), &state, &zero_facts, &zero_conds, track.arena());
                                conds = push_cond(&conds, cond(false));
                                go_on
                            } else {
                                end(zero, Side::Val(zero), &state, &zero_facts, &conds, None)
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
        let outcome = explore(&ops, &env, limits, &mut work, |_| {
            paths += 1;
            true
        });
        assert_eq!(outcome, Outcome::Complete);
        assert_eq!(paths, 902);
        // Without the facts every rule's tests would be independent and the
        // paths would multiply; a tiny budget must report incompleteness.
        let tiny = Limits { max_steps: 1000, max_paths: usize::MAX };
        assert_eq!(explore(&ops, &env, tiny, &mut work, |_| true), Outcome::Truncated);
        let few = Limits { max_steps: usize::MAX, max_paths: 10 };
        assert_eq!(explore(&ops, &env, few, &mut work, |_| true), Outcome::Truncated);
        // The run's budget is shared: once spent, every exploration says so.
        let mut spent = Work { used: 0, max: 500 };
        assert_eq!(explore(&ops, &env, limits, &mut spent, |_| true), Outcome::Exhausted);
    }

    /// Every path's conditions as text, with the number it was charged.
    fn recorded_paths(text: &str) -> Vec<(usize, Vec<String>)> {
        let (_, insns) = cbpf::text::parse_auto(text.as_bytes()).unwrap();
        let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
        let ops: Vec<Option<Op>> = prog.insns().iter().map(|i| i.op()).collect();
        let env = Env::new(Some(16), Some(0xc000_003e), 0xc000_003e);
        let limits = Limits { max_steps: usize::MAX, max_paths: usize::MAX };
        let (mut arena, mut work) = (Arena::default(), Work { used: 0, max: u64::MAX });
        let mut paths = Vec::new();
        let mut conds = Vec::new();
        explore_recorded(&ops, &env, &mut arena, limits, &mut work, |end| {
            end.conds_into(&mut conds);
            paths.push((end.cond_count(), conds.iter().map(|c| c.to_string()).collect()));
            true
        });
        paths
    }

    /// A path that pins a word with `==` reports that pin alone, not the
    /// `!=` and the masked and order tests of the same word before it that
    /// the pinned value passes (an allow-list of n values: O(n) conditions,
    /// not O(n^2)); a test of another word, and the path that pins nothing,
    /// keep theirs.
    #[test]
    fn a_pinned_word_drops_the_conditions_its_value_implies() {
        let paths = recorded_paths(
            "ld [16]\njeq #1, lok, l2\nl2: jeq #2, lok, l3\nl3: jset #8, lno, l4\nl4: jgt #100, lno, l5\n\
             l5: jeq #7, lx, lno\nlx: ld [24]\njeq #1, lok, lno\nlok: ret #0x7fff0000\nlno: ret #0x50001\n",
        );
        let text: Vec<(usize, String)> = paths.iter().map(|(n, c)| (*n, c.join(" && "))).collect();
        let want = [
            "args[0].lo == 0x1",
            "args[0].lo == 0x2",
            "args[0].lo != 0x1 && args[0].lo != 0x2 && (args[0].lo & 0x8) != 0",
            "args[0].lo != 0x1 && args[0].lo != 0x2 && (args[0].lo & 0x8) == 0 && args[0].lo > 0x64",
            "args[0].lo == 0x7 && args[1].lo == 0x1",
            "args[0].lo == 0x7 && args[1].lo != 0x1",
            "args[0].lo != 0x1 && args[0].lo != 0x2 && (args[0].lo & 0x8) == 0 && args[0].lo <= 0x64 && args[0].lo != 0x7",
        ];
        let mut got: Vec<String> = text.iter().map(|(_, t)| t.clone()).collect();
        got.sort();
        let mut want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
        want.sort();
        assert_eq!(got, want);
        // What each path is charged is what it reports.
        assert!(paths.iter().all(|(n, c)| *n == c.len()), "{paths:?}");
    }
}
