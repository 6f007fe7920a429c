//! The values one condition admits, and the two questions the narrower-rule
//! definition asks of rules: do two overlap (and where), and is one inside
//! the other. Exact, over the whole 64-bit (or 32-bit) range.

use super::Cond;
use crate::rules::{CmpOp, ARGS};
use crate::set::Set;

/// The values of one argument a condition admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// Intervals (every comparison but the masked one).
    Runs(Set),
    /// `x & mask == value` (`value` inside `mask`), over `0..=max`.
    Masked { mask: u64, value: u64, max: u64 },
}

impl Atom {
    /// The values `c` admits (its width's low bits).
    pub fn of(c: &Cond) -> Atom {
        let max = c.width.max();
        let (v, d) = (c.cmp.value & max, c.cmp.value_two & max);
        let runs = |r: &[(u64, u64)]| Atom::Runs(Set::from_runs(max, r.iter().copied()));
        match c.cmp.op {
            CmpOp::Eq => runs(&[(v, v)]),
            CmpOp::Ne => Atom::Runs(Set::point(max, v).complement()),
            CmpOp::Lt if v == 0 => Atom::Runs(Set::empty(max)),
            CmpOp::Lt => runs(&[(0, v - 1)]),
            CmpOp::Le => runs(&[(0, v)]),
            CmpOp::Gt if v == max => Atom::Runs(Set::empty(max)),
            CmpOp::Gt => runs(&[(v + 1, max)]),
            CmpOp::Ge => runs(&[(v, max)]),
            CmpOp::MaskedEq => Atom::Masked { mask: v, value: d & v, max },
        }
    }

    fn max(&self) -> u64 {
        match self {
            Atom::Runs(s) => s.max,
            Atom::Masked { max, .. } => *max,
        }
    }

    /// Every value?
    pub fn is_full(&self) -> bool {
        match self {
            Atom::Runs(s) => s.is_full(),
            Atom::Masked { mask, .. } => *mask == 0,
        }
    }

    /// No value?
    pub fn is_empty(&self) -> bool {
        match self {
            Atom::Runs(s) => s.is_empty(),
            Atom::Masked { .. } => false,
        }
    }

    /// A value both admit, if any.
    pub fn meet(&self, other: &Atom) -> Option<u64> {
        match (self, other) {
            (Atom::Runs(a), Atom::Runs(b)) => a.intersect(b).runs().first().map(|r| r.0),
            (Atom::Runs(s), Atom::Masked { mask, value, max }) | (Atom::Masked { mask, value, max }, Atom::Runs(s)) => {
                s.runs().iter().find_map(|&(lo, hi)| next_masked(lo, *mask, *value, *max).filter(|&x| x <= hi))
            }
            (Atom::Masked { mask: m1, value: v1, .. }, Atom::Masked { mask: m2, value: v2, .. }) => {
                ((v1 ^ v2) & m1 & m2 == 0).then_some(v1 | v2)
            }
        }
    }

    /// Is every value `self` admits admitted by `other`?
    pub fn inside(&self, other: &Atom) -> bool {
        if self.is_empty() || other.is_full() {
            return true;
        }
        match (self, other) {
            (Atom::Runs(a), Atom::Runs(b)) => a.intersect(b) == *a,
            (Atom::Runs(a), Atom::Masked { mask, value, .. }) => {
                a.runs().iter().all(|&(lo, hi)| run_inside_masked(lo, hi, *mask, *value))
            }
            (Atom::Masked { .. }, Atom::Runs(b)) => Atom::Runs(b.complement()).meet(self).is_none(),
            (Atom::Masked { mask: m1, value: v1, .. }, Atom::Masked { mask: m2, value: v2, .. }) => {
                m2 & !m1 == 0 && v1 & m2 == *v2
            }
        }
    }
}

/// Is every value of `[lo, hi]` one with `x & mask == value`?
fn run_inside_masked(lo: u64, hi: u64, mask: u64, value: u64) -> bool {
    if lo & mask != value {
        return false;
    }
    // Below the highest bit where lo and hi differ, the run takes every
    // pattern: no mask bit may be there.
    let diff = lo ^ hi;
    if diff == 0 {
        return true;
    }
    let k = 63 - diff.leading_zeros();
    let below = if k >= 63 { u64::MAX } else { (1u64 << (k + 1)) - 1 };
    mask & below == 0
}

/// The smallest `x >= a`, `x <= max`, with `x & m == v` (`v` inside `m`).
pub(crate) fn next_masked(a: u64, m: u64, v: u64, max: u64) -> Option<u64> {
    if a > max {
        return None;
    }
    if a & m == v {
        return Some(a);
    }
    let low = |k: u32| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    // The highest fixed bit where a disagrees with v.
    let i = 63 - ((a ^ v) & m).leading_zeros();
    let x = if (v >> i) & 1 == 1 {
        // a has 0 there: set it, keep what is above, the least below.
        (a & !low(i + 1)) | (1u64 << i) | (v & low(i))
    } else {
        // a has 1 there: carry into the lowest free 0 bit of a above i.
        let free_zero = !m & !a & !low(i + 1) & max;
        if free_zero == 0 {
            return None;
        }
        let j = free_zero.trailing_zeros();
        (a & !low(j + 1)) | (1u64 << j) | (v & low(j))
    };
    (x <= max).then_some(x)
}

/// A rule's conditions as one atom per argument (`None`: any value).
pub(crate) type Box6 = [Option<Atom>; ARGS];

/// `conds` as a box; `None` when a rule compares one argument twice
/// (never compared with a rule of another action: see
/// [`crate::profile::runc`]).
pub(crate) fn boxed(conds: &[Cond]) -> Option<Box6> {
    let mut out: Box6 = Default::default();
    for c in conds {
        let slot = out.get_mut(usize::from(c.cmp.index))?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(Atom::of(c));
    }
    Some(out)
}

/// Arguments both boxes admit, if any.
pub(crate) fn overlap_box(a: &Box6, b: &Box6) -> Option<[u64; ARGS]> {
    let mut args = [0u64; ARGS];
    for ((x, y), slot) in a.iter().zip(b).zip(&mut args) {
        *slot = match (x, y) {
            (None, None) => 0,
            (Some(x), None) | (None, Some(x)) => Atom::Runs(Set::full(x.max())).meet(x)?,
            (Some(x), Some(y)) => x.meet(y)?,
        };
    }
    Some(args)
}

/// Is every input `a` admits admitted by `b`?
pub(crate) fn inside_box(a: &Box6, b: &Box6) -> bool {
    if a.iter().flatten().any(Atom::is_empty) {
        return true;
    }
    a.iter().zip(b).all(|(x, y)| match (x, y) {
        (_, None) => true,
        (None, Some(y)) => y.is_full(),
        (Some(x), Some(y)) => x.inside(y),
    })
}

/// Arguments both rules match, if any (`None` also when a rule compares
/// an argument twice).
#[cfg(test)]
pub(crate) fn overlap(a: &[Cond], b: &[Cond]) -> Option<[u64; ARGS]> {
    overlap_box(&boxed(a)?, &boxed(b)?)
}

/// Is every input `a` matches matched by `b`? `None` when a rule compares
/// an argument twice.
pub(crate) fn inside(a: &[Cond], b: &[Cond]) -> Option<bool> {
    Some(inside_box(&boxed(a)?, &boxed(b)?))
}

/// Is `a` strictly inside `b`?
pub(crate) fn strictly_inside(a: &[Cond], b: &[Cond]) -> Option<bool> {
    Some(inside(a, b)? && !inside(b, a)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::profile::Width;
    use crate::rules::ArgCond;

    fn cond(op: CmpOp, value: u64, value_two: u64) -> Cond {
        Cond { width: Width::Low32, cmp: ArgCond { index: 0, op, value, value_two } }
    }

    /// Every atom over an 8-bit universe, checked against brute force.
    #[test]
    fn atoms_agree_with_brute_force_on_8_bits() {
        let max = 0xffu64;
        let mut atoms = Vec::new();
        for v in [0u64, 1, 3, 0x10, 0x7f, 0x80, 0xfe, 0xff] {
            for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge] {
                atoms.push(match Atom::of(&cond(op, v, 0)) {
                    Atom::Runs(s) => Atom::Runs(Set::from_runs(max, s.runs().iter().copied())),
                    m => m,
                });
            }
        }
        for (m, v) in [(0u64, 0u64), (0x0f, 0x05), (0xf0, 0x30), (0x81, 0x80), (0xff, 0x42), (0x24, 0x04)] {
            atoms.push(Atom::Masked { mask: m, value: v, max });
        }
        let has = |a: &Atom, x: u64| match a {
            Atom::Runs(s) => s.runs().iter().any(|&(lo, hi)| (lo..=hi).contains(&x)),
            Atom::Masked { mask, value, .. } => x & mask == *value,
        };
        for a in &atoms {
            for b in &atoms {
                let both: Vec<u64> = (0..=max).filter(|&x| has(a, x) && has(b, x)).collect();
                match a.meet(b) {
                    Some(x) => assert!(has(a, x) && has(b, x), "{a:?} {b:?} {x}"),
                    None => assert!(both.is_empty(), "{a:?} {b:?} miss {both:?}"),
                }
                let inside = (0..=max).all(|x| !has(a, x) || has(b, x));
                assert_eq!(a.inside(b), inside, "{a:?} inside {b:?}");
            }
        }
        for (a, m, v) in
            [(0u64, 0x0fu64, 0x05u64), (6, 0x0f, 0x05), (0x36, 0xf0, 0x30), (0x90, 0x81, 0x80), (0xfe, 0x24, 0x04)]
        {
            let want = (a..=max).find(|x| x & m == v);
            assert_eq!(next_masked(a, m, v, max), want, "{a:#x} {m:#x} {v:#x}");
        }
    }

    #[test]
    fn rules_nest_and_overlap() {
        let c = |index, op, value| Cond { width: Width::Bits64, cmp: ArgCond { index, op, value, value_two: 0 } };
        let eq3 = [c(0, CmpOp::Eq, 3)];
        let ne7 = [c(0, CmpOp::Ne, 7)];
        let eq3_and = [c(0, CmpOp::Eq, 3), c(1, CmpOp::Eq, 2)];
        assert_eq!(strictly_inside(&eq3, &ne7), Some(true));
        assert_eq!(strictly_inside(&eq3_and, &eq3), Some(true));
        assert_eq!(strictly_inside(&eq3, &[]), Some(true));
        let gt3 = [c(0, CmpOp::Gt, 3)];
        let lt10 = [c(0, CmpOp::Lt, 10)];
        assert_eq!(inside(&gt3, &lt10), Some(false));
        assert_eq!(inside(&lt10, &gt3), Some(false));
        assert_eq!(overlap(&gt3, &lt10), Some([4, 0, 0, 0, 0, 0]));
        assert_eq!(overlap(&[c(0, CmpOp::Lt, 0)], &[]), None);
        assert_eq!(overlap(&[c(0, CmpOp::Eq, 1), c(0, CmpOp::Eq, 2)], &[]), None);
    }
}
