//! One path's conditions read as a box of argument sets, and the boxes of
//! one action merged.

use std::collections::BTreeMap;

use seccomp::analysis::{Cond, Field, Operand, Relation};

use super::{mirror, rel_set, ArgBox, ArgSet, Inexpressible, ARGS};
use crate::set::Set;

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::rules::box_text;

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
}
