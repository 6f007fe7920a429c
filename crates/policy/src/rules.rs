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

use std::collections::BTreeMap;

use seccomp::analysis::{Cond, Field, Operand, Relation};

use crate::set::Set;

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
    fn named(&self, name: &str) -> String {
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

/// One 32-bit condition in the form the box builder uses.
enum Atom {
    Rel(Relation, u32),
    /// `(word & mask) == value`.
    Mask(u32, u32),
}

fn condition(c: &Cond, why: &'static str) -> Inexpressible {
    Inexpressible::Condition { pc: c.pc.0, cond: c.to_string(), why }
}

/// The word and what the condition says about it.
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

fn atom(c: &Cond) -> Result<(Field, Atom), Inexpressible> {
    let (field, rel, k) = match (&c.lhs, &c.rhs) {
        (Operand::Field(f), Operand::Const(k)) => (*f, c.rel, *k),
        (Operand::Const(k), Operand::Field(f)) => (*f, mirror(c.rel), *k),
        (Operand::Masked { field, mask }, Operand::Const(k)) | (Operand::Const(k), Operand::Masked { field, mask }) => {
            return match c.rel {
                Relation::Eq => Ok((*field, Atom::Mask(*mask, *k))),
                _ => Err(condition(c, "only `(args[i] & mask) == value` can be said of a masked argument")),
            };
        }
        (Operand::Field(Field::IpLo | Field::IpHi), _) | (_, Operand::Field(Field::IpLo | Field::IpHi)) => {
            return Err(condition(c, "a profile cannot test the instruction pointer"));
        }
        _ => return Err(condition(c, "a profile compares an argument with a constant, not a computed value")),
    };
    match field {
        Field::ArgLo(_) | Field::ArgHi(_) => {}
        Field::IpLo | Field::IpHi => return Err(condition(c, "a profile cannot test the instruction pointer")),
        Field::Nr | Field::Arch => return Err(condition(c, "nr and arch are not arguments")),
    }
    Ok(match rel {
        Relation::NoBitSet => (field, Atom::Mask(k, 0)),
        Relation::AnyBitSet => return Err(condition(c, "a profile cannot say `(args[i] & mask) != 0`")),
        r => (field, Atom::Rel(r, k)),
    })
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

/// At most this many high words are spread over a 64-bit set.
const MAX_HIGH_VALUES: u64 = 64;

/// Per word of one argument: the set its order tests admit, its masked
/// test, the first pc.
#[derive(Clone)]
struct Word {
    set: Set,
    mask: Option<(u32, u32)>,
    pc: Option<usize>,
}

/// Reads one path's conditions as a box; `None` when the conditions
/// admit no value (a path the facts did not see was infeasible).
/// `wide`: the arch passes 64-bit arguments (libseccomp tests both words).
pub fn path_box(conds: &[Cond], wide: bool) -> Result<Option<ArgBox>, Inexpressible> {
    let fresh = Word { set: Set::full(u64::from(u32::MAX)), mask: None, pc: None };
    let mut lo: [Word; ARGS] = std::array::from_fn(|_| fresh.clone());
    let mut hi: [Word; ARGS] = std::array::from_fn(|_| fresh.clone());
    for c in conds {
        let (field, atom) = atom(c)?;
        let word = match field {
            Field::ArgLo(i) => lo.get_mut(usize::from(i)),
            Field::ArgHi(i) => hi.get_mut(usize::from(i)),
            _ => None,
        };
        let Some(word) = word else { continue };
        word.pc.get_or_insert(c.pc.0);
        match atom {
            Atom::Rel(r, k) => word.set = word.set.intersect(&rel_set(r, k)),
            Atom::Mask(m, v) => match word.mask {
                None => word.mask = Some((m, v)),
                // Two masked tests of one word: both hold.
                Some((m0, v0)) if (v0 & m) == (v & m0) => word.mask = Some((m0 | m, v0 | v)),
                Some(_) => return Ok(None),
            },
        }
    }
    let mut args: [ArgSet; ARGS] = std::array::from_fn(|_| ArgSet::Any);
    let mut pcs = [0usize; ARGS];
    for (i, ((lo, hi), slot)) in lo.iter().zip(&hi).zip(args.iter_mut()).enumerate() {
        let pc = lo.pc.into_iter().chain(hi.pc).min().unwrap_or(0);
        if let Some(p) = pcs.get_mut(i) {
            *p = pc;
        }
        let index = i as u8;
        if lo.set.is_empty() || hi.set.is_empty() {
            return Ok(None);
        }
        if !wide && (hi.mask.is_some() || !hi.set.is_full()) {
            let pc = hi.pc.unwrap_or(pc);
            return Err(Inexpressible::Condition {
                pc,
                cond: format!("args[{index}].hi"),
                why: "a 32-bit arch's profile rule never tests the high word",
            });
        }
        if lo.mask.is_some() || hi.mask.is_some() {
            if !lo.set.is_full() || !hi.set.is_full() {
                return Err(Inexpressible::Set { pc, index, set: "a masked and an ordered test".into() });
            }
            let (ml, vl) = lo.mask.unwrap_or((0, 0));
            let (mh, vh) = hi.mask.unwrap_or((0, 0));
            if vl & !ml != 0 || vh & !mh != 0 {
                return Ok(None);
            }
            let mask = u64::from(mh) << 32 | u64::from(ml);
            let value = u64::from(vh) << 32 | u64::from(vl);
            *slot = if mask == 0 { ArgSet::Any } else { ArgSet::Masked { mask, value } };
            continue;
        }
        let set = if !wide {
            lo.set.clone()
        } else if lo.set.is_full() {
            Set::from_runs(u64::MAX, hi.set.runs().iter().map(|&(a, b)| (a << 32, b << 32 | u64::from(u32::MAX))))
        } else if hi.set.count() <= MAX_HIGH_VALUES {
            let highs = hi.set.runs().iter().flat_map(|&(a, b)| a..=b);
            Set::from_runs(
                u64::MAX,
                highs
                    .flat_map(|h| lo.set.runs().iter().map(move |&(a, b)| (h << 32 | a, h << 32 | b)))
                    .collect::<Vec<_>>(),
            )
        } else {
            return Err(Inexpressible::Set {
                pc,
                index,
                set: "a range of high words with a test of the low word".into(),
            });
        };
        *slot = if set.is_full() { ArgSet::Any } else { ArgSet::In(set) };
    }
    Ok(Some(ArgBox { args, pcs }))
}

/// Merges boxes (of one action) that differ in one argument only, when
/// that argument is a set in each (their union), until none is left.
pub fn merge(boxes: Vec<ArgBox>) -> Vec<ArgBox> {
    let mut boxes = boxes;
    boxes.sort();
    boxes.dedup_by(|a, b| a.args == b.args);
    loop {
        let before = boxes.len();
        for i in 0..ARGS {
            let mut groups: BTreeMap<Vec<ArgSet>, Vec<ArgBox>> = BTreeMap::new();
            for b in boxes.drain(..) {
                let key: Vec<ArgSet> =
                    b.args.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, a)| a.clone()).collect();
                groups.entry(key).or_default().push(b);
            }
            for (_, group) in groups {
                let mut merged: Option<ArgBox> = None;
                for b in group {
                    let Some(ArgSet::In(_) | ArgSet::Any) = b.args.get(i) else {
                        boxes.push(b);
                        continue;
                    };
                    merged = Some(match merged {
                        None => b,
                        Some(mut m) => {
                            let joined = match (m.args.get(i), b.args.get(i)) {
                                (Some(ArgSet::In(x)), Some(ArgSet::In(y))) => {
                                    let u = x.union(y);
                                    if u.is_full() {
                                        ArgSet::Any
                                    } else {
                                        ArgSet::In(u)
                                    }
                                }
                                _ => ArgSet::Any,
                            };
                            for (slot, pc) in m.pcs.iter_mut().zip(b.pcs) {
                                *slot = (*slot).min(pc);
                            }
                            if let Some(slot) = m.args.get_mut(i) {
                                *slot = joined;
                            }
                            m
                        }
                    });
                }
                boxes.extend(merged);
            }
        }
        boxes.sort();
        boxes.dedup_by(|a, b| a.args == b.args);
        if boxes.len() == before {
            return boxes;
        }
    }
}

/// How round a bound reads: its longest run of trailing zeros or ones
/// (`0x10` and `0xf` alike, `0x7fffffffffffffff` more than `...fe`).
fn roundness(x: u64) -> u32 {
    x.trailing_zeros().max(x.trailing_ones())
}

/// The fewest comparisons of `args[index]` whose OR is `set`; bounds are
/// said with whichever of `<`/`<=` (`>`/`>=`) has the rounder constant.
pub fn set_conds(index: u8, set: &Set, pc: usize) -> Result<Vec<ArgCond>, Inexpressible> {
    let max = set.max;
    let c = |op, value| ArgCond { index, op, value, value_two: 0 };
    if let [(p, q)] = set.complement().runs() {
        // A hole at the top reads better as an order (`< max`).
        if p == q && *p != max {
            return Ok(vec![c(CmpOp::Ne, *p)]);
        }
    }
    let mut out = Vec::new();
    for &(a, b) in set.runs() {
        let cond = if a == b {
            c(CmpOp::Eq, a)
        } else if a == 0 {
            match b.checked_add(1) {
                Some(b1) if roundness(b1) >= roundness(b) => c(CmpOp::Lt, b1),
                _ => c(CmpOp::Le, b),
            }
        } else if b == max {
            let a1 = a - 1;
            if roundness(a1) > roundness(a) + 1 {
                c(CmpOp::Gt, a1)
            } else {
                c(CmpOp::Ge, a)
            }
        } else if let Some(size) = (b - a).checked_add(1).filter(|s| s.is_power_of_two() && a % s == 0) {
            ArgCond { index, op: CmpOp::MaskedEq, value: max & !(size - 1), value_two: a }
        } else if b - a < MAX_POINTS {
            // A few values: one `==` each.
            out.extend((a..b).map(|v| c(CmpOp::Eq, v)));
            c(CmpOp::Eq, b)
        } else {
            // Aligned blocks, one `MASKED_EQ` each, if few.
            let blocks = aligned_blocks(a, b);
            if blocks.len() > MAX_BLOCKS {
                let set = format!("[{}, {}]", Num(a), Num(b));
                return Err(Inexpressible::Set { pc, index, set });
            }
            out.extend(blocks.into_iter().map(|(start, size)| ArgCond {
                index,
                op: CmpOp::MaskedEq,
                value: max & !(size - 1),
                value_two: start,
            }));
            continue;
        };
        out.push(cond);
    }
    Ok(out)
}

/// A run of at most this many values is said as one `==` each.
const MAX_POINTS: u64 = 16;

/// A run splits into at most this many aligned blocks (`MASKED_EQ` each).
const MAX_BLOCKS: usize = 16;

/// `[a, b]` as the fewest aligned power-of-two blocks `(start, size)`.
fn aligned_blocks(a: u64, b: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut lo = a;
    loop {
        // The largest block starting at `lo` that stays inside `[lo, b]`.
        let mut size: u64 = if lo == 0 { 1 << 63 } else { 1 << lo.trailing_zeros().min(63) };
        while size > 1 && lo.checked_add(size - 1).is_none_or(|end| end > b) {
            size >>= 1;
        }
        out.push((lo, size));
        if out.len() > MAX_BLOCKS {
            return out;
        }
        match lo.checked_add(size) {
            Some(next) if next <= b => lo = next,
            _ => return out,
        }
    }
}

/// Most rules one box may expand to.
const MAX_RULES_PER_BOX: usize = 4096;

/// The rules (each an AND of comparisons of distinct arguments) whose OR
/// is the box.
pub fn box_rules(b: &ArgBox) -> Result<Vec<Vec<ArgCond>>, Inexpressible> {
    let mut rules: Vec<Vec<ArgCond>> = vec![Vec::new()];
    for (i, (arg, pc)) in b.args.iter().zip(b.pcs).enumerate() {
        let index = i as u8;
        let alternatives = match arg {
            ArgSet::Any => continue,
            ArgSet::Masked { mask, value } => {
                vec![ArgCond { index, op: CmpOp::MaskedEq, value: *mask, value_two: *value }]
            }
            ArgSet::MaskedIn { mask, values } => {
                values.iter().map(|&v| ArgCond { index, op: CmpOp::MaskedEq, value: *mask, value_two: v }).collect()
            }
            ArgSet::MaskedNotIn { mask, values } => match masked_values(*mask) {
                // `!=` does not exist masked; when `args & mask` takes few
                // values (`& 0x1`: two), the others are said one each.
                Some(all) => all
                    .filter(|v| values.binary_search(v).is_err())
                    .map(|v| ArgCond { index, op: CmpOp::MaskedEq, value: *mask, value_two: v })
                    .collect(),
                None => {
                    let set = format!("(args[{index}] & {}) not in {}", Num(*mask), list(values));
                    return Err(Inexpressible::Set { pc, index, set });
                }
            },
            ArgSet::In(set) => set_conds(index, set, pc)?,
        };
        if rules.len().saturating_mul(alternatives.len()) > MAX_RULES_PER_BOX {
            return Err(Inexpressible::Set { pc, index, set: format!("{} alternatives", alternatives.len()) });
        }
        rules = rules
            .iter()
            .flat_map(|r| {
                alternatives.iter().map(move |a| {
                    let mut r = r.clone();
                    r.push(*a);
                    r
                })
            })
            .collect();
    }
    Ok(rules)
}

/// Every value of `args & mask`, when there are at most
/// [`MAX_MASKED_VALUES`] (each a subset of the mask's bits).
fn masked_values(mask: u64) -> Option<impl Iterator<Item = u64>> {
    (1u64 << mask.count_ones().min(63) <= MAX_MASKED_VALUES).then(|| {
        // Walks the subsets of `mask` upward: `(v - mask) & mask` is the
        // next subset after `v`, wrapping to 0 after `mask` itself.
        std::iter::successors(Some(0u64), move |&v| (v != mask).then(|| v.wrapping_sub(mask) & mask))
    })
}

/// `(args & mask) != ...` is said value by value when `args & mask` takes
/// at most this many values.
const MAX_MASKED_VALUES: u64 = 64;

/// The box as one readable condition (`args[0] in {0x26, 0x28} &&
/// args[1] < 0x10`); `None` when it holds always.
pub fn box_text(b: &ArgBox) -> Option<String> {
    let mut parts = Vec::new();
    for (i, (arg, pc)) in b.args.iter().zip(b.pcs).enumerate() {
        let index = i as u8;
        let text = match arg {
            ArgSet::Any => continue,
            ArgSet::Masked { mask, value } => {
                ArgCond { index, op: CmpOp::MaskedEq, value: *mask, value_two: *value }.to_string()
            }
            ArgSet::MaskedIn { mask, values } => format!("(args[{index}] & {}) in {}", Num(*mask), list(values)),
            ArgSet::MaskedNotIn { mask, values } => match values.as_slice() {
                [one] => format!("(args[{index}] & {}) != {}", Num(*mask), Num(*one)),
                _ => format!("(args[{index}] & {}) not in {}", Num(*mask), list(values)),
            },
            ArgSet::In(set) => set_text(&format!("args[{index}]"), index, set, pc),
        };
        parts.push(text);
    }
    (!parts.is_empty()).then(|| parts.join(" && "))
}

/// `{0x1, 0x2}`.
fn list(values: &[u64]) -> String {
    let v: Vec<String> = values.iter().map(|&v| Num(v).to_string()).collect();
    format!("{{{}}}", v.join(", "))
}

/// Most constants per word the masked reading classifies.
const MAX_MASKED_CONSTS: usize = 64;

/// One word's tests in the masked reading: its mask and the constants
/// `word & mask` is compared with.
#[derive(Debug, Clone, Default)]
struct MaskedWord {
    mask: Option<u32>,
    consts: Vec<u32>,
    pc: Option<usize>,
}

impl MaskedWord {
    /// The classes of `word & mask`: each constant, then `None` for any
    /// other value when there is one (an untested word is `0`, masked by 0).
    fn classes(&self) -> Vec<Option<u32>> {
        let Some(mask) = self.mask else { return vec![Some(0)] };
        let mut out: Vec<Option<u32>> = self.consts.iter().copied().map(Some).collect();
        // 2^popcount(mask) values in all: another one exists unless the
        // constants name them all.
        if (self.consts.len() as u64) < 1u64 << mask.count_ones() {
            out.push(None);
        }
        out
    }
}

/// The paths (one returned value's, of one syscall number) read as a set
/// of values of `args[i] & M`, when every condition compares a masked word
/// (or a whole word) of one argument with a constant for equality (`==`,
/// `!=`, `jset`), one mask per word: each word's value falls into a class
/// (a compared constant, or any other value), a path admits some pairs of
/// classes, and the union of the paths is said as `(args[i] & M) in {…}`
/// when it needs no "other" class, or `(args[i] & M) not in {…}` when its
/// complement needs none. This reads complements and unions of masked
/// tests in 64-bit terms (`(args[3] & 0xffffffffffefffcd) != 0` for "low
/// word masked non-zero, or low word zero and high word non-zero").
pub fn masked_union(paths: &[&[Cond]], wide: bool) -> Option<ArgBox> {
    let mut index: Option<u8> = None;
    let (mut lo, mut hi) = (MaskedWord::default(), MaskedWord::default());
    // Per path: per word, the constraint (Eq k / Ne k) list.
    let mut parsed: Vec<Vec<(bool, bool, u32)>> = Vec::new(); // (is_hi, equal, k)
    for conds in paths {
        let mut mine = Vec::new();
        let mut feasible = true;
        for c in conds.iter() {
            let (term, rel, k) = match (&c.lhs, &c.rhs) {
                (t, Operand::Const(k)) => (t, c.rel, *k),
                (Operand::Const(k), t) => (t, mirror(c.rel), *k),
                _ => return None,
            };
            let (field, mask, equal, k) = match (term, rel) {
                (Operand::Field(f), Relation::Eq) => (*f, u32::MAX, true, k),
                (Operand::Field(f), Relation::Ne) => (*f, u32::MAX, false, k),
                (Operand::Masked { field, mask }, Relation::Eq) => (*field, *mask, true, k),
                (Operand::Masked { field, mask }, Relation::Ne) => (*field, *mask, false, k),
                (Operand::Field(f), Relation::NoBitSet) => (*f, k, true, 0),
                (Operand::Field(f), Relation::AnyBitSet) => (*f, k, false, 0),
                _ => return None,
            };
            let (is_hi, i) = match field {
                Field::ArgLo(i) => (false, i),
                Field::ArgHi(i) => (true, i),
                _ => return None,
            };
            if *index.get_or_insert(i) != i || (is_hi && !wide) {
                return None;
            }
            let word = if is_hi { &mut hi } else { &mut lo };
            if *word.mask.get_or_insert(mask) != mask {
                return None;
            }
            word.pc = Some(word.pc.map_or(c.pc.0, |p| p.min(c.pc.0)));
            if k & !mask != 0 {
                // `(w & m) == k` never holds; `!=` always does.
                feasible &= !equal;
                continue;
            }
            if !word.consts.contains(&k) {
                word.consts.push(k);
            }
            mine.push((is_hi, equal, k));
        }
        if feasible {
            parsed.push(mine);
        }
    }
    let index = index?;
    // A low (or high) word compared whole, alone, reads better as it is
    // (`args[2].lo == 0`): this reading is for masks and word pairs.
    let masked = |w: &MaskedWord| w.mask.is_some_and(|m| m != u32::MAX);
    if !(masked(&lo) || masked(&hi) || (lo.mask.is_some() && hi.mask.is_some())) {
        return None;
    }
    if lo.consts.len() > MAX_MASKED_CONSTS || hi.consts.len() > MAX_MASKED_CONSTS {
        return None;
    }
    lo.consts.sort_unstable();
    hi.consts.sort_unstable();
    let (lo_classes, hi_classes) = (lo.classes(), hi.classes());
    let admits = |path: &[(bool, bool, u32)], is_hi: bool, class: Option<u32>| {
        path.iter().filter(|(h, _, _)| *h == is_hi).all(|&(_, equal, k)| match class {
            Some(v) => (v == k) == equal,
            None => !equal,
        })
    };
    // The class pairs the union admits, and those it does not.
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for &l in &lo_classes {
        for &h in &hi_classes {
            let admitted = parsed.iter().any(|p| admits(p, false, l) && admits(p, true, h));
            if admitted {
                inside.push((l, h));
            } else {
                outside.push((l, h));
            }
        }
    }
    let value = |(l, h): (Option<u32>, Option<u32>)| Some(u64::from(h?) << 32 | u64::from(l?));
    let mask = u64::from(hi.mask.unwrap_or(0)) << 32 | u64::from(lo.mask.unwrap_or(0));
    let set = if outside.is_empty() {
        ArgSet::Any
    } else if let Some(mut values) = inside.iter().map(|&p| value(p)).collect::<Option<Vec<u64>>>() {
        values.sort_unstable();
        match values.as_slice() {
            [] => return None,
            [one] => ArgSet::Masked { mask, value: *one },
            _ => ArgSet::MaskedIn { mask, values },
        }
    } else if let Some(mut values) = outside.iter().map(|&p| value(p)).collect::<Option<Vec<u64>>>() {
        values.sort_unstable();
        ArgSet::MaskedNotIn { mask, values }
    } else {
        return None;
    };
    // A whole 64-bit mask is plain values: the sets' own reading says it.
    let set = match set {
        ArgSet::Masked { mask: u64::MAX, value } => ArgSet::In(Set::point(u64::MAX, value)),
        ArgSet::MaskedIn { mask: u64::MAX, values } => {
            ArgSet::In(Set::from_runs(u64::MAX, values.iter().map(|&v| (v, v))))
        }
        ArgSet::MaskedNotIn { mask: u64::MAX, values } => {
            ArgSet::In(Set::from_runs(u64::MAX, values.iter().map(|&v| (v, v))).complement())
        }
        s => s,
    };
    let mut args: [ArgSet; ARGS] = std::array::from_fn(|_| ArgSet::Any);
    let mut pcs = [0usize; ARGS];
    if let (Some(slot), Some(p)) = (args.get_mut(usize::from(index)), pcs.get_mut(usize::from(index))) {
        *slot = set;
        *p = lo.pc.into_iter().chain(hi.pc).min().unwrap_or(0);
    }
    Some(ArgBox { args, pcs })
}

/// A set of the values of `name` (argument `index`'s, or a compared
/// word's or expression's), readable.
fn set_text(name: &str, index: u8, set: &Set, pc: usize) -> String {
    // A few values in short runs: list them.
    let short = set.runs().iter().all(|(a, b)| b - a < 3);
    if short && set.count() > 1 && set.count() <= MAX_POINTS {
        let points: Vec<u64> = set.runs().iter().flat_map(|&(a, b)| a..=b).collect();
        let list: Vec<String> = points.iter().map(|p| Num(*p).to_string()).collect();
        return format!("{name} in {{{}}}", list.join(", "));
    }
    let pieces: Vec<String> = match set_conds(index, set, pc) {
        Ok(conds) => conds.iter().map(|c| c.named(name)).collect(),
        Err(_) => {
            set.runs()
                .iter()
                .map(|&(a, b)| {
                    if a == b {
                        format!("{name} == {}", Num(a))
                    } else {
                        format!("{} <= {name} <= {}", Num(a), Num(b))
                    }
                })
                .collect()
        }
    };
    match pieces.as_slice() {
        [one] => one.clone(),
        _ => format!("({})", pieces.join(" || ")),
    }
}

/// A path that is not a box of argument comparisons, read as the set of
/// 32-bit values of each term compared with constants (a word or an
/// expression, keyed by its text: equal texts are equal values), in the
/// order first compared, and the conditions that are not of that form.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TermBox {
    terms: Vec<Term>,
    other: Vec<String>,
}

/// One compared term of a [`TermBox`]: its text, its values, and the
/// condition as the filter wrote it while it is the only one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    name: String,
    set: Set,
    written: Option<String>,
}

impl Term {
    fn text(&self) -> String {
        match &self.written {
            Some(w) => w.clone(),
            None => {
                // Few values left out: say which.
                let out = self.set.complement();
                let short = out.runs().iter().all(|(a, b)| b - a < 3);
                if short && out.count() > 1 && out.count() <= MAX_POINTS {
                    let points: Vec<String> =
                        out.runs().iter().flat_map(|&(a, b)| a..=b).map(|p| Num(p).to_string()).collect();
                    return format!("{} not in {{{}}}", self.name, points.join(", "));
                }
                set_text(&self.name, 0, &self.set, 0)
            }
        }
    }
}

/// `None` when the path's conditions on one term admit no value.
fn term_box(conds: &[Cond]) -> Option<TermBox> {
    let mut b = TermBox { terms: Vec::new(), other: Vec::new() };
    for c in conds {
        let term = match (&c.lhs, c.rel, &c.rhs) {
            (_, Relation::AnyBitSet | Relation::NoBitSet, _) => None,
            (Operand::Const(_), _, Operand::Const(_)) => None,
            (t, rel, Operand::Const(k)) => Some((t, rel, *k)),
            (Operand::Const(k), rel, t) => Some((t, mirror(rel), *k)),
            _ => None,
        };
        let Some((t, rel, k)) = term else {
            b.other.push(c.to_string());
            continue;
        };
        let name = t.to_string();
        let set = rel_set(rel, k);
        match b.terms.iter_mut().find(|t| t.name == name) {
            Some(t) => {
                t.set = t.set.intersect(&set);
                t.written = None;
            }
            None => b.terms.push(Term { name, set, written: Some(c.to_string()) }),
        }
    }
    if b.terms.iter().any(|t| t.set.is_empty()) {
        return None;
    }
    b.terms.retain(|t| !t.set.is_full());
    Some(b)
}

/// `a` and `b` as one box, when they differ in the set of one term only.
fn union_one(a: &TermBox, b: &TermBox) -> Option<TermBox> {
    if a.other != b.other || a.terms.len() != b.terms.len() {
        return None;
    }
    let mut out = a.clone();
    let mut differ = 0;
    for t in &mut out.terms {
        let other = b.terms.iter().find(|o| o.name == t.name)?;
        if other.set != t.set {
            differ += 1;
            t.set = t.set.union(&other.set);
            t.written = None;
        }
    }
    (differ <= 1).then(|| {
        out.terms.retain(|t| !t.set.is_full());
        out
    })
}

/// At most this many raw paths of one action are merged (pairwise).
const MAX_MERGED_RAW: usize = 256;

/// The paths (of one action) that are not argument comparisons, each
/// read as sets of values per compared term (`((args[1].lo >> 0x4) & 0xf)
/// in {0x1, 0x2}`), paths that differ in one term's set merged; `None`
/// for a path that holds always.
pub fn raw_texts<'a>(paths: impl IntoIterator<Item = &'a [Cond]>) -> Vec<Option<String>> {
    let mut boxes: Vec<TermBox> = paths.into_iter().filter_map(term_box).collect();
    if boxes.len() <= MAX_MERGED_RAW {
        'merge: loop {
            for i in 0..boxes.len() {
                for j in i + 1..boxes.len() {
                    let (Some(a), Some(b)) = (boxes.get(i), boxes.get(j)) else { continue };
                    if let Some(u) = union_one(a, b) {
                        boxes.remove(j);
                        if let Some(slot) = boxes.get_mut(i) {
                            *slot = u;
                        }
                        continue 'merge;
                    }
                }
            }
            break;
        }
    }
    boxes
        .iter()
        .map(|b| {
            let mut parts: Vec<String> = b.terms.iter().map(Term::text).collect();
            parts.extend(b.other.iter().cloned());
            (!parts.is_empty()).then(|| parts.join(" && "))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn conds(set: &Set) -> Vec<String> {
        set_conds(0, set, 0).unwrap().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn sets_are_said_in_the_fewest_comparisons() {
        let m = u64::MAX;
        assert_eq!(conds(&Set::point(m, 0x27)), ["args[0] == 0x27"]);
        assert_eq!(conds(&Set::point(m, 0x28).complement()), ["args[0] != 0x28"]);
        assert_eq!(conds(&Set::point(m, 0).complement()), ["args[0] != 0"]);
        assert_eq!(conds(&Set::point(m, m).complement()), ["args[0] < 0xffffffffffffffff"]);
        assert_eq!(conds(&Set::from_runs(m, [(0, 0xf)])), ["args[0] < 0x10"]);
        assert_eq!(conds(&Set::from_runs(m, [(0, 0x10000)])), ["args[0] <= 0x10000"]);
        assert_eq!(conds(&Set::from_runs(m, [(0x11, m)])), ["args[0] > 0x10"]);
        assert_eq!(conds(&Set::from_runs(m, [(0x10, m)])), ["args[0] >= 0x10"]);
        assert_eq!(conds(&Set::from_runs(m, [(0x100, 0x1ff)])), ["(args[0] & 0xffffffffffffff00) == 0x100"]);
        assert_eq!(conds(&Set::from_runs(m, [(1, 3)])), ["args[0] == 0x1", "args[0] == 0x2", "args[0] == 0x3"]);
        assert_eq!(
            conds(&Set::from_runs(m, [(0x100, 0x2ff)])),
            ["(args[0] & 0xffffffffffffff00) == 0x100", "(args[0] & 0xffffffffffffff00) == 0x200"]
        );
        assert!(set_conds(0, &Set::from_runs(m, [(0x12345, 0x9876543)]), 7).is_err());
        assert_eq!(aligned_blocks(0, m), [(0, 1 << 63), (1 << 63, 1 << 63)]);
    }

    #[test]
    fn masked_complements_are_said_value_by_value_when_few() {
        let rules = |mask: u64, values: &[u64]| -> Result<Vec<String>, Inexpressible> {
            let mut args: [ArgSet; ARGS] = std::array::from_fn(|_| ArgSet::Any);
            args[1] = ArgSet::MaskedNotIn { mask, values: values.to_vec() };
            let b = ArgBox { args, pcs: [0; ARGS] };
            Ok(box_rules(&b)?
                .iter()
                .map(|r| r.iter().map(ToString::to_string).collect::<Vec<_>>().join(" && "))
                .collect())
        };
        assert_eq!(rules(1, &[0]).unwrap(), ["(args[1] & 0x1) == 0x1"]);
        assert_eq!(rules(0x5, &[0, 4]).unwrap(), ["(args[1] & 0x5) == 0x1", "(args[1] & 0x5) == 0x5"]);
        assert_eq!(rules(1 << 40 | 1, &[0]).unwrap().len(), 3);
        assert_eq!(masked_values(0x3f).unwrap().count(), 64);
        assert!(rules(0x7f, &[0]).is_err());
        assert!(rules(u64::MAX, &[0]).is_err());
    }

    #[test]
    fn raw_paths_read_as_sets_per_compared_term() {
        use seccomp::analysis::{Cond, Operand, Relation};
        use seccomp::domain::expr::Arena;
        use seccomp::domain::{Env, State};
        // `((args[1].lo >> 4) & 0xf)` as the recording walk builds it.
        let env = Env::new(None, None, seccomp::arch::AUDIT_ARCH_X86_64);
        let mut arena = Arena::default();
        let (mut s, mut sh) = (State::entry(), arena.entry());
        let ops = [
            cbpf::Op::LdxAbsSeccomp { k: 24 },
            cbpf::Op::Alu { op: cbpf::AluOp::Rsh, src: cbpf::Src::K, k: 4 },
            cbpf::Op::Alu { op: cbpf::AluOp::And, src: cbpf::Src::K, k: 0xf },
        ];
        for (pc, op) in ops.into_iter().enumerate() {
            let before = (s.a, s.x);
            seccomp::domain::step(pc, Some(op), &mut s, &env);
            arena.step(Some(op), &mut sh, before, &s);
        }
        let id = arena.resolve(sh.a, s.a);
        let e = Operand::Expr(arena.expr(id));
        let at = |pc, rel, k| Cond { pc: cbpf::Pc(pc), lhs: e.clone(), rel, rhs: Operand::Const(k) };
        // `jeq #1, hit, next; next: jeq #2, hit, miss`: two paths to hit.
        let one = [at(3, Relation::Eq, 1)];
        let two = [at(3, Relation::Ne, 1), at(4, Relation::Eq, 2)];
        let hit = raw_texts([&one[..], &two[..]]);
        assert_eq!(hit, [Some("((args[1].lo >> 0x4) & 0xf) in {0x1, 0x2}".to_string())]);
        // The miss path: both excluded, said as such.
        let miss = [at(3, Relation::Ne, 1), at(4, Relation::Ne, 2)];
        assert_eq!(raw_texts([&miss[..]]), [Some("((args[1].lo >> 0x4) & 0xf) not in {0x1, 0x2}".to_string())]);
        // One condition stays as the filter wrote it; a constant on the
        // left is mirrored (`5 > e` or `e > 5`: `e != 5`); a contradictory
        // path is dropped.
        assert_eq!(raw_texts([&[at(3, Relation::Gt, 5)][..]]), [Some("((args[1].lo >> 0x4) & 0xf) > 0x5".into())]);
        let mirrored = [Cond { pc: cbpf::Pc(3), lhs: Operand::Const(5), rel: Relation::Gt, rhs: e.clone() }];
        let either = raw_texts([&mirrored[..], &[at(4, Relation::Gt, 5)][..]]);
        assert_eq!(either, [Some("((args[1].lo >> 0x4) & 0xf) != 0x5".to_string())]);
        assert!(raw_texts([&[at(3, Relation::Eq, 1), at(4, Relation::Eq, 2)][..]]).is_empty());
        // A bit test is kept as written.
        let bits = [at(3, Relation::AnyBitSet, 4)];
        assert_eq!(raw_texts([&bits[..]]), [Some("(((args[1].lo >> 0x4) & 0xf) & 0x4) != 0".into())]);
    }

    #[test]
    fn high_and_low_words_make_one_64_bit_set() {
        use seccomp::analysis::{Cond, Operand, Relation};
        let at = |pc, lhs, rel, k| Cond { pc: cbpf::Pc(pc), lhs: Operand::Field(lhs), rel, rhs: Operand::Const(k) };
        // libseccomp's GT 0x1_0000_0005: hi > 1, or hi == 1 && lo > 5.
        let a = path_box(&[at(3, Field::ArgHi(0), Relation::Gt, 1)], true).unwrap().unwrap();
        let b = path_box(
            &[
                at(3, Field::ArgHi(0), Relation::Le, 1),
                at(4, Field::ArgHi(0), Relation::Eq, 1),
                at(6, Field::ArgLo(0), Relation::Gt, 5),
            ],
            true,
        )
        .unwrap()
        .unwrap();
        let merged = merge(vec![a, b]);
        assert_eq!(merged.len(), 1);
        assert_eq!(box_text(&merged[0]).unwrap(), "args[0] >= 0x100000006");
        assert_eq!(merged[0].pcs[0], 3);
        // On a 32-bit arch a test of the high word cannot be said.
        assert!(path_box(&[at(3, Field::ArgHi(0), Relation::Eq, 1)], false).is_err());
        // The instruction pointer cannot be said, and the error names the pc.
        let ip = path_box(&[at(9, Field::IpLo, Relation::Eq, 1)], true).unwrap_err();
        assert!(ip.to_string().starts_with("pc 9:"), "{ip}");
    }

    #[test]
    fn masked_word_pairs_read_as_64_bit_sets() {
        use seccomp::analysis::{Cond, Operand, Relation};
        let m = |pc, field, mask, rel, k| Cond {
            pc: cbpf::Pc(pc),
            lhs: Operand::Masked { field, mask },
            rel,
            rhs: Operand::Const(k),
        };
        let (lo, hi) = (Field::ArgLo(3), Field::ArgHi(3));
        // (lo & m) != 0, or (lo & m) == 0 and hi != 0: the complement of one point.
        let p1 = [m(5, lo, 0xffef_ffcd, Relation::Ne, 0)];
        let p2 = [m(5, lo, 0xffef_ffcd, Relation::Eq, 0), m(8, hi, 0xffff_ffff, Relation::Ne, 0)];
        let b = masked_union(&[&p1[..], &p2[..]], true).unwrap();
        assert_eq!(box_text(&b).unwrap(), "(args[3] & 0xffffffffffefffcd) != 0");
        assert!(box_rules(&b).is_err());
        // Six values of the low word, the high word zero: one set.
        let (lo, hi) = (Field::ArgLo(1), Field::ArgHi(1));
        let ops = [0u32, 1, 3, 4, 9, 10];
        let paths: Vec<Vec<Cond>> = ops
            .iter()
            .map(|&k| vec![m(3, lo, 0xffff_fe7f, Relation::Eq, k), m(6, hi, 0xffff_ffff, Relation::Eq, 0)])
            .collect();
        let refs: Vec<&[Cond]> = paths.iter().map(Vec::as_slice).collect();
        let b = masked_union(&refs, true).unwrap();
        assert_eq!(box_text(&b).unwrap(), "(args[1] & 0xfffffffffffffe7f) in {0, 0x1, 0x3, 0x4, 0x9, 0xa}");
        let rules = box_rules(&b).unwrap();
        assert_eq!(rules.len(), 6);
        assert_eq!(rules[5][0].to_string(), "(args[1] & 0xfffffffffffffe7f) == 0xa");
        // Two arguments, or an ordered test: not this reading.
        let two = [m(3, Field::ArgLo(0), 0xff, Relation::Eq, 1), m(4, Field::ArgLo(1), 0xff, Relation::Eq, 1)];
        assert!(masked_union(&[&two[..]], true).is_none());
        let ordered = [Cond { pc: cbpf::Pc(3), lhs: Operand::Field(lo), rel: Relation::Gt, rhs: Operand::Const(1) }];
        assert!(masked_union(&[&ordered[..]], true).is_none());
    }
}
