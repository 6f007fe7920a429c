//! The expressions a filter computes, for the readers of one path
//! (`analyze --explain`, `decompile`): where [`Val::Unknown`] keeps only
//! the set of words a value depends on, an [`Expr`] is the value itself,
//! `(args[0].lo + 0x1)`, `((args[1].lo >> 0x4) & 0xf)`, `-nr`,
//! `(args[0].lo - args[1].lo)`.
//!
//! # Why beside the domain, not in [`Val`]
//!
//! The hot users of [`super::step`] (the fast engine's specialiser, the
//! analysis' data flow and its refinement) copy and join states at every
//! instruction; a `Val::Expr` would grow nothing in size but add a case to
//! every match and join of theirs, and its node store would have to follow
//! them. So expressions are kept only by the one walk that records path
//! conditions (`analysis::paths`, recording), in a [`Shadow`] of A, X and
//! `M[]` beside the domain [`super::State`]: node ids into an [`Arena`]
//! that is hash-consed (a node is stored once, so `A = A + A` repeated
//! costs one node per instruction) and lives for one exploration (at most
//! three nodes per instruction executed, the ALU result and its operands,
//! so its size is bounded by the exploration's step limit). A slot whose value the domain knows exactly
//! is [`EXACT`] and costs nothing: loads, jumps and copies touch no node,
//! only ALU results the domain cannot say do. Other walks are generic over
//! a tracker that does nothing (`()`): their code is the same as before
//! (`cargo xtask callgrind`: every interpreter on every testdata filter
//! 1.000 of before; `analyze` without `--explain` on long_jumps_large
//! 0.96, `run --engine fast` 1.0006, in callgrind's instruction counts).
//!
//! An expression becomes an [`Expr`] (a tree in postfix order: no
//! recursion to print, compare or drop it, whatever its depth) only when a
//! path is reported; its tree size ([`Arena::size`], saturating: a chain
//! of `tax; add x` doubles it per instruction) is charged to the run's
//! budget first (`--max-expr-nodes`).
//!
//! # Semantics
//!
//! The converted program's (`bpf_convert_filter()` in net/core/filter.c,
//! run by `___bpf_prog_run()` in kernel/bpf/core.c), as [`AluOp::eval`]
//! states them: unsigned 32-bit wrapping arithmetic, shifts by the count
//! `& 31` (`<<`, `>>`, logical), `-` of [`Term::Neg`] wrapping. `/` and `%`
//! are unsigned; by a constant never 0 (`bpf_check_classic()` refuses
//! `div #0`), by X only after the path's condition `X != 0`: when X is 0
//! the filter returns 0 (`SECCOMP_RET_KILL_THREAD`), a path of its own with
//! the condition `X == 0`. Whenever the domain knows a register exactly (a
//! constant, a word, a masked word) the shadow takes that form, so an
//! expression is printed only where the domain has none.

use std::collections::HashMap;
use std::sync::Arc;

use cbpf::{AluOp, Op, Src};

use super::{Field, State, Val, MEMWORDS};

/// One item of an [`Expr`] in postfix order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Term {
    /// A constant.
    Const(u32),
    /// The value of a word.
    Field(Field),
    /// The two preceding subtrees, `lhs OP rhs` ([`AluOp::eval`]).
    Alu(AluOp),
    /// `-` of the preceding subtree (wrapping).
    Neg,
    /// A value no seccomp load makes (packet loads, which seccomp
    /// validation refuses): never produced for a validated seccomp program.
    Unknown,
}

/// A value computed from `struct seccomp_data` words: a tree in postfix
/// order (each operator after its operands).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Expr(Arc<[Term]>);

impl Expr {
    /// The terms, in postfix order.
    pub fn terms(&self) -> &[Term] {
        &self.0
    }

    /// A value no seccomp load makes ([`Term::Unknown`]).
    pub fn unknown() -> Expr {
        Expr(Arc::new([Term::Unknown]))
    }

    /// A value the domain knows exactly (a constant, a word, a masked word,
    /// as [`Arena::of_val`] makes its node); `None` for a [`Val::Unknown`].
    pub fn of_val(v: Val) -> Option<Expr> {
        Some(Expr(match v {
            Val::Known(k) => Arc::new([Term::Const(k)]),
            Val::Exact(f) => Arc::new([Term::Field(f)]),
            Val::Masked { field, mask } => Arc::new([Term::Field(field), Term::Const(mask), Term::Alu(AluOp::And)]),
            Val::Unknown(_) => return None,
        }))
    }

    /// Number of terms (the tree's size).
    pub fn size(&self) -> usize {
        self.0.len()
    }

    /// The value on an input whose words are `value(field)`; `None` on a
    /// division by zero (which the path's conditions exclude: the filter
    /// returns 0 there) or an [`Term::Unknown`].
    pub fn eval(&self, value: impl Fn(Field) -> u32) -> Option<u32> {
        let mut stack: Vec<u32> = Vec::with_capacity(8);
        for t in self.0.iter() {
            let v = match *t {
                Term::Const(k) => k,
                Term::Field(f) => value(f),
                Term::Neg => stack.pop()?.wrapping_neg(),
                Term::Alu(op) => {
                    let b = stack.pop()?;
                    let a = stack.pop()?;
                    op.eval(a, b)?
                }
                Term::Unknown => return None,
            };
            stack.push(v);
        }
        match stack.as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// Where the subtree ending at each index starts.
    fn starts(&self) -> Vec<usize> {
        let t = &self.0;
        let mut start = vec![0usize; t.len()];
        let mut open: Vec<usize> = Vec::new();
        for (i, term) in t.iter().enumerate() {
            let s = match term {
                Term::Neg => open.pop().and_then(|c| start.get(c).copied()).unwrap_or(i),
                Term::Alu(_) => {
                    open.pop();
                    open.pop().and_then(|c| start.get(c).copied()).unwrap_or(i)
                }
                _ => i,
            };
            if let Some(slot) = start.get_mut(i) {
                *slot = s;
            }
            open.push(i);
        }
        start
    }

    /// The bits of the value that are the same on every input: `(known,
    /// value)`, `value` zero outside `known`. Exact for constants; through
    /// `&`, `|`, `^`, `+` (the carry into each bit bounded by the sums of
    /// the smallest and of the largest operands) and shifts by a constant;
    /// any other operation on an operand not fully known knows nothing.
    pub fn known_bits(&self) -> (u32, u32) {
        let mut stack: Vec<(u32, u32)> = Vec::with_capacity(8);
        for t in self.0.iter() {
            let v = match *t {
                Term::Const(k) => (u32::MAX, k),
                Term::Field(_) | Term::Unknown => (0, 0),
                Term::Neg => match stack.pop() {
                    Some((u32::MAX, v)) => (u32::MAX, v.wrapping_neg()),
                    _ => (0, 0),
                },
                Term::Alu(op) => {
                    let (Some((kb, vb)), Some((ka, va))) = (stack.pop(), stack.pop()) else { return (0, 0) };
                    known_alu(op, (ka, va), (kb, vb))
                }
            };
            stack.push(v);
        }
        match stack.as_slice() {
            [v] => *v,
            _ => (0, 0),
        }
    }

    /// The value as a seccomp return value, when its action bits
    /// (`SECCOMP_RET_ACTION_FULL`, the top 16) are the same on every input
    /// ([`Expr::known_bits`]): those bits, and the data (`SECCOMP_RET_DATA`,
    /// the low 16) as an expression. An `|`, `^` or `+` of a constant with
    /// no data bit (`(args[0].lo & 0xffff) | 0x50000`) leaves the data of
    /// its other operand; that operand is the data when its top 16 bits are
    /// known zero, else the data is `(operand & 0xffff)` (a mask `m` of the
    /// operand becomes `m & 0xffff`).
    pub fn action_data(&self) -> Option<(u32, Expr)> {
        const ACTION: u32 = cbpf::uapi::seccomp::SECCOMP_RET_ACTION_FULL;
        const DATA: u32 = cbpf::uapi::seccomp::SECCOMP_RET_DATA;
        let (known, value) = self.known_bits();
        if known & ACTION != ACTION {
            return None;
        }
        let t = &self.0;
        let n = t.len();
        let mut data: &[Term] = t;
        if let (Some(Term::Alu(AluOp::Or | AluOp::Xor | AluOp::Add)), Some(rhs_end)) = (t.last(), n.checked_sub(2)) {
            // Operands are contiguous: lhs `0..rhs_start`, rhs `rhs_start..n-1`.
            let rhs_start = self.starts().get(rhs_end).copied().unwrap_or(0);
            let (lhs, rhs) = (t.get(..rhs_start), t.get(rhs_start..rhs_end + 1));
            match (lhs, rhs) {
                (Some(other), Some([Term::Const(k)])) | (Some([Term::Const(k)]), Some(other)) if k & DATA == 0 => {
                    data = other;
                }
                _ => {}
            }
        }
        let (k, v) = Expr(data.into()).known_bits();
        let data: Arc<[Term]> = if k & ACTION == ACTION && v & ACTION == 0 {
            data.into()
        } else if let [rest @ .., Term::Const(m), Term::Alu(AluOp::And)] = data {
            // `(x & m) & 0xffff` is `x & (m & 0xffff)`.
            rest.iter().copied().chain([Term::Const(m & DATA), Term::Alu(AluOp::And)]).collect()
        } else {
            data.iter().copied().chain([Term::Const(DATA), Term::Alu(AluOp::And)]).collect()
        };
        Some((value & ACTION, Expr(data)))
    }

    /// The text of [`Display`](std::fmt::Display) without the parentheses
    /// around a binary operation at the top: `args[0].lo & 0xffff`.
    pub fn bare(&self) -> String {
        let s = self.to_string();
        match self.0.last() {
            Some(Term::Alu(_)) => {
                s.strip_prefix('(').and_then(|s| s.strip_suffix(')')).map_or(s.clone(), str::to_string)
            }
            _ => s,
        }
    }
}

/// [`Expr::known_bits`] of `a OP b`.
fn known_alu(op: AluOp, (ka, va): (u32, u32), (kb, vb): (u32, u32)) -> (u32, u32) {
    if ka == u32::MAX && kb == u32::MAX {
        return op.eval(va, vb).map_or((0, 0), |v| (u32::MAX, v));
    }
    let (zero_a, zero_b) = (ka & !va, kb & !vb);
    let (known, value) = match op {
        AluOp::And => {
            let known = (ka & kb) | zero_a | zero_b;
            (known, va & vb)
        }
        AluOp::Or => ((ka & kb) | va | vb, va | vb),
        AluOp::Xor => (ka & kb, va ^ vb),
        AluOp::Add => {
            // The carry into bit i is monotonic in the operands' low i
            // bits: 1 with the smallest (unknown bits 0) means always 1, 0
            // with the largest (unknown bits 1) means always 0.
            let carry_min = va.wrapping_add(vb) ^ va ^ vb;
            let (max_a, max_b) = (!zero_a, !zero_b);
            let carry_max = max_a.wrapping_add(max_b) ^ max_a ^ max_b;
            let known = ka & kb & (carry_min | !carry_max);
            (known, va ^ vb ^ carry_min)
        }
        AluOp::Lsh if kb == u32::MAX => {
            let s = vb & 31;
            ((ka << s) | ((1u32 << s) - 1), va << s)
        }
        AluOp::Rsh if kb == u32::MAX => {
            let s = vb & 31;
            ((ka >> s) | !(u32::MAX >> s), va >> s)
        }
        _ => (0, 0),
    };
    (known, value & known)
}

/// The C operator of an ALU op (`+`, `<<`, ...).
pub fn alu_operator(op: AluOp) -> &'static str {
    let s = crate::disasm::alu_symbol(op);
    s.strip_suffix('=').unwrap_or(s)
}

/// A constant as conditions print it: `0`, else hex.
fn write_const(f: &mut std::fmt::Formatter<'_>, k: u32) -> std::fmt::Result {
    if k == 0 {
        f.write_str("0")
    } else {
        write!(f, "{k:#x}")
    }
}

impl std::fmt::Display for Expr {
    /// Infix, every binary operation in parentheses: `((args[0].lo >> 0x4)
    /// & 0xf)`, `-args[0].lo`, `-(nr + 0x1)`. Iterative: no recursion per
    /// level of the tree.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.0;
        let start = self.starts();
        enum Job {
            Node(usize),
            Text(&'static str),
        }
        let mut jobs = vec![Job::Node(t.len().saturating_sub(1))];
        while let Some(job) = jobs.pop() {
            let i = match job {
                Job::Text(s) => {
                    f.write_str(s)?;
                    continue;
                }
                Job::Node(i) => i,
            };
            match t.get(i) {
                None | Some(Term::Unknown) => f.write_str("unknown")?,
                Some(Term::Const(k)) => write_const(f, *k)?,
                Some(Term::Field(field)) => write!(f, "{field}")?,
                Some(Term::Neg) => {
                    let child = i.wrapping_sub(1);
                    if matches!(t.get(child), Some(Term::Neg)) {
                        jobs.extend([Job::Text(")"), Job::Node(child), Job::Text("-(")]);
                    } else {
                        jobs.extend([Job::Node(child), Job::Text("-")]);
                    }
                }
                Some(Term::Alu(op)) => {
                    let rhs = i.wrapping_sub(1);
                    let lhs = start.get(rhs).map_or(usize::MAX, |s| s.wrapping_sub(1));
                    let op = match alu_operator(*op) {
                        "+" => " + ",
                        "-" => " - ",
                        "*" => " * ",
                        "/" => " / ",
                        "|" => " | ",
                        "&" => " & ",
                        "<<" => " << ",
                        ">>" => " >> ",
                        "%" => " % ",
                        _ => " ^ ",
                    };
                    jobs.extend([Job::Text(")"), Job::Node(rhs), Job::Text(op), Job::Node(lhs), Job::Text("(")]);
                }
            }
        }
        Ok(())
    }
}

/// A node of the [`Arena`]: children are ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    Const(u32),
    Field(Field),
    Alu(AluOp, u32, u32),
    Neg(u32),
    Unknown,
}

/// The expressions of one exploration, hash-consed: each distinct node
/// once, with its tree size.
#[derive(Debug, Default)]
pub struct Arena {
    nodes: Vec<(Node, u64)>,
    ids: HashMap<Node, u32>,
    /// Some condition of this exploration names a node.
    named: bool,
}

/// A shadow slot whose value the domain knows exactly (a constant, a
/// word, a masked word): the node is made from the domain's value only
/// when an ALU op uses it ([`Arena::resolve`]).
pub const EXACT: u32 = u32::MAX;

/// The ids of A, X and `M[]` along one path: the [`State`]'s shadow. A
/// slot is [`EXACT`] exactly when the domain's value there is not
/// [`Val::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shadow {
    pub a: u32,
    pub x: u32,
    m: [u32; MEMWORDS],
}

impl Arena {
    /// Forgets every node (ids handed out before are void).
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.ids.clear();
        self.named = false;
    }

    /// Notes that a recorded condition names a node.
    pub fn mark_named(&mut self) {
        self.named = true;
    }

    /// Has a recorded condition named a node since [`Arena::clear`]?
    pub fn named_any(&self) -> bool {
        self.named
    }

    /// Number of distinct nodes held.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Holds no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn intern(&mut self, node: Node) -> u32 {
        if let Some(id) = self.ids.get(&node) {
            return *id;
        }
        let size = match node {
            Node::Alu(_, a, b) => self.size(a).saturating_add(self.size(b)).saturating_add(1),
            Node::Neg(a) => self.size(a).saturating_add(1),
            _ => 1,
        };
        let id = self.nodes.len() as u32;
        self.nodes.push((node, size));
        self.ids.insert(node, id);
        id
    }

    /// The tree size of `id` (saturating).
    pub fn size(&self, id: u32) -> u64 {
        self.nodes.get(id as usize).map_or(1, |n| n.1)
    }

    fn node(&self, id: u32) -> Node {
        self.nodes.get(id as usize).map_or(Node::Unknown, |n| n.0)
    }

    /// The constant `k`.
    pub fn constant(&mut self, k: u32) -> u32 {
        self.intern(Node::Const(k))
    }

    /// The node of a value the domain knows exactly; `None` for a
    /// [`Val::Unknown`].
    pub fn of_val(&mut self, v: Val) -> Option<u32> {
        Some(match v {
            Val::Known(k) => self.constant(k),
            Val::Exact(f) => self.intern(Node::Field(f)),
            Val::Masked { field, mask } => {
                let (w, m) = (self.intern(Node::Field(field)), self.constant(mask));
                self.intern(Node::Alu(AluOp::And, w, m))
            }
            Val::Unknown(_) => return None,
        })
    }

    /// `a OP b`, folded when both are constants.
    fn alu(&mut self, op: AluOp, a: u32, b: u32) -> u32 {
        if let (Node::Const(x), Node::Const(y)) = (self.node(a), self.node(b)) {
            if let Some(v) = op.eval(x, y) {
                return self.constant(v);
            }
        }
        self.intern(Node::Alu(op, a, b))
    }

    /// The shadow of [`State::entry`]: A = X = 0 (exact), `M[]` unwritten.
    pub fn entry(&mut self) -> Shadow {
        let unknown = self.intern(Node::Unknown);
        Shadow { a: EXACT, x: EXACT, m: [unknown; MEMWORDS] }
    }

    /// The node of a register whose shadow is `id` and whose domain value
    /// is `v`.
    pub fn resolve(&mut self, id: u32, v: Val) -> u32 {
        if id == EXACT {
            self.of_val(v).unwrap_or_else(|| self.intern(Node::Unknown))
        } else {
            id
        }
    }

    /// What `op` does to the shadow, after [`super::step`] did it to
    /// `state`; `a` and `x` are the domain's values of A and X before.
    /// Jumps, loads and copies cost no node: only ALU results the domain
    /// cannot say exactly do.
    #[inline]
    pub fn step(&mut self, op: Option<Op>, sh: &mut Shadow, (a, x): (Val, Val), state: &State) {
        let mem = |sh: &Shadow, k: u32| sh.m.get(k as usize).copied();
        let exact = |v: Val| !matches!(v, Val::Unknown(_));
        match op {
            Some(Op::Jmp { .. } | Op::Ja { .. } | Op::RetK { .. } | Op::RetA) | None => {}
            Some(Op::LdImm { .. }) => sh.a = EXACT,
            Some(Op::LdxImm { .. }) => sh.x = EXACT,
            Some(Op::LdxAbsSeccomp { .. }) => {
                sh.a = if exact(state.a) { EXACT } else { self.intern(Node::Unknown) };
            }
            // Copies: the copied register's shadow (and the domain copies
            // its value alike).
            Some(Op::LdMem { k }) => sh.a = mem(sh, k).unwrap_or(sh.a),
            Some(Op::LdxMem { k }) => sh.x = mem(sh, k).unwrap_or(sh.x),
            Some(Op::St { k }) => {
                if let Some(slot) = sh.m.get_mut(k as usize) {
                    *slot = sh.a;
                }
            }
            Some(Op::Stx { k }) => {
                if let Some(slot) = sh.m.get_mut(k as usize) {
                    *slot = sh.x;
                }
            }
            Some(Op::Tax) => sh.x = sh.a,
            Some(Op::Txa) => sh.a = sh.x,
            Some(Op::Alu { op, src, k }) => {
                sh.a = if exact(state.a) {
                    EXACT
                } else {
                    let lhs = self.resolve(sh.a, a);
                    let rhs = match src {
                        Src::K => self.constant(k),
                        Src::X => self.resolve(sh.x, x),
                    };
                    self.alu(op, lhs, rhs)
                };
            }
            Some(Op::Neg) => {
                sh.a = if exact(state.a) {
                    EXACT
                } else {
                    let lhs = self.resolve(sh.a, a);
                    self.intern(Node::Neg(lhs))
                };
            }
            Some(Op::LdAbs { .. } | Op::LdInd { .. } | Op::LdLen) => sh.a = self.intern(Node::Unknown),
            Some(Op::LdxLen | Op::LdxMsh { .. }) => sh.x = self.intern(Node::Unknown),
        }
    }

    /// A became exact to the domain (the true edge of `jeq #k`).
    pub fn sync(&mut self, sh: &mut Shadow, state: &State) {
        if !matches!(state.a, Val::Unknown(_)) {
            sh.a = EXACT;
        }
    }

    /// The tree of `id` in postfix order, iteratively.
    pub fn expr(&self, id: u32) -> Expr {
        let mut out: Vec<Term> = Vec::with_capacity(self.size(id).min(1 << 16) as usize);
        // (node, children pushed?)
        let mut work = vec![(id, false)];
        while let Some((id, expanded)) = work.pop() {
            let node = self.node(id);
            if expanded {
                out.push(match node {
                    Node::Alu(op, _, _) => Term::Alu(op),
                    _ => Term::Neg,
                });
                continue;
            }
            match node {
                Node::Const(k) => out.push(Term::Const(k)),
                Node::Field(f) => out.push(Term::Field(f)),
                Node::Unknown => out.push(Term::Unknown),
                Node::Neg(a) => work.extend([(id, true), (a, false)]),
                Node::Alu(_, a, b) => work.extend([(id, true), (b, false), (a, false)]),
            }
        }
        Expr(out.into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::domain::{step, Env};

    const LE: u32 = crate::arch::AUDIT_ARCH_X86_64;

    /// Runs `ops` from the entry state; the expression left in A.
    fn run(ops: &[Op]) -> Expr {
        let env = Env::new(None, None, LE);
        let mut arena = Arena::default();
        let mut s = State::entry();
        let mut sh = arena.entry();
        for (pc, op) in ops.iter().enumerate() {
            let before = (s.a, s.x);
            step(pc, Some(*op), &mut s, &env);
            arena.step(Some(*op), &mut sh, before, &s);
        }
        let id = arena.resolve(sh.a, s.a);
        arena.expr(id)
    }

    fn ld(k: u32) -> Op {
        Op::LdxAbsSeccomp { k }
    }

    fn alu(op: AluOp, k: u32) -> Op {
        Op::Alu { op, src: Src::K, k }
    }

    fn alu_x(op: AluOp) -> Op {
        Op::Alu { op, src: Src::X, k: 0 }
    }

    #[test]
    fn every_alu_op_prints_as_its_expression_k_and_x() {
        let k_forms = [
            (AluOp::Add, "(args[0].lo + 0x1)"),
            (AluOp::Sub, "(args[0].lo - 0x1)"),
            (AluOp::Mul, "(args[0].lo * 0x1)"),
            (AluOp::Div, "(args[0].lo / 0x1)"),
            (AluOp::Or, "(args[0].lo | 0x1)"),
            (AluOp::Lsh, "(args[0].lo << 0x1)"),
            (AluOp::Rsh, "(args[0].lo >> 0x1)"),
            (AluOp::Mod, "(args[0].lo % 0x1)"),
            (AluOp::Xor, "(args[0].lo ^ 0x1)"),
        ];
        for (op, text) in k_forms {
            assert_eq!(run(&[ld(16), alu(op, 1)]).to_string(), text, "{op:?}");
        }
        // `and #k` is a masked word to the domain; the same text.
        assert_eq!(run(&[ld(16), alu(AluOp::And, 0xff)]).to_string(), "(args[0].lo & 0xff)");
        // X forms: X holds args[1].lo (`ld; tax`), A args[0].lo.
        for op in AluOp::ALL {
            let e = run(&[ld(24), Op::Tax, ld(16), alu_x(op)]);
            assert_eq!(e.to_string(), format!("(args[0].lo {} args[1].lo)", alu_operator(op)), "{op:?}");
        }
    }

    #[test]
    fn neg_shift_by_x_and_scratch_memory_are_followed() {
        assert_eq!(run(&[ld(16), Op::Neg]).to_string(), "-args[0].lo");
        assert_eq!(run(&[ld(16), Op::Neg, Op::Neg]).to_string(), "-(-args[0].lo)");
        assert_eq!(run(&[ld(16), alu(AluOp::Add, 1), Op::Neg]).to_string(), "-(args[0].lo + 0x1)");
        // The shift by X: `nr << (args[0].lo & 0x1f)` is what the filter
        // computes (the count masked by 31, as `<<` is defined here).
        let e = run(&[ld(16), alu(AluOp::And, 0x1f), Op::Tax, ld(0), alu_x(AluOp::Lsh)]);
        assert_eq!(e.to_string(), "(nr << (args[0].lo & 0x1f))");
        // st M[3]; ldx M[3]; through memory and X.
        let e = run(&[
            ld(16),
            alu(AluOp::Rsh, 4),
            Op::St { k: 3 },
            ld(24),
            Op::LdxMem { k: 3 },
            alu_x(AluOp::Sub),
            alu(AluOp::And, 0xf),
        ]);
        assert_eq!(e.to_string(), "((args[1].lo - (args[0].lo >> 0x4)) & 0xf)");
        let e = run(&[ld(16), Op::Stx { k: 0 }, Op::LdMem { k: 0 }, Op::Txa]);
        assert_eq!(e.to_string(), "0");
        // Constants fold, as the domain folds them.
        assert_eq!(run(&[Op::LdImm { k: 6 }, alu(AluOp::Mul, 7)]).to_string(), "0x2a");
    }

    #[test]
    fn expressions_evaluate_as_the_converted_program() {
        let words = |f: Field| match f {
            Field::ArgLo(0) => 0x8000_0001,
            Field::ArgLo(1) => 33,
            _ => 0,
        };
        for op in AluOp::ALL {
            let e = run(&[ld(24), Op::Tax, ld(16), alu_x(op)]);
            assert_eq!(e.eval(words), op.eval(0x8000_0001, 33), "{op:?}");
        }
        // Division (and modulo) by an X of 0: no value; the filter returns
        // 0 on that path, which its `X == 0` condition says.
        let e = run(&[ld(32), Op::Tax, ld(16), alu_x(AluOp::Div)]);
        assert_eq!(e.to_string(), "(args[0].lo / args[2].lo)");
        assert_eq!(e.eval(words), None);
        let e = run(&[ld(32), Op::Tax, ld(16), alu_x(AluOp::Mod)]);
        assert_eq!(e.eval(words), None);
        assert_eq!(run(&[ld(16), Op::Neg]).eval(words), Some(0x7fff_ffff));
    }

    #[test]
    fn returned_values_split_into_action_and_data() {
        let split = |ops: &[Op]| run(ops).action_data().map(|(a, d)| (a, d.bare()));
        // ERRNO with computed data: the constant's data bits are 0 and the
        // other operand's top 16 bits are known 0.
        let errno = |op| split(&[ld(16), alu(AluOp::And, 0xfff), alu(op, 0x5_0000)]);
        for op in [AluOp::Or, AluOp::Xor, AluOp::Add] {
            assert_eq!(errno(op), Some((0x5_0000, "args[0].lo & 0xfff".into())), "{op:?}");
        }
        // The constant on the left (`x` holds it) peels alike.
        let e = split(&[Op::LdImm { k: 0x3_0000 }, Op::Tax, ld(16), alu(AluOp::Rsh, 20), alu_x(AluOp::Or)]);
        assert_eq!(e, Some((0x3_0000, "args[0].lo >> 0x14".into())));
        // Top bits not known 0 in the operand: the data is masked.
        let e = split(&[ld(16), alu(AluOp::Or, 0x7fff_0000), alu(AluOp::Or, 0x8000_0000)]);
        assert_eq!(e, Some((0xffff_0000, "(args[0].lo | 0x7fff0000) & 0xffff".into())));
        let e = split(&[ld(16), alu(AluOp::Rsh, 1), alu(AluOp::And, 0x3_ffff), alu(AluOp::Or, 0x3_0000)]);
        assert_eq!(e, Some((0x3_0000, "(args[0].lo >> 0x1) & 0xffff".into())));
        let e = split(&[ld(16), alu(AluOp::Or, 0xffff_0000)]);
        assert_eq!(e, Some((0xffff_0000, "args[0].lo & 0xffff".into())));
        let e = split(&[ld(16), alu(AluOp::Lsh, 16), alu(AluOp::Rsh, 16), alu(AluOp::Add, 0x7ffc_0000)]);
        assert_eq!(e, Some((0x7ffc_0000, "(args[0].lo << 0x10) >> 0x10".into())));
        // A carry may reach the action bits: not constant.
        assert_eq!(split(&[ld(16), alu(AluOp::And, 0x1_ffff), alu(AluOp::Add, 0x5_0000)]), None);
        assert_eq!(split(&[ld(16), alu(AluOp::Add, 0x5_0000)]), None);
        assert_eq!(split(&[ld(16), Op::Neg]), None);
        // A word masked to its data bits: action bits 0 (KILL_THREAD).
        assert_eq!(split(&[ld(16), alu(AluOp::Mul, 3), alu(AluOp::And, 0xff)]).map(|(a, _)| a), Some(0));
    }

    proptest::proptest! {
        /// [`Expr::known_bits`] and [`Expr::action_data`] are sound: on
        /// every input the value has the known bits, and is the action
        /// bits with the data expression's value (which fits the data).
        #[test]
        fn known_bits_and_action_data_hold_on_every_input(
            body in proptest::collection::vec((0u8..8, 0u32..8, proptest::prelude::any::<u32>()), 1..12),
            words in proptest::collection::vec(proptest::prelude::any::<[u32; 3]>(), 8),
        ) {
            let consts = [0, 1, 0xfff, 0xffff, 0x5_0000, 0x7fff_0000, 0xffff_0000, 0x8000_0000];
            let mut ops = vec![ld(16)];
            for (kind, pick, any) in body {
                let k = consts.get(pick as usize).copied().unwrap_or(any);
                let k = if pick == 7 && kind == 0 { any } else { k };
                ops.push(match kind {
                    0 | 1 => alu([AluOp::Or, AluOp::And, AluOp::Xor, AluOp::Add][(any % 4) as usize], k),
                    2 => alu([AluOp::Lsh, AluOp::Rsh][(any % 2) as usize], k % 32),
                    3 => alu([AluOp::Sub, AluOp::Mul, AluOp::Div][(any % 3) as usize], k | 1),
                    4 => Op::Neg,
                    5 => Op::Tax,
                    6 => alu_x(AluOp::ALL[(any % 10) as usize]),
                    _ => ld(16 + 8 * (pick % 3)),
                });
            }
            let e = run(&ops);
            let (known, value) = e.known_bits();
            let split = e.action_data();
            for w in &words {
                let at = |f: Field| match f {
                    Field::ArgLo(i) => w[usize::from(i) % 3],
                    _ => 0,
                };
                let Some(v) = e.eval(at) else { continue };
                proptest::prop_assert_eq!(v & known, value, "{} on {:?}", e, w);
                if let Some((action, data)) = &split {
                    let d = data.eval(at);
                    proptest::prop_assert!(d.is_some_and(|d| d <= 0xffff), "{} data {} on {:?}", e, data, w);
                    proptest::prop_assert_eq!(action | d.unwrap_or(0), v, "{} data {} on {:?}", e, data, w);
                }
            }
        }
    }

    #[test]
    fn long_chains_are_shared_and_sized_not_expanded() {
        // `tax; add x` 4000 times: one node per instruction, a tree of
        // 2^4000 nodes (saturated), printed by nobody.
        let env = Env::new(None, None, LE);
        let mut arena = Arena::default();
        let mut s = State::entry();
        let mut sh = arena.entry();
        let mut ops = vec![ld(16)];
        for _ in 0..4000 {
            ops.extend([Op::Tax, alu_x(AluOp::Add)]);
        }
        for (pc, op) in ops.iter().enumerate() {
            let before = (s.a, s.x);
            step(pc, Some(*op), &mut s, &env);
            arena.step(Some(*op), &mut sh, before, &s);
        }
        assert!(arena.len() < 4010, "{}", arena.len());
        assert_eq!(arena.size(sh.a), u64::MAX);
        // A deep chain prints without recursion.
        let mut ops = vec![ld(16)];
        ops.extend(std::iter::repeat_n(alu(AluOp::Add, 1), 1).chain(std::iter::repeat_n(Op::Neg, 20000)));
        let e = run(&ops);
        assert_eq!(e.size(), 20003);
        let want = format!("{}-(args[0].lo + 0x1){}", "-(".repeat(19999), ")".repeat(19999));
        assert!(e.to_string() == want);
        drop(e);
    }
}
