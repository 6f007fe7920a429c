//! From the 32-bit branch conditions of one path to the 64-bit argument
//! comparisons a profile is written in.
//!
//! libseccomp compiles each comparison of a 64-bit argument on a 64-bit
//! arch into tests of the high word, then of the low word (`gen_bpf.c`:
//! `SCMP_CMP_EQ` and `SCMP_CMP_MASKED_EQ` become `jeq` after an `and` of
//! the word's mask when the mask is not all ones, `SCMP_CMP_GT`/`GE` a
//! `jgt`/`jge` on the high word followed by a `jeq` of the high word and a
//! `jgt`/`jge` of the low word; `NE`, `LT` and `LE` are `EQ`, `GE` and `GT`
//! with the two outcomes swapped). On a 32-bit arch only the low word is
//! tested. Rather than matching those instruction shapes, each path is read
//! as a set: the values of `args[i]` its conditions admit. A path is a box
//! (one set per argument); boxes of one action that differ in one argument
//! are merged (`hi > 0` or `hi == 0 && lo != 0x28` is `args[0] != 0x28`),
//! and each set is said in the fewest comparisons.
//!
//! The pieces, each using only the shared types here and the ones listed
//! before it:
//! - `path`: one path's conditions read as a box of argument sets
//!   ([`path_box`]), boxes of one action merged ([`merge`]);
//! - `compare`: a set said as the fewest comparisons ([`set_conds`]), a
//!   box as the rules whose OR it is ([`box_rules`]);
//! - `masked`: complements and unions of masked word tests read as one
//!   set of `args[i] & M` ([`masked_union`]);
//! - `text`: boxes and raw paths as readable conditions ([`box_text`],
//!   [`raw_texts`]).

use seccomp::analysis::Relation;

use crate::set::Set;

mod compare;
mod masked;
mod path;
mod text;

pub use compare::{box_rules, set_conds};
pub use masked::masked_union;
pub use path::{merge, path_box};
pub use text::{box_text, raw_texts};

/// Arguments of a syscall (`args[0..6]`).
pub const ARGS: usize = 6;

/// A comparison of the OCI runtime spec (libseccomp's `scmp_compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CmpOp {
    Ne,
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
    /// `(arg & value) == value_two`.
    MaskedEq,
}

impl CmpOp {
    /// The OCI spelling (`SCMP_CMP_EQ`, ...).
    pub fn oci(self) -> &'static str {
        match self {
            CmpOp::Ne => "SCMP_CMP_NE",
            CmpOp::Lt => "SCMP_CMP_LT",
            CmpOp::Le => "SCMP_CMP_LE",
            CmpOp::Eq => "SCMP_CMP_EQ",
            CmpOp::Ge => "SCMP_CMP_GE",
            CmpOp::Gt => "SCMP_CMP_GT",
            CmpOp::MaskedEq => "SCMP_CMP_MASKED_EQ",
        }
    }

    /// The comparison an OCI spelling names.
    pub fn from_oci(s: &str) -> Option<CmpOp> {
        [CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ge, CmpOp::Gt, CmpOp::MaskedEq]
            .into_iter()
            .find(|op| op.oci() == s)
    }
}

/// One argument comparison: `args[index] OP value` (for
/// [`CmpOp::MaskedEq`], `(args[index] & value) == value_two`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArgCond {
    pub index: u8,
    pub op: CmpOp,
    pub value: u64,
    pub value_two: u64,
}

/// A number as the readable forms print it: `0`, else hex.
pub(crate) struct Num(pub u64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 == 0 {
            f.write_str("0")
        } else {
            write!(f, "{:#x}", self.0)
        }
    }
}

impl ArgCond {
    /// The comparison said of `name` rather than `args[i]`.
    pub(crate) fn named(&self, name: &str) -> String {
        let v = Num(self.value);
        match self.op {
            CmpOp::Ne => format!("{name} != {v}"),
            CmpOp::Lt => format!("{name} < {v}"),
            CmpOp::Le => format!("{name} <= {v}"),
            CmpOp::Eq => format!("{name} == {v}"),
            CmpOp::Ge => format!("{name} >= {v}"),
            CmpOp::Gt => format!("{name} > {v}"),
            CmpOp::MaskedEq => format!("({name} & {v}) == {}", Num(self.value_two)),
        }
    }
}

impl std::fmt::Display for ArgCond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.named(&format!("args[{}]", self.index)))
    }
}

/// Why a path's conditions are not argument comparisons a profile can say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Inexpressible {
    /// A condition on something other than one argument word and a
    /// constant (the instruction pointer, a computed value, two fields).
    #[error("pc {pc}: `{cond}`: {why}")]
    Condition { pc: usize, cond: String, why: &'static str },
    /// The values one argument may take on a path need more than one
    /// comparison ANDed (the profile ORs comparisons of one argument).
    #[error("pc {pc}: args[{index}] in {set}: a profile cannot say it in one comparison")]
    Set { pc: usize, index: u8, set: String },
}

/// What one path says about one argument.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArgSet {
    /// Nothing.
    Any,
    /// The argument is in this set (`0..=u32::MAX` on a 32-bit arch).
    In(Set),
    /// `(args & mask) == value`.
    Masked { mask: u64, value: u64 },
    /// `(args & mask)` is one of `values` (ascending, at least two).
    MaskedIn { mask: u64, values: Vec<u64> },
    /// `(args & mask)` is none of `values` (ascending, at least one).
    MaskedNotIn { mask: u64, values: Vec<u64> },
}

/// One path read as argument comparisons: a box, one [`ArgSet`] per
/// argument, and the first pc that tested each.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArgBox {
    pub args: [ArgSet; ARGS],
    pub pcs: [usize; ARGS],
}

/// `k REL t` as `t REL' k`.
fn mirror(r: Relation) -> Relation {
    match r {
        Relation::Gt => Relation::Lt,
        Relation::Ge => Relation::Le,
        Relation::Lt => Relation::Gt,
        Relation::Le => Relation::Ge,
        r => r,
    }
}

/// The 32-bit values `word REL k` admits.
fn rel_set(rel: Relation, k: u32) -> Set {
    let (m, k) = (u64::from(u32::MAX), u64::from(k));
    match rel {
        Relation::Eq => Set::point(m, k),
        Relation::Ne => Set::point(m, k).complement(),
        Relation::Gt if k == m => Set::empty(m),
        Relation::Gt => Set::from_runs(m, [(k + 1, m)]),
        Relation::Ge => Set::from_runs(m, [(k, m)]),
        Relation::Lt if k == 0 => Set::empty(m),
        Relation::Lt => Set::from_runs(m, [(0, k - 1)]),
        Relation::Le => Set::from_runs(m, [(0, k)]),
        Relation::AnyBitSet | Relation::NoBitSet => Set::full(m),
    }
}

/// `{0x1, 0x2}`.
fn list(values: &[u64]) -> String {
    let v: Vec<String> = values.iter().map(|&v| Num(v).to_string()).collect();
    format!("{{{}}}", v.join(", "))
}
