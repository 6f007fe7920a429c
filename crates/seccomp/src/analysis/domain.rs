//! The abstract domain shared by the data-flow pass and the path explorer:
//! which `struct seccomp_data` half a load reads, abstract register values,
//! and the exact transfer function of one classic instruction.

use cbpf::{AluOp, JmpOp, Op};

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
    pub const ALL: [Field; 16] = [
        Field::Nr,
        Field::Arch,
        Field::IpLo,
        Field::IpHi,
        Field::ArgLo(0),
        Field::ArgHi(0),
        Field::ArgLo(1),
        Field::ArgHi(1),
        Field::ArgLo(2),
        Field::ArgHi(2),
        Field::ArgLo(3),
        Field::ArgHi(3),
        Field::ArgLo(4),
        Field::ArgHi(4),
        Field::ArgLo(5),
        Field::ArgHi(5),
    ];

    /// Position in [`Field::ALL`] (0..16); bit position in a [`FieldSet`].
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
    pub fn single(f: Field) -> FieldSet {
        FieldSet(1u16.checked_shl(f.index()).unwrap_or(0))
    }

    /// Set union.
    pub fn union(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 | other.0)
    }

    /// Set intersection.
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
    /// Some value computed from (at most) these fields.
    Unknown(FieldSet),
}

impl Val {
    /// The fields the value may depend on.
    pub fn deps(self) -> FieldSet {
        match self {
            Val::Known(_) => FieldSet::EMPTY,
            Val::Exact(f) => FieldSet::single(f),
            Val::Unknown(s) => s,
        }
    }

    /// Least upper bound of two values reaching the same instruction; `ctrl`
    /// are the fields the choice between the incoming paths depends on.
    pub fn join(self, other: Val, ctrl: FieldSet) -> Val {
        if self == other {
            self
        } else {
            Val::Unknown(self.deps().union(other.deps()).union(ctrl))
        }
    }
}

/// What the seccomp loads see: `nr` and `arch` either concrete or symbolic,
/// every other field symbolic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Env {
    /// Concrete `nr`, or `None` to keep it symbolic.
    pub nr: Option<u32>,
    /// Concrete `arch`, or `None` to keep it symbolic.
    pub arch: Option<u32>,
    /// AUDIT_ARCH value deciding which half an offset names (byte order).
    pub layout_arch: u32,
}

impl Env {
    /// The value `ld [k]` (seccomp, rewritten to 0x21) puts in A.
    pub fn load(&self, k: u32) -> Val {
        match Field::from_offset(k, self.layout_arch) {
            Some(Field::Nr) => self.nr.map_or(Val::Exact(Field::Nr), Val::Known),
            Some(Field::Arch) => self.arch.map_or(Val::Exact(Field::Arch), Val::Known),
            Some(f) => Val::Exact(f),
            // Not produced by validation; anything at all.
            None => Val::Unknown(FieldSet::ALL),
        }
    }
}

/// Number of scratch words, `BPF_MEMWORDS`.
pub const MEMWORDS: usize = 16;

/// Abstract machine state before an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct State {
    pub a: Val,
    pub x: Val,
    pub m: [Val; MEMWORDS],
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
            ctrl: FieldSet::EMPTY,
            compared: FieldSet::EMPTY,
        }
    }

    /// Joins `other` into `self` (both reach the same instruction).
    pub fn join(&mut self, other: &State) {
        let ctrl = self.ctrl.union(other.ctrl);
        self.a = self.a.join(other.a, ctrl);
        self.x = self.x.join(other.x, ctrl);
        for (mine, theirs) in self.m.iter_mut().zip(other.m.iter()) {
            *mine = mine.join(*theirs, ctrl);
        }
        self.ctrl = ctrl;
        self.compared = self.compared.intersect(other.compared);
    }

    /// Reads scratch word `k` (validated `k < 16`).
    fn mem(&self, k: u32) -> Val {
        self.m.get(k as usize).copied().unwrap_or(Val::Unknown(FieldSet::ALL))
    }

    /// Writes scratch word `k` (validated `k < 16`).
    fn set_mem(&mut self, k: u32, v: Val) {
        if let Some(slot) = self.m.get_mut(k as usize) {
            *slot = v;
        }
    }
}

/// A comparison `lhs OP rhs` of a conditional jump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cmp {
    pub op: JmpOp,
    pub lhs: Val,
    pub rhs: Val,
}

impl Cmp {
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
        _ => Val::Unknown(a.deps().union(b.deps())),
    }
}

/// Executes one instruction of a validated seccomp program (the rewritten
/// form, `Program::insns()`) on the abstract state.
///
/// `op` is `None` only for codes validation never lets through; they are
/// treated as returning anything.
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
                cbpf::Src::K => Val::Known(k),
                cbpf::Src::X => s.x,
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
            let rhs = match src {
                cbpf::Src::K => Val::Known(k),
                cbpf::Src::X => s.x,
            };
            return Step::Branch { cmp: Cmp { op, lhs: s.a, rhs }, taken, not_taken };
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
        }
    }
}
