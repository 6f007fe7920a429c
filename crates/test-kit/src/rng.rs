//! SplitMix64, the seeded generator behind the branch inputs' random part
//! and the seeded form of the program generator ([`crate::gen::seeded`]).

/// SplitMix64: a tiny seeded generator for reproducible inputs and programs.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `next() % n` as usize (`n > 0`).
pub(crate) fn below(next: &mut (impl FnMut() -> u64 + ?Sized), n: usize) -> usize {
    (next() % n.max(1) as u64) as usize
}

pub(crate) fn pick<T: Copy>(next: &mut (impl FnMut() -> u64 + ?Sized), items: &[T], fallback: T) -> T {
    items.get(below(next, items.len())).copied().unwrap_or(fallback)
}
