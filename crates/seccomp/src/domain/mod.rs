//! The one abstract domain over `struct seccomp_data` words: which 32-bit
//! half a load reads ([`Field`]), abstract values of A, X and `M[]` ([`Val`]:
//! known constants, exact copies of a word, or values depending on a set of
//! words), the comparisons jumps make ([`Cmp`]: against constants, decided or
//! not, refining the state on an edge), and the exact transfer function of one
//! classic instruction ([`step`]), written once.
//!
//! Along one path, [`Facts`] hold what the branches taken say about each
//! field: intervals, known one and zero bits, and constants it differs from.
//! The walk that records a path's conditions also keeps [`expr`]'s shadow
//! of A, X and `M[]`: the expressions ([`Expr`]) the filter computes where
//! [`Val::Unknown`] keeps only the words they depend on.
//!
//! Its users are the analysis passes ([`crate::analysis`]: data flow, path
//! exploration, classes, audit), the fast engine's partial evaluation
//! ([`crate::fast`]), which is the special case where [`Env`] makes `arch`,
//! `nr` or a key word known, and the test kit's generator of
//! branch-reaching inputs (`test_kit::branch::branch_inputs`).
//!
//! # For a generator of branch-reaching inputs
//!
//! Walk the program with [`step`] under `Env::new(None, None, arch)`; at each
//! [`Step::Branch`], [`Cmp::masked_constant_against`] names the word, mask
//! and constant compared (the values to try are around that constant), and
//! the path's [`Facts`], advanced with [`Facts::assume`] on each edge taken,
//! give the values the other words must have to get there
//! ([`Facts::bounds`], [`Facts::witness`], [`Facts::admits`]); the facts
//! every path to a pc shares ([`Facts::join`]) say which outcomes no input
//! reaches, and [`Field::offset`] gives the word back.
//!
//! Semantics are the converted program's (`bpf_convert_filter()` in
//! net/core/filter.c run by `___bpf_prog_run()` in kernel/bpf/core.c): A and
//! X start at 0, ALU is [`AluOp::eval`], division by a zero X returns 0.

use cbpf::{AluOp, JmpOp, Op, Src};

pub mod expr;
mod facts;

pub use expr::{Expr, Term};
pub use facts::{Facts, Node, NotEqual};

/// A 32-bit half of a `struct seccomp_data` field: what one seccomp load
/// (`ld [k]`, k = 0, 4, ..., 60) reads.
///
/// Which half an offset names depends on the arch's byte order (SPEC §5.1):
/// on little-endian arches `args[i]`'s low half is at `16 + 8i`, on
/// big-endian ones its high half is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `nr` (offset 0).
    Nr,
    /// `arch` (offset 4).
    Arch,
    /// Low 32 bits of `instruction_pointer`.
    IpLo,
    /// High 32 bits of `instruction_pointer`.
    IpHi,
    /// Low 32 bits of `args[i]`, `i < 6`.
    ArgLo(u8),
    /// High 32 bits of `args[i]`, `i < 6`.
    ArgHi(u8),
}

use crate::arch::AUDIT_ARCH_LE;

impl Field {
    /// Every field, in [`Field::index`] order.
    // Evaluated at compile time: an index out of range fails the build.
    #[allow(clippy::indexing_slicing)]
    pub const ALL: [Field; 16] = {
        let mut all = [Field::Nr; 16];
        let mut i = 0;
        while i < all.len() {
            all[i] = Field::from_index(i as u32);
            i += 1;
        }
        all
    };

    /// The inverse of [`Field::index`] on 0..16: nr, arch, ip's halves, then
    /// each argument's low and high half.
    const fn from_index(i: u32) -> Field {
        match i {
            0 => Field::Nr,
            1 => Field::Arch,
            2 => Field::IpLo,
            3 => Field::IpHi,
            _ if i % 2 == 0 => Field::ArgLo(((i - 4) / 2) as u8),
            _ => Field::ArgHi(((i - 5) / 2) as u8),
        }
    }

    /// Position in [`Field::ALL`] (0..16); bit position in a [`FieldSet`].
    #[inline(always)]
    pub fn index(self) -> u32 {
        match self {
            Field::Nr => 0,
            Field::Arch => 1,
            Field::IpLo => 2,
            Field::IpHi => 3,
            Field::ArgLo(i) => 4 + 2 * u32::from(i),
            Field::ArgHi(i) => 5 + 2 * u32::from(i),
        }
    }

    /// The field a seccomp load at byte offset `k` reads on an arch whose
    /// AUDIT_ARCH value is `arch`; `None` unless `k < 64` and `k % 4 == 0`.
    pub fn from_offset(k: u32, arch: u32) -> Option<Field> {
        if k >= 64 || k % 4 != 0 {
            return None;
        }
        let little_endian = arch & AUDIT_ARCH_LE != 0;
        Some(match k {
            0 => Field::Nr,
            4 => Field::Arch,
            _ => {
                // The 8-byte slot (ip = 0, args[i] = i + 1) and which word of it.
                let slot = (k - 8) / 8;
                let first_word = (k - 8) % 8 == 0;
                let low = first_word == little_endian;
                match (slot, low) {
                    (0, true) => Field::IpLo,
                    (0, false) => Field::IpHi,
                    // slot <= 6 because k < 64.
                    (s, true) => Field::ArgLo((s - 1) as u8),
                    (s, false) => Field::ArgHi((s - 1) as u8),
                }
            }
        })
    }

    /// The byte offset a seccomp load reads this field at, on an arch whose
    /// AUDIT_ARCH value is `arch`: the inverse of [`Field::from_offset`].
    pub fn offset(self, arch: u32) -> u32 {
        let i = self.index();
        // Words 2.. come in (low, high) pairs on little-endian arches and
        // (high, low) pairs on big-endian ones.
        let swap = i >= 2 && arch & AUDIT_ARCH_LE == 0;
        4 * if swap { i ^ 1 } else { i }
    }
}

/// The call whose fields hold `value(field)`, each half at the offset
/// [`Field::offset`] gives it under `layout_arch` (so a filter for that
/// arch reads back `value` through its loads).
pub fn data_of_fields(layout_arch: u32, value: impl Fn(Field) -> u32) -> cbpf::SeccompData {
    let mut words = [0u32; 16];
    for field in Field::ALL {
        if let Some(w) = words.get_mut((field.offset(layout_arch) / 4) as usize) {
            *w = value(field);
        }
    }
    cbpf::SeccompData::from_words(&words)
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Nr => f.write_str("nr"),
            Field::Arch => f.write_str("arch"),
            Field::IpLo => f.write_str("ip.lo"),
            Field::IpHi => f.write_str("ip.hi"),
            Field::ArgLo(i) => write!(f, "args[{i}].lo"),
            Field::ArgHi(i) => write!(f, "args[{i}].hi"),
        }
    }
}

/// A set of [`Field`]s, one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FieldSet(u16);

impl FieldSet {
    /// No field.
    pub const EMPTY: FieldSet = FieldSet(0);
    /// Every field.
    pub const ALL: FieldSet = FieldSet(u16::MAX);

    /// The set holding only `f`.
    #[inline(always)]
    pub fn single(f: Field) -> FieldSet {
        FieldSet(1u16.checked_shl(f.index()).unwrap_or(0))
    }

    /// Set union.
    #[inline(always)]
    pub fn union(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 | other.0)
    }

    /// Set intersection.
    #[inline(always)]
    pub fn intersect(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 & other.0)
    }

    /// The fields of `self` not in `other`.
    pub fn without(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 & !other.0)
    }

    /// Is `f` in the set?
    pub fn contains(self, f: Field) -> bool {
        self.0 & FieldSet::single(f).0 != 0
    }

    /// Is the set empty?
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The fields, in [`Field::index`] order.
    pub fn to_vec(self) -> Vec<Field> {
        Field::ALL.into_iter().filter(|f| self.contains(*f)).collect()
    }
}

/// Abstract value of A, X or a scratch word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Val {
    /// Exactly this value on every path and input.
    Known(u32),
    /// Exactly the value of this field, unchanged.
    Exact(Field),
    /// Exactly `field & mask` (`and #mask` of a loaded word), `mask != 0`.
    ///
    /// For everything but comparisons against constants it is a value
    /// computed from `field`: it joins and depends like
    /// `Unknown({field})`, so it only adds what a generator of inputs (or a
    /// decompiler) asks: which masked word is compared with which constant.
    Masked {
        /// The word.
        field: Field,
        /// The bits kept.
        mask: u32,
    },
    /// Some value computed from (at most) these fields.
    Unknown(FieldSet),
}

impl Val {
    /// The fields the value may depend on.
    #[inline(always)]
    pub fn deps(self) -> FieldSet {
        match self {
            Val::Known(_) => FieldSet::EMPTY,
            Val::Exact(f) | Val::Masked { field: f, .. } => FieldSet::single(f),
            Val::Unknown(s) => s,
        }
    }

    /// Neither a constant nor an exact word: a value computed from fields.
    #[inline(always)]
    fn is_computed(self) -> bool {
        matches!(self, Val::Masked { .. } | Val::Unknown(_))
    }

    /// The value, when it is the same constant on every path and input.
    #[inline(always)]
    pub fn known(self) -> Option<u32> {
        match self {
            Val::Known(v) => Some(v),
            _ => None,
        }
    }

    /// Least upper bound of two values reaching the same instruction; `ctrl`
    /// are the fields the choice between the incoming paths depends on.
    #[inline(always)]
    pub fn join(self, other: Val, ctrl: FieldSet) -> Val {
        if self == other {
            self
        } else if self.is_computed() && other.is_computed() && self.deps() == other.deps() {
            // Computed values from the same fields are one value to
            // everything but masked comparisons.
            Val::Unknown(self.deps())
        } else {
            Val::Unknown(self.deps().union(other.deps()).union(ctrl))
        }
    }
}

/// What the seccomp loads see: `nr` and `arch` either concrete or symbolic,
/// at most one other field concrete, every other field symbolic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Env {
    /// Concrete `nr`, or `None` to keep it symbolic.
    pub nr: Option<u32>,
    /// Concrete `arch`, or `None` to keep it symbolic.
    pub arch: Option<u32>,
    /// One more field with a concrete value (not `nr` nor `arch`, which the
    /// fields above decide): the fast engine's key word.
    pub word: Option<(Field, u32)>,
    /// AUDIT_ARCH value deciding which half an offset names (byte order).
    pub layout_arch: u32,
}

impl Env {
    /// `nr` and `arch` as given, every other field symbolic.
    pub fn new(nr: Option<u32>, arch: Option<u32>, layout_arch: u32) -> Env {
        Env { nr, arch, word: None, layout_arch }
    }

    /// The value `ld [k]` (seccomp, rewritten to 0x21) puts in A.
    #[inline(always)]
    pub fn load(&self, k: u32) -> Val {
        // `nr` and `arch` first: they are most of the loads, and need no
        // byte order.
        match k {
            0 => return self.nr.map_or(Val::Exact(Field::Nr), Val::Known),
            4 => return self.arch.map_or(Val::Exact(Field::Arch), Val::Known),
            _ => {}
        }
        match Field::from_offset(k, self.layout_arch) {
            Some(Field::Nr) => self.nr.map_or(Val::Exact(Field::Nr), Val::Known),
            Some(Field::Arch) => self.arch.map_or(Val::Exact(Field::Arch), Val::Known),
            Some(f) => match self.word {
                Some((w, v)) if w == f => Val::Known(v),
                _ => Val::Exact(f),
            },
            // Not produced by validation; anything at all.
            None => Val::Unknown(FieldSet::ALL),
        }
    }
}

/// Number of scratch words, `BPF_MEMWORDS`.
pub const MEMWORDS: usize = 16;

/// Abstract machine state before an instruction.
#[derive(Debug, Clone, Copy)]
pub struct State {
    /// The accumulator.
    pub a: Val,
    /// The index register.
    pub x: Val,
    /// Scratch memory `M[0..16]` ([`State::mem`]).
    m: [Val; MEMWORDS],
    /// Bit `k`: `M[k]` was written on some path here. The others hold their
    /// entry value whatever `m[k]` says, so joins and [`State::assign`] skip
    /// them: that keeps the partial evaluator's states as cheap to move as
    /// it needs, since most filters never use `M[]`.
    written: u16,
    /// Fields some undecided branch on some path to here depended on.
    pub ctrl: FieldSet,
    /// Fields an undecided branch on every path to here depended on.
    pub compared: FieldSet,
}

impl State {
    /// The state at pc 0: A = X = 0 (the converted prologue clears them),
    /// scratch memory uninitialised (validation forbids reading it).
    pub fn entry() -> State {
        State {
            a: Val::Known(0),
            x: Val::Known(0),
            m: [Val::Unknown(FieldSet::ALL); MEMWORDS],
            written: 0,
            ctrl: FieldSet::EMPTY,
            compared: FieldSet::EMPTY,
        }
    }

    /// `*self = *other`, moving only the scratch words `other` wrote.
    #[inline(always)]
    pub fn assign(&mut self, other: &State) {
        self.a = other.a;
        self.x = other.x;
        self.ctrl = other.ctrl;
        self.compared = other.compared;
        self.written = other.written;
        let mut written = other.written;
        while written != 0 {
            let k = written.trailing_zeros() as usize;
            written &= written - 1;
            if let (Some(mine), Some(theirs)) = (self.m.get_mut(k), other.m.get(k)) {
                *mine = *theirs;
            }
        }
    }

    /// Joins `other` into `self` (both reach the same instruction).
    #[inline(always)]
    pub fn join(&mut self, other: &State) {
        let ctrl = self.ctrl.union(other.ctrl);
        self.a = self.a.join(other.a, ctrl);
        self.x = self.x.join(other.x, ctrl);
        let mut written = self.written | other.written;
        while written != 0 {
            let k = written.trailing_zeros();
            written &= written - 1;
            let joined = self.mem(k).join(other.mem(k), ctrl);
            self.set_mem(k, joined);
        }
        self.ctrl = ctrl;
        self.compared = self.compared.intersect(other.compared);
    }

    /// Reads scratch word `k` (validated `k < 16`).
    #[inline(always)]
    pub fn mem(&self, k: u32) -> Val {
        match self.m.get(k as usize) {
            Some(v) if self.written & (1 << k) != 0 => *v,
            _ => Val::Unknown(FieldSet::ALL),
        }
    }

    /// Writes scratch word `k` (validated `k < 16`).
    #[inline(always)]
    fn set_mem(&mut self, k: u32, v: Val) {
        if let Some(slot) = self.m.get_mut(k as usize) {
            *slot = v;
            self.written |= 1 << k;
        }
    }
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        (self.a, self.x, self.ctrl, self.compared) == (other.a, other.x, other.ctrl, other.compared)
            && (0..MEMWORDS as u32).all(|k| self.mem(k) == other.mem(k))
    }
}

impl Eq for State {}

/// A comparison `lhs OP rhs` of a conditional jump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cmp {
    /// The comparison.
    pub op: JmpOp,
    /// A.
    pub lhs: Val,
    /// `k` or X.
    pub rhs: Val,
}

impl Cmp {
    /// The comparison `jeq/jgt/jge/jset` with source `src` makes in state `s`.
    #[inline(always)]
    pub fn of(op: JmpOp, src: Src, k: u32, s: &State) -> Cmp {
        let rhs = match src {
            Src::K => Val::Known(k),
            Src::X => s.x,
        };
        Cmp { op, lhs: s.a, rhs }
    }

    /// The outcome when the operands decide it: both known, or a constant
    /// right-hand side no left-hand value can change (`jgt #0xffffffff` is
    /// never taken, `jge #0` always, `jset #0` never).
    #[inline(always)]
    pub fn decided(self) -> Option<bool> {
        match (self.op, self.lhs, self.rhs) {
            (op, Val::Known(a), Val::Known(b)) => Some(op.eval(a, b)),
            (JmpOp::Jgt, _, Val::Known(u32::MAX)) | (JmpOp::Jset, _, Val::Known(0)) => Some(false),
            (JmpOp::Jge, _, Val::Known(0)) => Some(true),
            _ => None,
        }
    }

    /// The constant `field & mask` is compared with, on either side, with
    /// that `mask` (`u32::MAX` for the word itself).
    #[inline(always)]
    pub fn masked_constant_against(self, field: Field) -> Option<(u32, u32)> {
        match (self.lhs, self.rhs) {
            (Val::Exact(f), Val::Known(k)) | (Val::Known(k), Val::Exact(f)) if f == field => Some((u32::MAX, k)),
            (Val::Masked { field: f, mask }, Val::Known(k)) | (Val::Known(k), Val::Masked { field: f, mask })
                if f == field =>
            {
                Some((mask, k))
            }
            _ => None,
        }
    }

    /// The constant `field` itself (unchanged, unmasked) is compared with,
    /// on either side.
    #[inline(always)]
    pub fn constant_against(self, field: Field) -> Option<u32> {
        match (self.lhs, self.rhs) {
            (Val::Exact(f), Val::Known(k)) | (Val::Known(k), Val::Exact(f)) if f == field => Some(k),
            _ => None,
        }
    }

    /// The outcome when both sides are known.
    pub fn eval_known(self) -> Option<bool> {
        match (self.lhs, self.rhs) {
            (Val::Known(a), Val::Known(b)) => Some(self.op.eval(a, b)),
            _ => None,
        }
    }

    /// The fields the outcome may depend on.
    pub fn deps(self) -> FieldSet {
        self.lhs.deps().union(self.rhs.deps())
    }
}

impl State {
    /// What taking (`taken`) or not taking the edge of `cmp` teaches: on the
    /// true edge of `jeq` with a constant, A is that constant. Other
    /// outcomes teach nothing this domain can hold.
    #[inline(always)]
    pub fn assume(&mut self, cmp: Cmp, taken: bool) {
        if let (JmpOp::Jeq, true, Val::Known(k)) = (cmp.op, taken, cmp.rhs) {
            self.a = Val::Known(k);
        }
    }
}

/// What happens after one instruction (the state is updated in place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Continue at this pc.
    Goto(usize),
    /// Conditional jump with distinct targets: `taken` if `cmp` holds.
    Branch { cmp: Cmp, taken: usize, not_taken: usize },
    /// `div x` / `mod x` with an X that may be zero: the program returns 0
    /// if `divisor` is 0, otherwise continues at `next` (A already updated).
    DivByX { divisor: Val, next: usize },
    /// The program returns this value.
    Return(Val),
}

/// `fail`: what a classic program returns on division by zero (SPEC §1.4).
pub const DIV_BY_ZERO_RET: u32 = 0;

/// Abstract ALU: exact on known operands, with the absorbing elements that
/// fix the result whatever the unknown side is.
fn alu_abstract(op: AluOp, a: Val, b: Val) -> Val {
    match (a, b) {
        (Val::Known(x), Val::Known(y)) => match op.eval(x, y) {
            Some(v) => Val::Known(v),
            // Callers handle division by a known zero before getting here.
            None => Val::Known(DIV_BY_ZERO_RET),
        },
        (_, Val::Known(0)) | (Val::Known(0), _) if matches!(op, AluOp::And | AluOp::Mul) => Val::Known(0),
        (_, Val::Known(u32::MAX)) | (Val::Known(u32::MAX), _) if op == AluOp::Or => Val::Known(u32::MAX),
        // A mask of 0 is absorbed above.
        (Val::Exact(field), Val::Known(mask)) | (Val::Known(mask), Val::Exact(field)) if op == AluOp::And => {
            Val::Masked { field, mask }
        }
        _ => Val::Unknown(a.deps().union(b.deps())),
    }
}

/// Executes one instruction of a validated seccomp program (the rewritten
/// form, `Program::insns()`) on the abstract state: the transfer function of
/// every user of the domain.
///
/// `op` is `None` only for codes validation never lets through; they are
/// treated as returning anything.
#[inline(always)]
pub fn step(pc: usize, op: Option<Op>, s: &mut State, env: &Env) -> Step {
    let next = pc + 1;
    let Some(op) = op else {
        return Step::Return(Val::Unknown(FieldSet::ALL));
    };
    match op {
        Op::LdImm { k } => s.a = Val::Known(k),
        Op::LdxImm { k } => s.x = Val::Known(k),
        Op::LdMem { k } => s.a = s.mem(k),
        Op::LdxMem { k } => s.x = s.mem(k),
        Op::St { k } => s.set_mem(k, s.a),
        Op::Stx { k } => s.set_mem(k, s.x),
        Op::LdxAbsSeccomp { k } => s.a = env.load(k),
        // Packet loads never survive seccomp validation; seccomp rewrites
        // `len` to an immediate. Treat them as reading anything.
        Op::LdAbs { .. } | Op::LdInd { .. } | Op::LdLen => s.a = Val::Unknown(FieldSet::ALL),
        Op::LdxLen | Op::LdxMsh { .. } => s.x = Val::Unknown(FieldSet::ALL),
        Op::Alu { op, src, k } => {
            let operand = match src {
                Src::K => Val::Known(k),
                Src::X => s.x,
            };
            if matches!(op, AluOp::Div | AluOp::Mod) {
                match operand {
                    Val::Known(0) => return Step::Return(Val::Known(DIV_BY_ZERO_RET)),
                    Val::Known(_) => {}
                    divisor => {
                        s.a = alu_abstract(op, s.a, divisor);
                        return Step::DivByX { divisor, next };
                    }
                }
            }
            s.a = alu_abstract(op, s.a, operand);
        }
        Op::Neg => {
            s.a = match s.a {
                Val::Known(v) => Val::Known(v.wrapping_neg()),
                other => Val::Unknown(other.deps()),
            }
        }
        Op::Ja { k } => return Step::Goto(next.saturating_add(k as usize)),
        Op::Jmp { op, src, k, jt, jf } => {
            let taken = next + usize::from(jt);
            let not_taken = next + usize::from(jf);
            if taken == not_taken {
                return Step::Goto(taken);
            }
            return Step::Branch { cmp: Cmp::of(op, src, k, s), taken, not_taken };
        }
        Op::RetK { k } => return Step::Return(Val::Known(k)),
        Op::RetA => return Step::Return(s.a),
        Op::Tax => s.x = s.a,
        Op::Txa => s.a = s.x,
    }
    Step::Goto(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_name_halves_by_byte_order() {
        let le = 0xc000_003e;
        let be = 0x8000_0016;
        assert_eq!(Field::from_offset(0, le), Some(Field::Nr));
        assert_eq!(Field::from_offset(4, be), Some(Field::Arch));
        assert_eq!(Field::from_offset(8, le), Some(Field::IpLo));
        assert_eq!(Field::from_offset(12, le), Some(Field::IpHi));
        assert_eq!(Field::from_offset(8, be), Some(Field::IpHi));
        assert_eq!(Field::from_offset(16, le), Some(Field::ArgLo(0)));
        assert_eq!(Field::from_offset(20, le), Some(Field::ArgHi(0)));
        assert_eq!(Field::from_offset(16, be), Some(Field::ArgHi(0)));
        assert_eq!(Field::from_offset(60, le), Some(Field::ArgHi(5)));
        assert_eq!(Field::from_offset(56, be), Some(Field::ArgHi(5)));
        assert_eq!(Field::from_offset(64, le), None);
        assert_eq!(Field::from_offset(6, le), None);
        for (i, f) in Field::ALL.iter().enumerate() {
            assert_eq!(f.index() as usize, i);
            for arch in [le, be] {
                assert_eq!(Field::from_offset(f.offset(arch), arch), Some(*f));
            }
        }
    }

    const LE: u32 = crate::arch::AUDIT_ARCH_X86_64;

    #[test]
    fn comparisons_decide_on_constants_alone() {
        let nr = Val::Exact(Field::Nr);
        let cmp = |op, rhs| Cmp { op, lhs: nr, rhs: Val::Known(rhs) };
        assert_eq!(cmp(JmpOp::Jgt, u32::MAX).decided(), Some(false));
        assert_eq!(cmp(JmpOp::Jge, 0).decided(), Some(true));
        assert_eq!(cmp(JmpOp::Jset, 0).decided(), Some(false));
        assert_eq!(cmp(JmpOp::Jeq, 7).decided(), None);
        let known = Cmp { op: JmpOp::Jgt, lhs: Val::Known(3), rhs: Val::Known(2) };
        assert_eq!(known.decided(), Some(true));
        assert_eq!(known.eval_known(), Some(true));
    }

    #[test]
    fn constants_a_field_is_compared_with_on_either_side() {
        let mut s = State::entry();
        let env = Env::new(None, None, LE);
        s.a = env.load(0);
        assert_eq!(Cmp::of(JmpOp::Jeq, Src::K, 59, &s).constant_against(Field::Nr), Some(59));
        assert_eq!(Cmp::of(JmpOp::Jeq, Src::K, 59, &s).constant_against(Field::Arch), None);
        // `ldx [0]` is not a classic load; `tax` after `ld [0]` then `ld #k`
        // compares k (in A) with nr (in X).
        s.x = s.a;
        s.a = Val::Known(5);
        assert_eq!(Cmp::of(JmpOp::Jgt, Src::X, 0, &s).constant_against(Field::Nr), Some(5));
    }

    #[test]
    fn masked_words_are_compared_with_their_mask() {
        let env = Env::new(None, None, LE);
        let mut s = State::entry();
        let and = |m| Some(Op::Alu { op: AluOp::And, src: Src::K, k: m });
        assert_eq!(step(0, Some(Op::LdxAbsSeccomp { k: 16 }), &mut s, &env), Step::Goto(1));
        step(1, and(0xff), &mut s, &env);
        assert_eq!(s.a, Val::Masked { field: Field::ArgLo(0), mask: 0xff });
        let cmp = Cmp::of(JmpOp::Jeq, Src::K, 7, &s);
        assert_eq!(cmp.masked_constant_against(Field::ArgLo(0)), Some((0xff, 7)));
        assert_eq!(cmp.constant_against(Field::ArgLo(0)), None);
        // Masking again, or joining with another mask, leaves a computed value.
        let mut t = s;
        step(2, and(0xf), &mut t, &env);
        assert_eq!(t.a, Val::Unknown(FieldSet::single(Field::ArgLo(0))));
        let other = Val::Masked { field: Field::ArgLo(0), mask: 1 };
        assert_eq!(s.a.join(other, FieldSet::single(Field::Nr)), Val::Unknown(FieldSet::single(Field::ArgLo(0))));
        assert_eq!(s.a.deps(), FieldSet::single(Field::ArgLo(0)));
        // A zero mask is the constant 0.
        let mut z = State { a: Val::Exact(Field::Nr), ..State::entry() };
        step(0, and(0), &mut z, &env);
        assert_eq!(z.a, Val::Known(0));
    }

    #[test]
    fn the_true_edge_of_jeq_makes_a_known() {
        let mut s = State::entry();
        s.a = Val::Exact(Field::ArgLo(0));
        let cmp = Cmp::of(JmpOp::Jeq, Src::K, 9, &s);
        let mut f = s;
        f.assume(cmp, false);
        assert_eq!(f.a, Val::Exact(Field::ArgLo(0)));
        s.assume(cmp, true);
        assert_eq!(s.a, Val::Known(9));
    }

    #[test]
    fn a_known_word_loads_as_its_value() {
        let env = Env { word: Some((Field::ArgLo(1), 42)), ..Env::new(Some(1), None, LE) };
        assert_eq!(env.load(0), Val::Known(1));
        assert_eq!(env.load(4), Val::Exact(Field::Arch));
        assert_eq!(env.load(24), Val::Known(42));
        assert_eq!(env.load(28), Val::Exact(Field::ArgHi(1)));
    }

    #[test]
    fn facts_hold_intervals_bits_and_exclusions() {
        let f = Field::ArgLo(0);
        let on = |op, k| Cmp { op, lhs: Val::Exact(f), rhs: Val::Known(k) };
        let mut facts = Facts::default();
        assert!(facts.assume(on(JmpOp::Jge, 10), true));
        assert!(facts.assume(on(JmpOp::Jgt, 20), false));
        assert!(facts.assume(on(JmpOp::Jeq, 10), false));
        assert!(facts.assume(on(JmpOp::Jset, 1), false));
        assert_eq!(facts.bounds(f), (11, 20, 0, 1));
        assert!(facts.excluded(f, 10));
        assert_eq!(facts.witness(f), Some(12));
        assert_eq!(facts.decide(on(JmpOp::Jgt, 25)), Some(false));
        assert!(!facts.assume(on(JmpOp::Jeq, 30), true));
    }
}
