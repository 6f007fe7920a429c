//! The executor's op set: one [`SOp`] (16 bytes) per instruction of the
//! converted-seccomp subset, its [`Kind`] (the subset's instructions and
//! the superinstructions [`super::compile`] makes of them) and the codes
//! of the subset's registers and conditions.

use chain::Cond;

use crate::isa::filter_h::{BPF_REG_A, BPF_REG_TMP, BPF_REG_X};
use crate::isa::op::AluOp;

/// Register codes of the subset (`SOp::dst` / `SOp::src`): A, TMP, X.
pub(super) const RA: u8 = 0;
pub(super) const RT: u8 = 1;
pub(super) const RX: u8 = 2;
/// `SOp::src` of a K-form compare: the operand is `imm`.
pub(super) const RK: u8 = 3;

/// Conditions (`SOp::aux` of the generic compare): the chain core's
/// [`Cond`], stored as its discriminant.
pub(super) const EQ: u8 = Cond::Eq as u8;
pub(super) const NE: u8 = Cond::Ne as u8;
pub(super) const GT: u8 = Cond::Gt as u8;
pub(super) const GE: u8 = Cond::Ge as u8;
pub(super) const LT: u8 = Cond::Lt as u8;
pub(super) const LE: u8 = Cond::Le as u8;
pub(super) const SET: u8 = Cond::Set as u8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Kind {
    /// `r6 = r1`: resolved at load (see the module docs).
    CtxPtr,
    /// `w0 ^= w0; w7 ^= w7; r6 = r1`.
    Prologue,
    MovK,
    Mov32,
    Mov64,
    /// ALU32, K form: `aux` = operation (index in [`AluOp::ALL`]).
    AluK,
    /// ALU32, X form.
    AluX,
    /// `wD = -wD`.
    Neg,
    /// `dst = ctx word aux`.
    LdCtx,
    /// `dst = stack slot aux`.
    LdStack,
    /// `stack slot aux = src`.
    StStack,
    Ja,
    /// `if r0 <cond> imm goto target`, one kind per condition.
    JeqK,
    JneK,
    JgtK,
    JgeK,
    JltK,
    JleK,
    JsetK,
    /// Any other compare: `aux` = condition, `src` = register or [`RK`].
    Jcc,
    Exit,
    /// `w0 = imm; exit`.
    RetImm,
    /// A compare chain on r0 ([`Chains`]) from entry `target` (an
    /// [`EntryBlock`]; while compiling: test `target`, skip count `imm`).
    Chain,
    /// `w0 = ctx word aux`, then the chain of entry `target` (a ladder entry).
    LdChain,
    /// A compare chain on r0 from test `target` of [`Table::exits`] (skip
    /// count `imm` at the op), scanned by [`Scans::linked_exit`], its
    /// links followed: in programs with links, every chain op, and tree
    /// nodes and short chains whose chain links on.
    Linked,
    /// `w0 = ctx word aux`, then [`Kind::Linked`].
    LdLinked,
    /// [`Kind::Linked`] for a chain with a masked test (`jset`, or `&` before
    /// a compare) among its first tests, in a program with links: scanned
    /// by [`Scans::masked_linked_exit`] (the mask applied), its links
    /// followed. Nothing links to it: links go to range chains only.
    MaskedLinked,
    /// `w0 = ctx word aux`, then [`Kind::MaskedLinked`].
    LdMaskedLinked,
    /// A compare chain on r0 from test `target` whose tests end in a long
    /// run of equalities (an allow-list), run as lookup table
    /// `imm >> 32` of [`chain::EqSets`] (a few other tests before the run
    /// scanned first); skip count `imm as u32` at the op. Replaces any of
    /// the four chain ops above, links followed as theirs are.
    EqSet,
    /// `w0 = ctx word aux`, then [`Kind::EqSet`].
    LdEqSet,
    /// The root of a compare tree (a region of compares of r0 with
    /// constants, through `ja`, that branches: `chain::RangeTrees`): go
    /// where walking the region leaves to, found in table `target` of
    /// [`super::trees::Trees`] with the instructions the walk jumped over.
    Tree,
    /// `w0 = ctx word aux`, then [`Kind::Tree`].
    LdTree,
    /// `w0 = ctx word aux; w2 = imm; if r0 <cond> r2 goto target`.
    LdMovJeq,
    LdMovJne,
    LdMovJgt,
    LdMovJge,
    LdMovJlt,
    LdMovJle,
    LdMovJset,
    /// `w0 = ctx word aux; w0 &= M; if r0 <cond> K goto target`, `src` =
    /// condition, `imm` = `M << 32 | K` (`K` below 2^32): the converted
    /// form of a classic `ld [k]; and #M; j* #K` (OpenSSH's flag checks).
    LdAndJcc,
    /// `w0 = ctx word aux; if r0 <cond> imm goto target`.
    LdJeq,
    LdJne,
    LdJgt,
    LdJge,
    LdJlt,
    LdJle,
    LdJset,
    /// `w2 = imm; if r0 <cond> r2 goto target`.
    MovJeq,
    MovJne,
    MovJgt,
    MovJge,
    MovJlt,
    MovJle,
    MovJset,
    /// The first round of a 32-bit argument ladder (`chain::ladder`) over
    /// context words `aux` (high) and `src` (low): go where running its
    /// rounds leaves to, found in ladder `target` of
    /// [`super::ladders::Ladders`], with r0 the word loaded last.
    // Last, its arm too: measured with functions and branch targets
    // aligned (so that code placement cannot decide), the kind inserted
    // after `LdTree` slowed the tree ops of libseccomp's opt2 filters by
    // a quarter; here every row is even or faster.
    Ladder,
    /// [`Kind::LdMovJne`] whose fall-through (three instructions on) is a
    /// [`Kind::LdTree`], both in one op: the architecture check before
    /// libseccomp's and Chromium's syscall trees. `w0 = ctx word aux; w2 =
    /// imm as u32; if r0 != r2 goto target`, else `w0 = ctx word src` and
    /// the search of tree `imm >> 32` (with its [`super::trees::DIRECT`]
    /// bit). Last with its arm, as [`Kind::Ladder`].
    LdMovJneTree,
}

impl Kind {
    /// Whether an op of this kind jumps to the pc in `SOp::target` (on its
    /// condition), as a plain or fused jump does; chain, tree and ladder
    /// ops keep an index there.
    pub(super) fn jumps_to_pc(self) -> bool {
        use Kind::*;
        matches!(
            self,
            Ja | JeqK
                | JneK
                | JgtK
                | JgeK
                | JltK
                | JleK
                | JsetK
                | Jcc
                | LdMovJeq
                | LdMovJne
                | LdMovJgt
                | LdMovJge
                | LdMovJlt
                | LdMovJle
                | LdMovJset
                | LdAndJcc
                | LdJeq
                | LdJne
                | LdJgt
                | LdJge
                | LdJlt
                | LdJle
                | LdJset
                | MovJeq
                | MovJne
                | MovJgt
                | MovJge
                | MovJlt
                | MovJle
                | MovJset
                | LdMovJneTree
        )
    }
}

/// One compiled instruction (16 bytes): `aux` is the ALU operation, the
/// context word, the stack slot or the condition; `target` the jump target
/// or first eq entry; `imm` the (zero- or sign-extended) immediate or end
/// eq entry.
#[derive(Debug, Clone, Copy)]
pub(super) struct SOp {
    pub(super) kind: Kind,
    pub(super) dst: u8,
    pub(super) src: u8,
    pub(super) aux: u8,
    pub(super) target: u32,
    pub(super) imm: u64,
}

/// The chain core's condition of a compare (`SOp::aux`).
#[inline(always)]
pub(super) fn cond_of(cond: u8) -> Cond {
    match cond {
        EQ => Cond::Eq,
        NE => Cond::Ne,
        GT => Cond::Gt,
        GE => Cond::Ge,
        LT => Cond::Lt,
        LE => Cond::Le,
        _ => Cond::Set,
    }
}

/// The code of a register of the subset (`bpf_convert_filter()`'s A, TMP
/// and X).
pub(super) fn reg(r: u8) -> Option<u8> {
    match r {
        BPF_REG_A => Some(RA),
        BPF_REG_TMP => Some(RT),
        BPF_REG_X => Some(RX),
        _ => None,
    }
}

pub(super) fn bit(r: u8) -> u8 {
    1 << r
}

/// Stack slot of `fp + off` (slot k is `fp - 4(k+1)`), if converted code
/// could address it.
pub(super) fn slot(off: i16) -> Option<u8> {
    (-64..=-4).contains(&off).then_some(())?;
    (off % 4 == 0).then_some((-(off / 4) - 1) as u8)
}

/// `SOp::aux` of an ALU32 op: its index in [`AluOp::ALL`].
pub(super) fn alu_code(alu: AluOp) -> u8 {
    AluOp::ALL.iter().position(|&o| o == alu).unwrap_or(0) as u8
}
