//! A seeded xorshift generator: deterministic random test cases without a
//! dependency (the property tests of chain's trees, the classic
//! interpreter's trees, the libseccomp differential).

/// Xorshift64 (13, 7, 17) from a nonzero seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// An element of `v` (not empty).
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        #[allow(clippy::indexing_slicing)]
        &v[self.below(v.len())]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn draws_are_deterministic_and_in_range() {
        let (mut a, mut b) = (Rng(7), Rng(7));
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert!(xs.windows(2).all(|w| w[0] != w[1]));
        assert!((0..1000).all(|_| a.below(3) < 3));
        assert!((0..1000).any(|_| a.chance(50)) && (0..1000).any(|_| !a.chance(50)));
        assert_eq!(*Rng(1).pick(&[9]), 9);
    }
}
