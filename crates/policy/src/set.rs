//! Sets of argument values as sorted, disjoint, non-adjacent closed
//! intervals over `0..=max` (`max` is `u32::MAX` for a 32-bit word, or
//! `u64::MAX` for a whole 64-bit argument).

/// A set of values in `0..=max`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Set {
    /// Largest value of the universe.
    pub max: u64,
    /// Sorted, disjoint, non-adjacent `(lo, hi)` intervals, `lo <= hi`.
    runs: Vec<(u64, u64)>,
}

impl Set {
    /// Every value of `0..=max`.
    pub fn full(max: u64) -> Set {
        Set { max, runs: vec![(0, max)] }
    }

    /// No value.
    pub fn empty(max: u64) -> Set {
        Set { max, runs: Vec::new() }
    }

    /// The intervals, ascending.
    pub fn runs(&self) -> &[(u64, u64)] {
        &self.runs
    }

    /// Is it every value?
    pub fn is_full(&self) -> bool {
        self.runs == [(0, self.max)]
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The set from arbitrary intervals (clamped to `max`, merged).
    pub fn from_runs(max: u64, runs: impl IntoIterator<Item = (u64, u64)>) -> Set {
        let mut v: Vec<(u64, u64)> =
            runs.into_iter().filter(|&(a, b)| a <= b && a <= max).map(|(a, b)| (a, b.min(max))).collect();
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Set { max, runs: out }
    }

    /// Values in either set.
    pub fn union(&self, other: &Set) -> Set {
        Set::from_runs(self.max.max(other.max), self.runs.iter().chain(&other.runs).copied())
    }

    /// Values in both sets.
    pub fn intersect(&self, other: &Set) -> Set {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while let (Some(&(a, b)), Some(&(c, d))) = (self.runs.get(i), other.runs.get(j)) {
            let (lo, hi) = (a.max(c), b.min(d));
            if lo <= hi {
                out.push((lo, hi));
            }
            if b < d {
                i += 1;
            } else {
                j += 1;
            }
        }
        Set { max: self.max.min(other.max), runs: out }
    }

    /// The values of `0..=max` not in the set.
    pub fn complement(&self) -> Set {
        let mut out = Vec::new();
        let mut next = Some(0u64);
        for &(a, b) in &self.runs {
            if let Some(n) = next {
                if a > n {
                    out.push((n, a - 1));
                }
            }
            next = b.checked_add(1);
        }
        if let Some(n) = next.filter(|&n| n <= self.max) {
            out.push((n, self.max));
        }
        Set { max: self.max, runs: out }
    }

    /// How many values (saturating).
    pub fn count(&self) -> u64 {
        self.runs.iter().fold(0u64, |n, &(a, b)| n.saturating_add(b - a).saturating_add(1))
    }

    /// `{v}` in `0..=max`.
    pub fn point(max: u64, v: u64) -> Set {
        Set::from_runs(max, [(v, v)])
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_and_complement() {
        let m = u32::MAX as u64;
        let s = Set::from_runs(m, [(5, 9), (0, 3), (4, 4), (20, 30)]);
        assert_eq!(s.runs(), &[(0, 9), (20, 30)]);
        assert_eq!(s.complement().runs(), &[(10, 19), (31, m)]);
        assert_eq!(s.complement().complement(), s);
        assert!(s.union(&s.complement()).is_full());
        assert!(s.intersect(&s.complement()).is_empty());
        assert_eq!(s.intersect(&Set::from_runs(m, [(8, 25)])).runs(), &[(8, 9), (20, 25)]);
        assert_eq!(Set::full(u64::MAX).complement().runs(), &[]);
        assert_eq!(Set::point(u64::MAX, u64::MAX).complement().runs(), &[(0, u64::MAX - 1)]);
        assert_eq!(s.count(), 21);
    }
}
