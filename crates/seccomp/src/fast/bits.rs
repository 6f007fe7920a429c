//! A bit set of pcs as `u64` words (bit `i` is bit `i % 64` of word
//! `i / 64`): the specialiser's set of pcs where a state waits.

/// The lowest bit index in `from..=to` set in the bit set `words` (bit `i`
/// is bit `i % 64` of word `i / 64`), reading only the words up to `to`'s.
#[inline(always)]
pub(super) fn lowest_set(words: &[u64], from: usize, to: usize) -> Option<usize> {
    let mut word = from / 64;
    let last = to / 64;
    let mut bits = words.get(word)? & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            let i = word * 64 + bits.trailing_zeros() as usize;
            return (i <= to).then_some(i);
        }
        if word >= last {
            return None;
        }
        word += 1;
        bits = *words.get(word)?;
    }
}

#[cfg(test)]
mod tests {
    use super::lowest_set;

    #[test]
    fn the_lowest_set_bit_is_found_within_its_bounds_only() {
        // Bits 3, 64, 130 and 255 of a 256-bit set.
        let words = [1u64 << 3, 1, 1 << 2, 1 << 63];
        assert_eq!(lowest_set(&words, 0, usize::MAX), Some(3));
        assert_eq!(lowest_set(&words, 3, 3), Some(3));
        assert_eq!(lowest_set(&words, 4, 63), None);
        assert_eq!(lowest_set(&words, 4, 64), Some(64));
        assert_eq!(lowest_set(&words, 65, 129), None);
        assert_eq!(lowest_set(&words, 65, 130), Some(130));
        assert_eq!(lowest_set(&words, 131, usize::MAX), Some(255));
        assert_eq!(lowest_set(&words, 131, 254), None);
        // Past the set: none, whatever the bound.
        assert_eq!(lowest_set(&words, 256, usize::MAX), None);
        assert_eq!(lowest_set(&[], 0, usize::MAX), None);
    }
}
