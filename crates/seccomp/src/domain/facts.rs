//! Relations of `struct seccomp_data` fields to constants along one path:
//! intervals, known bits, and values a field differs from.

use std::rc::Rc;

use cbpf::JmpOp;

use super::{Cmp, Field, Val};

/// Number of fields tracked.
const FIELDS: usize = 16;

/// What the branches along one path imply about the (unchanging) fields of
/// `struct seccomp_data`. Every fact is a true statement about the input on
/// that path; decisions drawn from them are therefore sound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    min: [u32; FIELDS],
    max: [u32; FIELDS],
    ones: [u32; FIELDS],
    zeros: [u32; FIELDS],
    /// Per field, the values it is known to differ from: a list shared
    /// with the facts this one was cloned from, so a branch costs O(1)
    /// whatever the path's length.
    not_equal: [Option<Rc<NotEqual>>; FIELDS],
}

/// One item of a list shared between the paths that split after it, and
/// the older items: a branch extends its list in O(1) instead of copying it.
#[derive(Debug, PartialEq, Eq)]
pub struct Node<T> {
    pub(crate) item: T,
    /// Items in this list (this one included).
    pub(crate) len: usize,
    pub(crate) older: Option<Rc<Node<T>>>,
}

impl<T> Node<T> {
    /// `list` with `item` in front.
    pub(crate) fn push(list: &Option<Rc<Node<T>>>, item: T) -> Option<Rc<Node<T>>> {
        let len = list.as_ref().map_or(0, |n| n.len) + 1;
        Some(Rc::new(Node { item, len, older: list.clone() }))
    }
}

impl<T> Drop for Node<T> {
    // Unlinks iteratively: a long list must not recurse once per node.
    fn drop(&mut self) {
        let mut next = self.older.take();
        while let Some(node) = next {
            next = match Rc::try_unwrap(node) {
                Ok(mut n) => n.older.take(),
                Err(_) => None,
            };
        }
    }
}

/// The items of a list, newest first.
fn items<T: Copy>(list: &Option<Rc<Node<T>>>) -> impl Iterator<Item = T> + '_ {
    std::iter::successors(list.as_deref(), |n| n.older.as_deref()).map(|n| n.item)
}

/// One "field != value" fact and the older ones on the same field.
pub type NotEqual = Node<u32>;

/// Longest "!=" list kept per field on one path; further facts of that
/// kind are dropped (sound: fewer facts only leave more branches
/// undecided), which bounds the cost of one decision.
const MAX_NOT_EQUAL: usize = 256;

impl Default for Facts {
    fn default() -> Self {
        Facts {
            min: [0; FIELDS],
            max: [u32::MAX; FIELDS],
            ones: [0; FIELDS],
            zeros: [0; FIELDS],
            not_equal: Default::default(),
        }
    }
}

impl Facts {
    fn idx(f: Field) -> usize {
        (f.index() as usize).min(FIELDS - 1)
    }

    /// The facts of a path that found the bits of `ones` set in `f` and
    /// those of `zeros` clear (disjoint), nothing else.
    pub fn with_bits(f: Field, ones: u32, zeros: u32) -> Facts {
        let mut facts = Facts::default();
        facts.set(f, (0, u32::MAX, ones, zeros & !ones));
        facts
    }

    /// What the facts say about field `f`: `(min, max, ones, zeros)`, that is
    /// `min <= f <= max`, `f & ones == ones` and `f & zeros == 0`.
    pub fn bounds(&self, f: Field) -> (u32, u32, u32, u32) {
        let i = Facts::idx(f);
        let pick = |a: &[u32; FIELDS], d: u32| a.get(i).copied().unwrap_or(d);
        (pick(&self.min, 0), pick(&self.max, u32::MAX), pick(&self.ones, 0), pick(&self.zeros, 0))
    }

    fn set(&mut self, f: Field, (min, max, ones, zeros): (u32, u32, u32, u32)) {
        let i = Facts::idx(f);
        for (arr, v) in [(&mut self.min, min), (&mut self.max, max), (&mut self.ones, ones), (&mut self.zeros, zeros)] {
            if let Some(slot) = arr.get_mut(i) {
                *slot = v;
            }
        }
    }

    /// Could field `f` hold `v`?
    pub fn admits(&self, f: Field, v: u32) -> bool {
        let (min, max, ones, zeros) = self.bounds(f);
        (min..=max).contains(&v) && v & ones == ones && v & zeros == 0 && !self.excluded(f, v)
    }

    /// Is `f != v` among the recorded facts?
    pub fn excluded(&self, f: Field, v: u32) -> bool {
        let mut node = self.not_equal.get(Facts::idx(f)).and_then(Option::as_deref);
        while let Some(n) = node {
            if n.item == v {
                return true;
            }
            node = n.older.as_deref();
        }
        false
    }

    /// Records `f != v`.
    fn exclude(&mut self, f: Field, v: u32) {
        if let Some(head) = self.not_equal.get_mut(Facts::idx(f)) {
            let len = head.as_ref().map_or(0, |n| n.len);
            if len < MAX_NOT_EQUAL {
                *head = Node::push(head, v);
            }
        }
    }

    /// A value of `f` the facts admit: the smallest at or above `min` that
    /// no recorded `!=` excludes, if the masks also allow it; `None` when
    /// none is found that way (the facts may still admit another).
    pub fn witness(&self, f: Field) -> Option<u32> {
        let (min, max, _, _) = self.bounds(f);
        let mut v = min;
        for _ in 0..=MAX_NOT_EQUAL {
            if self.admits(f, v) {
                return Some(v);
            }
            v = v.checked_add(1).filter(|&n| n <= max)?;
        }
        None
    }

    /// The outcome of `f OP k` if the facts decide it.
    pub fn decide_field(&self, f: Field, op: JmpOp, k: u32) -> Option<bool> {
        let (min, max, ones, zeros) = self.bounds(f);
        // Known bits bound the word too: it holds its ones and lacks its
        // zeros (a tree fixing an argument's bits from the top decides
        // order comparisons with them).
        let (min, max) = (min.max(ones), max.min(!zeros));
        if min == max {
            return Some(op.eval(min, k));
        }
        match op {
            JmpOp::Jeq => (!self.admits(f, k)).then_some(false),
            JmpOp::Jgt if min > k => Some(true),
            JmpOp::Jgt if max <= k => Some(false),
            JmpOp::Jge if min >= k => Some(true),
            JmpOp::Jge if max < k => Some(false),
            JmpOp::Jset if ones & k != 0 => Some(true),
            JmpOp::Jset if k & !zeros == 0 => Some(false),
            _ => None,
        }
    }

    /// Records that `f OP k` came out `holds`; false if that is impossible.
    fn assume_field(&mut self, f: Field, op: JmpOp, k: u32, holds: bool) -> bool {
        if let Some(known) = self.decide_field(f, op, k) {
            return known == holds;
        }
        let (mut min, mut max, mut ones, mut zeros) = self.bounds(f);
        match (op, holds) {
            (JmpOp::Jeq, true) => {
                min = k;
                max = k;
            }
            (JmpOp::Jeq, false) => {
                if min == k {
                    min = k.saturating_add(1);
                }
                if max == k {
                    max = k.saturating_sub(1);
                }
                self.exclude(f, k);
            }
            (JmpOp::Jgt, true) => match k.checked_add(1) {
                Some(k1) => min = min.max(k1),
                None => return false,
            },
            (JmpOp::Jgt, false) => max = max.min(k),
            (JmpOp::Jge, true) => min = min.max(k),
            (JmpOp::Jge, false) => match k.checked_sub(1) {
                Some(k1) => max = max.min(k1),
                None => return false,
            },
            (JmpOp::Jset, true) => {
                let candidates = k & !zeros;
                if candidates.count_ones() == 1 {
                    ones |= candidates;
                }
            }
            (JmpOp::Jset, false) => zeros |= k,
        }
        if min > max || ones & zeros != 0 {
            return false;
        }
        self.set(f, (min, max, ones, zeros));
        min != max || self.admits(f, min)
    }

    /// Keeps what both `self` and `other` say (the facts that hold on
    /// either of two paths that meet): the hull of the intervals, the bits
    /// both know, the `!=` both record.
    pub fn join(&mut self, other: &Facts) {
        for (mine, theirs) in self.min.iter_mut().zip(&other.min) {
            *mine = (*mine).min(*theirs);
        }
        for (mine, theirs) in self.max.iter_mut().zip(&other.max) {
            *mine = (*mine).max(*theirs);
        }
        for (mine, theirs) in self.ones.iter_mut().zip(&other.ones).chain(self.zeros.iter_mut().zip(&other.zeros)) {
            *mine &= *theirs;
        }
        for (mine, theirs) in self.not_equal.iter_mut().zip(&other.not_equal) {
            let same = match (mine.as_ref(), theirs) {
                (Some(a), Some(b)) => Rc::ptr_eq(a, b),
                (None, _) => true,
                (Some(_), None) => false,
            };
            if !same {
                let both: Vec<u32> = items(mine).filter(|v| items(theirs).any(|w| w == *v)).collect();
                *mine = both.into_iter().rev().fold(None, |list, v| Node::push(&list, v));
            }
        }
    }

    /// The outcome of `(f & mask) OP k` if the facts decide it: from the
    /// known bits alone (the interval says nothing about a masked value).
    fn decide_masked(&self, f: Field, mask: u32, op: JmpOp, k: u32) -> Option<bool> {
        if mask == u32::MAX {
            return self.decide_field(f, op, k);
        }
        let (_, _, ones, zeros) = self.bounds(f);
        if op == JmpOp::Jset {
            return self.decide_field(f, JmpOp::Jset, k & mask);
        }
        if mask & !(ones | zeros) == 0 {
            return Some(op.eval(ones & mask, k));
        }
        // `f & mask` holds the known ones of the mask and at most its bits
        // not known to be zero.
        let (low, high) = (ones & mask, mask & !zeros);
        match op {
            JmpOp::Jgt if low > k => return Some(true),
            JmpOp::Jgt if high <= k => return Some(false),
            JmpOp::Jge if low >= k => return Some(true),
            JmpOp::Jge if high < k => return Some(false),
            _ => {}
        }
        // A bit of `k` the mask or the known zeros rule out, or a known one
        // `k` lacks: never equal.
        let never = k & !mask != 0 || k & zeros & mask != 0 || ones & mask & !k != 0;
        (op == JmpOp::Jeq && never).then_some(false)
    }

    /// Records that `(f & mask) OP k` came out `holds`; false if that is
    /// impossible. Exact for a mask of every bit, `jeq` taken (the masked
    /// bits are known) and `jset`; nothing is learnt otherwise (sound).
    fn assume_masked(&mut self, f: Field, mask: u32, op: JmpOp, k: u32, holds: bool) -> bool {
        // `and #0xffffffff` (OpenSSH's high-word masks) keeps the word.
        if mask == u32::MAX {
            return self.assume_field(f, op, k, holds);
        }
        if op == JmpOp::Jset {
            return self.assume_field(f, JmpOp::Jset, k & mask, holds);
        }
        if let Some(known) = self.decide_masked(f, mask, op, k) {
            return known == holds;
        }
        if let (JmpOp::Jeq, true) = (op, holds) {
            let (min, max, ones, zeros) = self.bounds(f);
            let (ones, zeros) = (ones | k, zeros | (mask & !k));
            if ones & zeros != 0 {
                return false;
            }
            self.set(f, (min, max, ones, zeros));
            return min != max || self.admits(f, min);
        }
        true
    }

    /// The outcome of `cmp` if the facts (or known operands) decide it.
    pub fn decide(&self, cmp: Cmp) -> Option<bool> {
        match (cmp.lhs, cmp.rhs) {
            (Val::Known(a), Val::Known(b)) => Some(cmp.op.eval(a, b)),
            (Val::Masked { field, mask }, Val::Known(k)) => self.decide_masked(field, mask, cmp.op, k),
            (Val::Known(k), Val::Masked { field, mask }) if matches!(cmp.op, JmpOp::Jeq | JmpOp::Jset) => {
                self.decide_masked(field, mask, cmp.op, k)
            }
            (Val::Exact(f), Val::Known(k)) => self.decide_field(f, cmp.op, k),
            (Val::Known(k), Val::Exact(f)) => match cmp.op {
                JmpOp::Jeq | JmpOp::Jset => self.decide_field(f, cmp.op, k),
                // k > f  <=>  !(f >= k)
                JmpOp::Jgt => self.decide_field(f, JmpOp::Jge, k).map(|b| !b),
                // k >= f  <=>  !(f > k)
                JmpOp::Jge => self.decide_field(f, JmpOp::Jgt, k).map(|b| !b),
            },
            (Val::Exact(f), Val::Exact(g)) if f == g => match cmp.op {
                JmpOp::Jeq | JmpOp::Jge => Some(true),
                JmpOp::Jgt => Some(false),
                JmpOp::Jset => self.decide_field(f, JmpOp::Jset, u32::MAX),
            },
            _ => None,
        }
    }

    /// Records that `cmp` came out `holds`; false if that is impossible.
    pub fn assume(&mut self, cmp: Cmp, holds: bool) -> bool {
        match (cmp.lhs, cmp.rhs) {
            (Val::Known(a), Val::Known(b)) => cmp.op.eval(a, b) == holds,
            (Val::Masked { field, mask }, Val::Known(k)) => self.assume_masked(field, mask, cmp.op, k, holds),
            (Val::Known(k), Val::Masked { field, mask }) if matches!(cmp.op, JmpOp::Jeq | JmpOp::Jset) => {
                self.assume_masked(field, mask, cmp.op, k, holds)
            }
            (Val::Exact(f), Val::Known(k)) => self.assume_field(f, cmp.op, k, holds),
            (Val::Known(k), Val::Exact(f)) => match cmp.op {
                JmpOp::Jeq | JmpOp::Jset => self.assume_field(f, cmp.op, k, holds),
                JmpOp::Jgt => self.assume_field(f, JmpOp::Jge, k, !holds),
                JmpOp::Jge => self.assume_field(f, JmpOp::Jgt, k, !holds),
            },
            _ => self.decide(cmp).is_none_or(|b| b == holds),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_decide_and_reject() {
        let f = Field::ArgLo(0);
        let mut facts = Facts::default();
        assert!(facts.assume_field(f, JmpOp::Jgt, 10, true));
        assert_eq!(facts.decide_field(f, JmpOp::Jeq, 10), Some(false));
        assert_eq!(facts.decide_field(f, JmpOp::Jge, 11), Some(true));
        assert!(facts.assume_field(f, JmpOp::Jge, 13, false));
        assert!(facts.assume_field(f, JmpOp::Jeq, 11, false));
        // 11 <= v <= 12 and v != 11 leave only 12.
        assert_eq!(facts.decide_field(f, JmpOp::Jeq, 12), Some(true));
        assert!(!facts.clone().assume_field(f, JmpOp::Jeq, 12, false));
        assert!(!facts.clone().assume_field(f, JmpOp::Jgt, 12, true));
        let mut bits = Facts::default();
        assert!(bits.assume_field(f, JmpOp::Jset, 0b100, true));
        assert_eq!(bits.decide_field(f, JmpOp::Jset, 0b110), Some(true));
        assert!(bits.assume_field(f, JmpOp::Jset, 0b011, false));
        assert_eq!(bits.decide_field(f, JmpOp::Jeq, 0b101), Some(false));
        assert!(!bits.clone().assume_field(f, JmpOp::Jeq, 0b001, true));
        assert!(bits.assume_field(f, JmpOp::Jeq, 0b100, true));
        assert_eq!(bits.decide_field(f, JmpOp::Jgt, 3), Some(true));
        // Mirrored operands: 5 > f  <=>  f < 5.
        let mut m = Facts::default();
        let cmp = Cmp { op: JmpOp::Jgt, lhs: Val::Known(5), rhs: Val::Exact(f) };
        assert!(m.assume(cmp, true));
        assert_eq!(m.decide_field(f, JmpOp::Jge, 5), Some(false));
        assert_eq!(m.decide(Cmp { op: JmpOp::Jge, lhs: Val::Known(4), rhs: Val::Exact(f) }), Some(true));
    }

    #[test]
    fn masked_equalities_are_known_bits() {
        let f = Field::ArgLo(1);
        let masked = |op, k| Cmp { op, lhs: Val::Masked { field: f, mask: 0xffff_fe7f }, rhs: Val::Known(k) };
        let mut facts = Facts::default();
        // Unequal under the mask teaches nothing.
        assert!(facts.assume(masked(JmpOp::Jeq, 0), false));
        assert_eq!(facts.bounds(f), (0, u32::MAX, 0, 0));
        // `(f & 0xfffffe7f) == 9`: the masked bits are known.
        assert!(facts.assume(masked(JmpOp::Jeq, 9), true));
        assert_eq!(facts.bounds(f), (0, u32::MAX, 9, 0xffff_fe76));
        assert!(facts.admits(f, 0x189) && !facts.admits(f, 0x8));
        assert_eq!(facts.decide(masked(JmpOp::Jeq, 9)), Some(true));
        assert_eq!(facts.decide(masked(JmpOp::Jeq, 1)), Some(false));
        assert_eq!(facts.decide(masked(JmpOp::Jset, 0x8)), Some(true));
        assert!(!facts.clone().assume(masked(JmpOp::Jeq, 10), true));
        // A constant with a bit outside the mask is never equal.
        assert_eq!(Facts::default().decide(masked(JmpOp::Jeq, 0x80)), Some(false));
        // A mask of every bit is the word itself: `!=` is recorded.
        let whole = |op, k| Cmp { op, lhs: Val::Masked { field: f, mask: u32::MAX }, rhs: Val::Known(k) };
        let mut hi = Facts::default();
        assert!(hi.assume(whole(JmpOp::Jeq, 0), false));
        assert!(hi.excluded(f, 0));
        assert_eq!(hi.witness(f), Some(1));
        // `jset` of a masked word tests the bits both keep.
        let mut bits = Facts::default();
        assert!(bits.assume(masked(JmpOp::Jset, 0x181), false));
        assert_eq!(bits.bounds(f), (0, u32::MAX, 0, 0x1));
    }

    /// Known bits bound a word and its masked values, so a tree fixing an
    /// argument's bits from the top decides order comparisons with them;
    /// each answer checked against every value the bits admit.
    #[test]
    fn known_bits_decide_order_comparisons() {
        let f = Field::ArgLo(2);
        // Bits 15..12 known: 0b0100 (0x4000 <= f <= 0xffff_4fff, masked
        // 0xff00: 0x4000 ..= 0x4f00).
        let facts = Facts::with_bits(f, 0x4000, 0xb000);
        let admitted = |w: u32| w & 0xf000 == 0x4000;
        let samples: Vec<u32> =
            (0..=0xffff_u32).step_by(0x80).chain([u32::MAX, 0xffff_4fff]).filter(|&w| admitted(w)).collect();
        for (mask, k) in [
            (u32::MAX, 0x3fff),
            (u32::MAX, 0x4000),
            (0xff00, 0x3fff),
            (0xff00, 0x4f00),
            (0xff00, 0x4eff),
            (0xff00, 0x5000),
        ] {
            for op in [JmpOp::Jgt, JmpOp::Jge] {
                let cmp = Cmp { op, lhs: Val::Masked { field: f, mask }, rhs: Val::Known(k) };
                let truths: Vec<bool> = samples.iter().map(|&w| op.eval(w & mask, k)).collect();
                let constant = truths.iter().all(|&t| t == truths[0]).then_some(truths[0]);
                let decided = facts.decide(cmp);
                assert!(decided.is_none() || decided == constant, "{op:?} {mask:#x} {k:#x}: {decided:?}");
                // Every comparison here except `f > 0x3fff`-style ones on the
                // whole word (whose high bits are free) is decided.
                if mask != u32::MAX || k < 0x4000 {
                    assert_eq!(decided, constant, "{op:?} {mask:#x} {k:#x}");
                }
            }
        }
        assert_eq!(facts.decide_field(f, JmpOp::Jge, 0x4000), Some(true));
        assert_eq!(facts.decide_field(f, JmpOp::Jgt, 0x3fff), Some(true));
    }

    #[test]
    fn a_join_keeps_what_both_paths_say() {
        let f = Field::Nr;
        let (mut a, mut b) = (Facts::default(), Facts::default());
        for (facts, lo) in [(&mut a, 10), (&mut b, 20)] {
            assert!(facts.assume_field(f, JmpOp::Jge, lo, true));
            assert!(facts.assume_field(f, JmpOp::Jgt, 30, false));
            assert!(facts.assume_field(f, JmpOp::Jeq, 25, false));
            assert!(facts.assume_field(f, JmpOp::Jset, 1, true));
        }
        assert!(a.assume_field(f, JmpOp::Jeq, 27, false));
        assert!(b.assume_field(Field::Arch, JmpOp::Jeq, 3, true));
        a.join(&b);
        assert_eq!(a.bounds(f), (10, 30, 1, 0));
        assert!(a.excluded(f, 25));
        assert!(!a.excluded(f, 27));
        assert_eq!(a.bounds(Field::Arch), (0, u32::MAX, 0, 0));
        assert_eq!(a.decide_field(f, JmpOp::Jgt, 30), Some(false));
    }
}
