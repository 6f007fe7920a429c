//! Complements and unions of masked word tests read as one set of
//! `args[i] & M`.

use seccomp::analysis::{Cond, Field, Operand, Relation};

use super::{mirror, ArgBox, ArgSet, ARGS};
use crate::set::Set;

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::rules::{box_rules, box_text};

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
