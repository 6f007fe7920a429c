//! Boxes and raw paths as readable conditions.

use seccomp::analysis::{Cond, Operand, Relation};

use super::compare::{set_conds, MAX_POINTS};
use super::{list, mirror, rel_set, ArgBox, ArgCond, ArgSet, CmpOp, Num};
use crate::set::Set;

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
}
