//! `struct seccomp_data` (include/uapi/linux/seccomp.h): what a seccomp
//! filter reads.
//!
//! 64 bytes in host byte order; the kernel does no byte swapping. Every
//! engine in this workspace models a little-endian host, so [`SeccompData::to_bytes`]
//! writes the host's byte order, little-endian here (the low half of `args[i]` at `16 + 8*i`, the high
//! half at `20 + 8*i`; see SPEC §5.1).

/// Size of `struct seccomp_data` in bytes; `ld len` in a seccomp filter reads this.
pub const SECCOMP_DATA_SIZE: usize = cbpf::uapi::seccomp::SECCOMP_DATA_SIZE as usize;
pub use cbpf::uapi::seccomp::{OFFSET_ARCH, OFFSET_ARGS, OFFSET_IP, OFFSET_NR};

/// Mirror of `struct seccomp_data`: the one definition lives in the classic
/// interpreter ([`cbpf::SeccompData`]), which runs filters on it.
pub use cbpf::SeccompData;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_kernel_struct() {
        let d = SeccompData {
            nr: -1,
            arch: 0xc000_003e,
            instruction_pointer: 0x1122_3344_5566_7788,
            args: [1, 2, 3, 4, 5, 0xaabb_ccdd_0000_0006],
        };
        let b = d.to_bytes();
        assert_eq!(&b[0..4], &[0xff; 4]);
        assert_eq!(&b[4..8], &0xc000_003eu32.to_le_bytes());
        assert_eq!(&b[8..16], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[56..64], &0xaabb_ccdd_0000_0006u64.to_le_bytes());
        assert_eq!(SeccompData::from_bytes(&b), d);
        for off in (0..64).step_by(4) {
            let want = u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]);
            assert_eq!(d.load_word(off as u32), Some(want), "offset {off}");
        }
        assert_eq!(d.load_word(2), None);
        assert_eq!(d.load_word(64), None);
    }
}
