//! Asking the SAT solver whether a literal of the graph can be true.
//!
//! The cone of the literal is encoded with Tseitin's three clauses per
//! `and` node, the literal asserted, and [`batsat`] (a CDCL solver in the
//! MiniSat line, pure Rust) searches under a conflict budget: its
//! callbacks count learnt clauses (one per conflict) and ask it to stop
//! past the budget, and between rounds of conflicts its propagations are
//! held to a multiple of that budget; either is reported as undecided.

use batsat::{lbool, Callbacks, ClauseKind, Lit as SLit, SolverInterface, SolverOpts, Var};

use crate::aig::{Aig, Lit, Node, FALSE, TRUE};

/// Conflicts per round of search.
const ROUND: u64 = 64;

/// Propagations allowed per allowed conflict.
pub(crate) const PROPAGATIONS_PER_CONFLICT: u64 = 32;

/// Counts conflicts and stops the search past `limit`.
#[derive(Debug)]
struct Budgeted {
    conflicts: u64,
    limit: u64,
}

impl Callbacks for Budgeted {
    fn on_new_clause(&mut self, _: &[SLit], kind: ClauseKind) {
        if matches!(kind, ClauseKind::Learnt) {
            self.conflicts += 1;
        }
    }

    fn stop(&self) -> bool {
        self.conflicts >= self.limit
    }
}

/// What the solver said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// No input makes the literal true.
    Unsat,
    /// These 16 words do (inputs outside the cone are 0).
    Sat([u32; 16]),
    /// The conflict budget ran out.
    OutOfConflicts,
    /// The propagations allowed by the conflict budget ran out.
    OutOfPropagations,
    /// The encoding would exceed the clause budget.
    OutOfClauses,
}

/// Work done, for the statistics.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spent {
    pub conflicts: u64,
    pub clauses: u64,
}

/// Is there an input for which `goal` is true?
pub(crate) fn solve(aig: &Aig, goal: Lit, max_conflicts: u64, max_clauses: u64) -> (Answer, Spent) {
    if goal == FALSE {
        return (Answer::Unsat, Spent::default());
    }
    if goal == TRUE {
        return (Answer::Sat([0; 16]), Spent::default());
    }
    let mut solver = batsat::Solver::new(SolverOpts::default(), Budgeted { conflicts: 0, limit: max_conflicts });
    // Node index -> solver variable, for the cone of `goal`.
    let mut var: Vec<Option<Var>> = vec![None; aig.len()];
    let mut inputs: Vec<(usize, Var)> = Vec::new();
    let mut stack = vec![goal >> 1];
    let mut clauses: u64 = 0;
    let mut clause = Vec::with_capacity(3);
    let lit_of = |var: &[Option<Var>], l: Lit| -> Option<SLit> {
        var.get((l >> 1) as usize).copied().flatten().map(|v| SLit::new(v, l & 1 == 0))
    };
    // Iterative post-order: a node is encoded once both children are.
    while let Some(&n) = stack.last() {
        if var.get(n as usize).copied().flatten().is_some() {
            stack.pop();
            continue;
        }
        match aig.node(n << 1) {
            // Never in a cone: `Aig::and` folds constant operands and a
            // constant goal returned above. Kept exact all the same (a
            // variable held false), its one unit clause not counted.
            Node::Const => {
                let v = solver.new_var_default();
                clause.clear();
                clause.push(SLit::new(v, false));
                solver.add_clause_reuse(&mut clause);
                if let Some(slot) = var.get_mut(n as usize) {
                    *slot = Some(v);
                }
                stack.pop();
            }
            Node::Input(i) => {
                let v = solver.new_var_default();
                inputs.push((usize::from(i), v));
                if let Some(slot) = var.get_mut(n as usize) {
                    *slot = Some(v);
                }
                stack.pop();
            }
            Node::And(a, b) => {
                let (la, lb) = (lit_of(&var, a), lit_of(&var, b));
                match (la, lb) {
                    (Some(la), Some(lb)) => {
                        if clauses + 3 > max_clauses {
                            return (Answer::OutOfClauses, Spent { conflicts: 0, clauses });
                        }
                        let v = solver.new_var_default();
                        let out = SLit::new(v, true);
                        for c in [[!out, la].as_slice(), [!out, lb].as_slice(), [out, !la, !lb].as_slice()] {
                            clause.clear();
                            clause.extend_from_slice(c);
                            solver.add_clause_reuse(&mut clause);
                        }
                        clauses += 3;
                        if let Some(slot) = var.get_mut(n as usize) {
                            *slot = Some(v);
                        }
                        stack.pop();
                    }
                    _ => {
                        if la.is_none() {
                            stack.push(a >> 1);
                        }
                        if lb.is_none() {
                            stack.push(b >> 1);
                        }
                    }
                }
            }
        }
    }
    let Some(g) = lit_of(&var, goal) else { return (Answer::Unsat, Spent { conflicts: 0, clauses }) };
    clause.clear();
    clause.push(g);
    solver.add_clause_reuse(&mut clause);
    // Rounds of ROUND conflicts: between rounds the solver's propagations
    // are held to PROPAGATIONS_PER_CONFLICT per allowed conflict, since a
    // conflict on long learnt clauses (multiplier chains) can cost
    // seconds, which the conflict count alone does not see.
    let max_propagations = max_conflicts.saturating_mul(PROPAGATIONS_PER_CONFLICT);
    let mut answer;
    loop {
        let limit = solver.cb().conflicts.saturating_add(ROUND).min(max_conflicts);
        solver.cb_mut().limit = limit;
        answer = solver.solve_limited(&[]);
        if answer != lbool::UNDEF
            || solver.cb().conflicts >= max_conflicts
            || solver.num_propagations() >= max_propagations
        {
            break;
        }
    }
    let spent = Spent { conflicts: solver.num_conflicts(), clauses };
    if answer == lbool::FALSE {
        return (Answer::Unsat, spent);
    }
    if answer != lbool::TRUE {
        let why =
            if solver.cb().conflicts >= max_conflicts { Answer::OutOfConflicts } else { Answer::OutOfPropagations };
        return (why, spent);
    }
    let mut words = [0u32; 16];
    for (i, v) in inputs {
        if solver.value_var(v) == lbool::TRUE {
            if let Some(w) = words.get_mut(i / 32) {
                *w |= 1 << (i % 32);
            }
        }
    }
    (Answer::Sat(words), spent)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::aig::{konst, not, Bv};

    /// A goal's model makes the goal true when the graph is evaluated on
    /// it (words and bits where the graph has them).
    #[test]
    fn a_model_satisfies_its_goal() {
        let mut g = Aig::new(1 << 20);
        let (x, y) = (g.input_word(4), g.input_word(9));
        // 3 * x + y == 0x1234_5679 with x > 0x1000 and y odd.
        let (three, target) = (konst(3), konst(0x1234_5679));
        let t = g.mul(&x, &three);
        let sum = g.add(&t, &y);
        let eq = g.eq(&sum, &target);
        let big = g.ugt(&x, &konst(0x1000));
        let odd = y[0];
        let both = g.and(eq, big);
        let goal = g.and(both, odd);
        let (answer, spent) = solve(&g, goal, 1 << 16, 1 << 23);
        let Answer::Sat(words) = answer else { panic!("{answer:?}") };
        let v = g.values(&words);
        assert!(Aig::bit(&v, goal), "{words:x?}");
        assert_eq!(words[4].wrapping_mul(3).wrapping_add(words[9]), 0x1234_5679);
        assert!(words[4] > 0x1000 && words[9] & 1 == 1);
        // Words outside the goal's cone are 0.
        assert!(words.iter().enumerate().all(|(i, &w)| w == 0 || i == 4 || i == 9));
        assert!(spent.clauses > 0);
    }

    /// An identity the graph does not fold is proved by the solver.
    #[test]
    fn an_identity_is_unsatisfiable_to_break() {
        let mut g = Aig::new(1 << 20);
        let (x, y) = (g.input_word(0), g.input_word(1));
        // (x ^ y) + ((x & y) << 1) == x + y
        let (xo, xa) = (g.xor_bv(&x, &y), g.and_bv(&x, &y));
        let carry = g.shift(&xa, &konst(1), true);
        let lhs = g.add(&xo, &carry);
        let rhs = g.add(&x, &y);
        let goal = not(g.eq(&lhs, &rhs));
        assert!(goal != FALSE, "folded: the solver is not asked");
        assert_eq!(solve(&g, goal, 1 << 16, 1 << 23).0, Answer::Unsat);
        assert_eq!(solve(&g, FALSE, 0, 0).0, Answer::Unsat);
        assert_eq!(solve(&g, TRUE, 0, 0).0, Answer::Sat([0; 16]));
    }

    /// `x * y != y * x` on bytes: true never, and hard for the solver.
    fn commuted_products(g: &mut Aig) -> Lit {
        let byte = konst(0xff);
        let (x, y): (Bv, Bv) = (g.input_word(4), g.input_word(5));
        let (x, y) = (g.and_bv(&x, &byte), g.and_bv(&y, &byte));
        let (p, q) = (g.mul(&x, &y), g.mul(&y, &x));
        not(g.eq(&p, &q))
    }

    /// The conflict budget stops the search at exactly that many
    /// conflicts; past a round of them, a search whose conflicts each
    /// propagate more than [`PROPAGATIONS_PER_CONFLICT`] times stops on
    /// the propagations; the clause budget stops the encoding.
    #[test]
    fn budgets_stop_the_search() {
        let mut g = Aig::new(1 << 20);
        let goal = commuted_products(&mut g);
        let (answer, spent) = solve(&g, goal, 10, 1 << 23);
        assert_eq!((answer, spent.conflicts), (Answer::OutOfConflicts, 10));
        let (answer, spent) = solve(&g, goal, 100, 1 << 23);
        assert_eq!(answer, Answer::OutOfPropagations);
        assert!(spent.conflicts >= ROUND && spent.conflicts < 100, "{spent:?}");
        let (answer, spent) = solve(&g, goal, 10, 300);
        assert_eq!(answer, Answer::OutOfClauses);
        assert!(spent.clauses <= 300 && spent.clauses + 3 > 300, "{spent:?}");
    }
}
