//! An and-inverter graph with structural hashing, and the 32-bit
//! bit-vector circuits the classic ALU and jumps need.
//!
//! A literal is `2 * node + negated`; node 0 is the constant false, so
//! literal 0 is false and 1 is true. Inputs are the 512 bits of the 16
//! `struct seccomp_data` words (word `w`, bit `b`: input `32 * w + b`),
//! created on first use. Every `and` first folds constants, equal and
//! complementary operands, then looks the pair up in the structural hash:
//! a circuit built twice is one circuit, so two filters computing the same
//! value share their nodes and the miter sees it.
//!
//! Past `max_nodes` no node is created: `and` returns false and the graph
//! is marked [`Aig::overflowed`], which the caller reports as the clause
//! budget (every node becomes three clauses).

use std::collections::HashMap;

/// A literal: `2 * node + negated`.
pub(crate) type Lit = u32;

pub(crate) const FALSE: Lit = 0;
pub(crate) const TRUE: Lit = 1;

/// A 32-bit value, bit 0 first.
pub(crate) type Bv = [Lit; 32];

/// Bits of every input word.
const INPUT_BITS: usize = 16 * 32;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Node {
    Const,
    /// Input bit `32 * word + bit`.
    Input(u16),
    And(Lit, Lit),
}

#[derive(Debug)]
pub(crate) struct Aig {
    nodes: Vec<Node>,
    strash: HashMap<(Lit, Lit), Lit>,
    inputs: Vec<Lit>,
    max_nodes: usize,
    overflowed: bool,
}

pub(crate) fn not(l: Lit) -> Lit {
    l ^ 1
}

impl Aig {
    pub(crate) fn new(max_nodes: usize) -> Aig {
        Aig {
            nodes: vec![Node::Const],
            strash: HashMap::new(),
            inputs: vec![FALSE; INPUT_BITS],
            max_nodes,
            overflowed: false,
        }
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn node(&self, lit: Lit) -> Node {
        self.nodes.get((lit >> 1) as usize).copied().unwrap_or(Node::Const)
    }

    fn push(&mut self, node: Node) -> Lit {
        if self.nodes.len() >= self.max_nodes {
            self.overflowed = true;
            return FALSE;
        }
        self.nodes.push(node);
        ((self.nodes.len() - 1) as u32) << 1
    }

    /// Input bit `i` (`32 * word + bit`).
    pub(crate) fn input(&mut self, i: usize) -> Lit {
        match self.inputs.get(i).copied() {
            Some(l) if l != FALSE => l,
            Some(_) => {
                let l = self.push(Node::Input(i as u16));
                if let Some(slot) = self.inputs.get_mut(i) {
                    *slot = l;
                }
                l
            }
            None => FALSE,
        }
    }

    /// The 32 input bits of word `w` (offset `4 * w`).
    pub(crate) fn input_word(&mut self, w: usize) -> Bv {
        let mut out = [FALSE; 32];
        for (b, o) in out.iter_mut().enumerate() {
            *o = self.input(32 * w + b);
        }
        out
    }

    pub(crate) fn and(&mut self, a: Lit, b: Lit) -> Lit {
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        if a == FALSE || a == not(b) {
            return FALSE;
        }
        if a == TRUE || a == b {
            return b;
        }
        if let Some(&l) = self.strash.get(&(a, b)) {
            return l;
        }
        let l = self.push(Node::And(a, b));
        if l != FALSE {
            self.strash.insert((a, b), l);
        }
        l
    }

    pub(crate) fn or(&mut self, a: Lit, b: Lit) -> Lit {
        not(self.and(not(a), not(b)))
    }

    pub(crate) fn xor(&mut self, a: Lit, b: Lit) -> Lit {
        if a == b {
            return FALSE;
        }
        if a == not(b) {
            return TRUE;
        }
        let (p, q) = (self.and(a, not(b)), self.and(not(a), b));
        self.or(p, q)
    }

    /// `c ? a : b`.
    pub(crate) fn ite(&mut self, c: Lit, a: Lit, b: Lit) -> Lit {
        if a == b || c == TRUE {
            return a;
        }
        if c == FALSE {
            return b;
        }
        let (p, q) = (self.and(c, a), self.and(not(c), b));
        self.or(p, q)
    }

    pub(crate) fn ite_bv(&mut self, c: Lit, a: &Bv, b: &Bv) -> Bv {
        let mut out = *b;
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = self.ite(c, x, y);
        }
        out
    }

    /// Bitwise `op` of two vectors.
    fn zip(&mut self, a: &Bv, b: &Bv, op: fn(&mut Aig, Lit, Lit) -> Lit) -> Bv {
        let mut out = [FALSE; 32];
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = op(self, x, y);
        }
        out
    }

    pub(crate) fn and_bv(&mut self, a: &Bv, b: &Bv) -> Bv {
        self.zip(a, b, Aig::and)
    }

    pub(crate) fn or_bv(&mut self, a: &Bv, b: &Bv) -> Bv {
        self.zip(a, b, Aig::or)
    }

    pub(crate) fn xor_bv(&mut self, a: &Bv, b: &Bv) -> Bv {
        self.zip(a, b, Aig::xor)
    }

    /// `a + b + carry` (mod 2^32).
    fn add_carry(&mut self, a: &Bv, b: &Bv, mut carry: Lit) -> Bv {
        let mut out = [FALSE; 32];
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            let t = self.xor(x, y);
            *o = self.xor(t, carry);
            let (g, p) = (self.and(x, y), self.and(t, carry));
            carry = self.or(g, p);
        }
        out
    }

    pub(crate) fn add(&mut self, a: &Bv, b: &Bv) -> Bv {
        self.add_carry(a, b, FALSE)
    }

    pub(crate) fn sub(&mut self, a: &Bv, b: &Bv) -> Bv {
        let nb = b.map(not);
        self.add_carry(a, &nb, TRUE)
    }

    pub(crate) fn mul(&mut self, a: &Bv, b: &Bv) -> Bv {
        let mut acc = konst(0);
        for (i, &bi) in b.iter().enumerate() {
            if bi == FALSE {
                continue;
            }
            let mut row = [FALSE; 32];
            for (j, r) in row.iter_mut().enumerate().skip(i) {
                let aj = a.get(j - i).copied().unwrap_or(FALSE);
                *r = self.and(aj, bi);
            }
            acc = self.add(&acc, &row);
        }
        acc
    }

    /// Unsigned quotient and remainder (restoring division); meaningless
    /// when `b` is zero, which the caller guards.
    pub(crate) fn divmod(&mut self, a: &Bv, b: &Bv) -> (Bv, Bv) {
        // 33-bit remainder: after the shift it may reach 2 * b - 1.
        let mut r = [FALSE; 33];
        let mut q = [FALSE; 32];
        for (qi, &ai) in q.iter_mut().zip(a).rev() {
            // shifted = (r << 1) | a[i]
            let shifted: [Lit; 33] =
                std::array::from_fn(|j| if j == 0 { ai } else { r.get(j - 1).copied().unwrap_or(FALSE) });
            // diff = shifted - b; the carry out is set when shifted >= b.
            let mut diff = [FALSE; 33];
            let mut carry = TRUE;
            for (j, (d, &x)) in diff.iter_mut().zip(&shifted).enumerate() {
                let y = not(b.get(j).copied().unwrap_or(FALSE));
                let t = self.xor(x, y);
                *d = self.xor(t, carry);
                let (g, p) = (self.and(x, y), self.and(t, carry));
                carry = self.or(g, p);
            }
            *qi = carry;
            for ((rj, &dj), &sj) in r.iter_mut().zip(&diff).zip(&shifted) {
                *rj = self.ite(carry, dj, sj);
            }
        }
        let rem: Bv = std::array::from_fn(|j| r.get(j).copied().unwrap_or(FALSE));
        (q, rem)
    }

    /// `a << (b & 31)` (left) or `a >> (b & 31)` (right).
    pub(crate) fn shift(&mut self, a: &Bv, b: &Bv, left: bool) -> Bv {
        let mut cur = *a;
        for (stage, &s) in b.iter().take(5).enumerate() {
            let by = 1usize << stage;
            let mut moved = [FALSE; 32];
            for (i, m) in moved.iter_mut().enumerate() {
                // A source bit past either end (None, or 32 and up) shifts in 0.
                let from = if left { i.checked_sub(by) } else { Some(i + by) };
                *m = from.and_then(|j| cur.get(j).copied()).unwrap_or(FALSE);
            }
            cur = self.ite_bv(s, &moved, &cur);
        }
        cur
    }

    pub(crate) fn eq(&mut self, a: &Bv, b: &Bv) -> Lit {
        let mut acc = TRUE;
        for (&x, &y) in a.iter().zip(b) {
            let d = self.xor(x, y);
            acc = self.and(acc, not(d));
        }
        acc
    }

    /// Unsigned `a > b`.
    pub(crate) fn ugt(&mut self, a: &Bv, b: &Bv) -> Lit {
        let mut g = FALSE;
        for (&x, &y) in a.iter().zip(b) {
            let d = self.xor(x, y);
            g = self.ite(d, x, g);
        }
        g
    }

    pub(crate) fn is_zero(&mut self, a: &Bv) -> Lit {
        self.eq(a, &konst(0))
    }

    /// `a & b != 0`.
    pub(crate) fn any_common(&mut self, a: &Bv, b: &Bv) -> Lit {
        let mut acc = FALSE;
        for (&x, &y) in a.iter().zip(b) {
            let t = self.and(x, y);
            acc = self.or(acc, t);
        }
        acc
    }
}

#[cfg(test)]
impl Aig {
    /// Every node's value when the input words are `words`: nodes only
    /// refer to earlier nodes, so one pass in order evaluates them all.
    pub(crate) fn values(&self, words: &[u32; 16]) -> Vec<bool> {
        let mut out: Vec<bool> = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let v = match *node {
                Node::Const => false,
                Node::Input(i) => words.get(usize::from(i) / 32).is_some_and(|w| w >> (i % 32) & 1 == 1),
                Node::And(a, b) => Aig::bit(&out, a) && Aig::bit(&out, b),
            };
            out.push(v);
        }
        out
    }

    /// The value of `lit` under `values` (of [`Aig::values`]).
    pub(crate) fn bit(values: &[bool], lit: Lit) -> bool {
        values.get((lit >> 1) as usize).copied().unwrap_or(false) ^ (lit & 1 == 1)
    }

    /// The value of `bv` under `values` (of [`Aig::values`]).
    pub(crate) fn word(values: &[bool], bv: &Bv) -> u32 {
        bv.iter().enumerate().fold(0, |w, (i, &l)| w | u32::from(Aig::bit(values, l)) << i)
    }
}

/// The constant vector `k`.
pub(crate) fn konst(k: u32) -> Bv {
    let mut out = [FALSE; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = if k >> i & 1 == 1 { TRUE } else { FALSE };
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use cbpf::{AluOp, JmpOp};

    /// The value of a constant vector.
    fn value(a: &Bv) -> u32 {
        a.iter().enumerate().fold(0, |v, (i, &l)| match l {
            TRUE => v | 1 << i,
            FALSE => v,
            _ => panic!("not constant"),
        })
    }

    /// On constant operands `a` and `b` every circuit folds to a constant:
    /// that constant is `cbpf`'s op table's evaluation.
    fn check_folds_to_the_op_tables_values(g: &mut Aig, a: u32, b: u32) {
        let (x, y) = (konst(a), konst(b));
        let got = |op: AluOp, g: &mut Aig| -> Option<u32> {
            Some(value(&match op {
                AluOp::Add => g.add(&x, &y),
                AluOp::Sub => g.sub(&x, &y),
                AluOp::Mul => g.mul(&x, &y),
                AluOp::Div => (b != 0).then(|| g.divmod(&x, &y).0)?,
                AluOp::Mod => (b != 0).then(|| g.divmod(&x, &y).1)?,
                AluOp::Or => g.or_bv(&x, &y),
                AluOp::And => g.and_bv(&x, &y),
                AluOp::Xor => g.xor_bv(&x, &y),
                AluOp::Lsh => g.shift(&x, &y, true),
                AluOp::Rsh => g.shift(&x, &y, false),
            }))
        };
        for op in ALU_OPS {
            assert_eq!(got(op, g), op.eval(a, b), "{op:?} {a:#x} {b:#x}");
        }
        let holds = |l: Lit| l == TRUE;
        assert_eq!(holds(g.eq(&x, &y)), JmpOp::Jeq.eval(a, b));
        assert_eq!(holds(g.ugt(&x, &y)), JmpOp::Jgt.eval(a, b));
        assert_eq!(holds(not(g.ugt(&y, &x))), JmpOp::Jge.eval(a, b));
        assert_eq!(holds(g.any_common(&x, &y)), JmpOp::Jset.eval(a, b));
        assert_eq!(value(&g.sub(&konst(0), &x)), a.wrapping_neg());
        // Constants never create a node.
        assert_eq!(g.len(), 1);
    }

    /// Every pair of edge values.
    #[test]
    fn circuits_fold_to_the_op_tables_values_on_edges() {
        let edges = [0, 1, 2, 3, 31, 32, 33, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, u32::MAX, 0x1234_5678, 0xdead_beef];
        let mut g = Aig::new(1 << 20);
        for a in edges {
            for b in edges {
                check_folds_to_the_op_tables_values(&mut g, a, b);
            }
        }
    }

    const ALU_OPS: [AluOp; 10] = [
        AluOp::Add,
        AluOp::Sub,
        AluOp::Mul,
        AluOp::Div,
        AluOp::Mod,
        AluOp::Or,
        AluOp::And,
        AluOp::Xor,
        AluOp::Lsh,
        AluOp::Rsh,
    ];

    /// The same circuits over input words 0 and 1, where nothing folds:
    /// evaluated on edge pairs and on pseudo-random ones (small divisors and
    /// shift counts often), every output is the op table's value. Built
    /// once, so the structural hash serves every later circuit of the
    /// same operands too.
    #[test]
    fn circuits_over_inputs_compute_the_op_tables_values() {
        let mut g = Aig::new(1 << 22);
        let (x, y) = (g.input_word(0), g.input_word(1));
        let alu: Vec<(AluOp, Bv)> = ALU_OPS
            .iter()
            .map(|&op| {
                let out = match op {
                    AluOp::Add => g.add(&x, &y),
                    AluOp::Sub => g.sub(&x, &y),
                    AluOp::Mul => g.mul(&x, &y),
                    AluOp::Div => g.divmod(&x, &y).0,
                    AluOp::Mod => g.divmod(&x, &y).1,
                    AluOp::Or => g.or_bv(&x, &y),
                    AluOp::And => g.and_bv(&x, &y),
                    AluOp::Xor => g.xor_bv(&x, &y),
                    AluOp::Lsh => g.shift(&x, &y, true),
                    AluOp::Rsh => g.shift(&x, &y, false),
                };
                (op, out)
            })
            .collect();
        let jumps = [
            (JmpOp::Jeq, g.eq(&x, &y)),
            (JmpOp::Jgt, g.ugt(&x, &y)),
            (JmpOp::Jge, not(g.ugt(&y, &x))),
            (JmpOp::Jset, g.any_common(&x, &y)),
        ];
        let neg = g.sub(&konst(0), &x);
        let zero = g.is_zero(&x);
        let pick = g.ite_bv(zero, &y, &x);
        assert!(!g.overflowed());
        // No `and` node has a constant operand (the solver's encoding
        // relies on it: constants never enter a cone).
        assert!(g.nodes.iter().all(|n| !matches!(*n, Node::And(a, b) if a <= TRUE || b <= TRUE)));
        let edges = [0, 1, 2, 3, 31, 32, 33, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, u32::MAX, 0x1234_5678];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let random = (0..3000).map(|_| {
            let r = next();
            (r as u32, (r >> 32) as u32 >> (next() % 32))
        });
        let pairs = edges.iter().flat_map(|&a| edges.iter().map(move |&b| (a, b))).chain(random);
        for (a, b) in pairs {
            let mut words = [0u32; 16];
            (words[0], words[1]) = (a, b);
            let v = g.values(&words);
            for (op, out) in &alu {
                if let Some(want) = op.eval(a, b) {
                    assert_eq!(Aig::word(&v, out), want, "{op:?} {a:#x} {b:#x}");
                }
            }
            let lit = |l: Lit| Aig::bit(&v, l);
            for (op, out) in jumps {
                assert_eq!(lit(out), op.eval(a, b), "{op:?} {a:#x} {b:#x}");
            }
            assert_eq!(Aig::word(&v, &neg), a.wrapping_neg());
            assert_eq!(lit(zero), a == 0);
            assert_eq!(Aig::word(&v, &pick), if a == 0 { b } else { a });
        }
    }

    /// Structural hashing: a circuit built twice is the same literal, and
    /// the folds of `and` give the literal itself, never a new node.
    #[test]
    fn a_circuit_built_twice_is_one_circuit() {
        let mut g = Aig::new(1 << 20);
        let (x, y) = (g.input_word(0), g.input_word(1));
        let first = g.add(&x, &y);
        let nodes = g.len();
        assert_eq!(g.add(&x, &y), first);
        assert_eq!(g.len(), nodes);
        let (p, q) = (x[3], y[5]);
        let pq = g.and(p, q);
        assert_eq!(g.and(q, p), pq);
        assert_eq!((g.and(p, p), g.and(p, TRUE), g.and(TRUE, p)), (p, p, p));
        assert_eq!((g.and(p, not(p)), g.and(p, FALSE), g.and(FALSE, p)), (FALSE, FALSE, FALSE));
        assert_eq!((g.xor(p, p), g.xor(p, not(p))), (FALSE, TRUE));
        assert_eq!((g.ite(TRUE, p, q), g.ite(FALSE, p, q), g.ite(q, p, p)), (p, q, p));
        assert_eq!(g.len(), nodes + 1);
    }

    /// Past `max_nodes` no node is made: `and` answers false and the graph
    /// says it overflowed.
    #[test]
    fn the_node_budget_stops_the_graph() {
        let mut g = Aig::new(3);
        let (p, q) = (g.input(0), g.input(1));
        assert!(!g.overflowed());
        assert_eq!((p, q), (2, 4));
        assert_eq!(g.input(2), FALSE);
        assert!(g.overflowed());
        assert_eq!(g.and(p, q), FALSE);
        assert_eq!(g.len(), 3);
        assert_eq!(g.input(600), FALSE);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Random pairs; `b` shifted right by a random amount, so small
        /// divisors and shift counts come often.
        #[test]
        fn circuits_fold_to_the_op_tables_values(a: u32, b: u32, shift in 0u32..32) {
            check_folds_to_the_op_tables_values(&mut Aig::new(1 << 20), a, b >> shift);
        }
    }
}
