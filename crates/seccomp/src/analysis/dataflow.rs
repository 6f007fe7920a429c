//! Forward data flow over a classic program: one abstract [`State`] per
//! instruction, joined where paths meet.
//!
//! Classic jumps only go forward, so visiting instructions in increasing pc
//! order sees every predecessor of an instruction before the instruction
//! itself: one pass computes the fixpoint, in time linear in the program.

use cbpf::Op;

use crate::domain::{step, Env, FieldSet, State, Step, Val, DIV_BY_ZERO_RET};

/// What one data-flow pass learned about the program's results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// The distinct known values returned by reachable `ret`s (and the 0 of
    /// a possible division by zero), ascending.
    pub returns: Vec<u32>,
    /// A reachable return whose value is not known (`ret a`).
    pub computed_return: bool,
    /// Every field an undecided branch, a possibly-zero divisor or a computed
    /// return value depends on.
    pub deps: FieldSet,
}

impl Summary {
    fn add_return(&mut self, v: u32) {
        if let Err(i) = self.returns.binary_search(&v) {
            self.returns.insert(i, v);
        }
    }

    /// The single value every reachable return yields, if there is one.
    pub fn constant(&self) -> Option<u32> {
        match self.returns.as_slice() {
            [v] if !self.computed_return => Some(*v),
            _ => None,
        }
    }
}

/// Reusable buffers for data-flow passes over one program.
#[derive(Debug, Default)]
pub struct Dataflow {
    states: Vec<Option<State>>,
}

impl Dataflow {
    /// The state on entry to `pc` after the last [`Dataflow::run`]; `None`
    /// if no path reaches `pc`.
    pub fn state_at(&self, pc: usize) -> Option<&State> {
        self.states.get(pc).and_then(Option::as_ref)
    }

    /// Runs the pass over `ops` (the decoded rewritten program).
    pub fn run(&mut self, ops: &[Option<Op>], env: &Env) -> Summary {
        self.run_hiding(ops, env, FieldSet::EMPTY)
    }

    /// [`Dataflow::run`], except that undecided branches on `hidden` fields
    /// do not enter the states' control dependences: a value then depends
    /// on a hidden field only through data (what [`super::classes`] needs).
    pub fn run_hiding(&mut self, ops: &[Option<Op>], env: &Env, hidden: FieldSet) -> Summary {
        self.states.clear();
        self.states.resize(ops.len(), None);
        let mut summary = Summary::default();
        if let Some(first) = self.states.first_mut() {
            *first = Some(State::entry());
        }
        for (pc, op) in ops.iter().enumerate() {
            let Some(mut s) = self.states.get(pc).copied().flatten() else { continue };
            match step(pc, *op, &mut s, env) {
                Step::Goto(target) => self.flow(target, &s, &mut summary),
                Step::Branch { cmp, taken, not_taken } => match cmp.eval_known() {
                    Some(true) => self.flow(taken, &s, &mut summary),
                    Some(false) => self.flow(not_taken, &s, &mut summary),
                    None => {
                        let deps = cmp.deps();
                        summary.deps = summary.deps.union(deps);
                        s.ctrl = s.ctrl.union(deps.without(hidden));
                        s.compared = s.compared.union(deps);
                        // (On the taken side of `jeq #k` A is k, but keeping
                        // "A is the field" joins better where paths meet.)
                        self.flow(taken, &s, &mut summary);
                        self.flow(not_taken, &s, &mut summary);
                    }
                },
                Step::DivByX { divisor, next } => {
                    let deps = divisor.deps();
                    summary.deps = summary.deps.union(deps);
                    summary.add_return(DIV_BY_ZERO_RET);
                    s.ctrl = s.ctrl.union(deps.without(hidden));
                    self.flow(next, &s, &mut summary);
                }
                Step::Return(Val::Known(v)) => summary.add_return(v),
                Step::Return(v) => {
                    summary.computed_return = true;
                    summary.deps = summary.deps.union(v.deps()).union(s.ctrl);
                }
            }
        }
        summary
    }

    /// Joins `s` into the state of `target`.
    fn flow(&mut self, target: usize, s: &State, summary: &mut Summary) {
        match self.states.get_mut(target) {
            Some(Some(existing)) => existing.join(s),
            Some(slot @ None) => *slot = Some(*s),
            // Validation keeps jumps inside the program; should one escape,
            // say the result can be anything rather than ignore the path.
            None => {
                summary.computed_return = true;
                summary.deps = FieldSet::ALL;
            }
        }
    }
}
