//! A set of argument values said as the fewest comparisons, and a box as
//! the rules (ANDs of comparisons) whose OR it is.

use super::{list, ArgBox, ArgCond, ArgSet, CmpOp, Inexpressible, Num};
use crate::set::Set;

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
pub(super) const MAX_POINTS: u64 = 16;

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::rules::ARGS;

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
}
