//! `struct seccomp_data` (include/uapi/linux/seccomp.h): what a seccomp
//! filter reads.
//!
//! 64 bytes in host byte order; the kernel does no byte swapping. Every
//! engine in this workspace models a little-endian host, so [`SeccompData::to_bytes`]
//! writes little-endian (the low half of `args[i]` at `16 + 8*i`, the high
//! half at `20 + 8*i`; see SPEC §5.1).

/// Size of `struct seccomp_data` in bytes; `ld len` in a seccomp filter reads this.
pub const SECCOMP_DATA_SIZE: usize = 64;
/// `offsetof(struct seccomp_data, nr)`.
pub const OFFSET_NR: u32 = 0;
/// `offsetof(struct seccomp_data, arch)`.
pub const OFFSET_ARCH: u32 = 4;
/// `offsetof(struct seccomp_data, instruction_pointer)`.
pub const OFFSET_IP: u32 = 8;
/// `offsetof(struct seccomp_data, args)`.
pub const OFFSET_ARGS: u32 = 16;

/// Mirror of `struct seccomp_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeccompData {
    /// The system call number (`int nr`; x32 calls carry bit 30).
    pub nr: i32,
    /// `AUDIT_ARCH_*` of the calling convention.
    pub arch: u32,
    /// Address of the system call instruction.
    pub instruction_pointer: u64,
    /// The six arguments, each widened to 64 bits.
    pub args: [u64; 6],
}

impl SeccompData {
    /// A call of `nr` under `arch` with zero arguments and instruction pointer.
    pub fn new(arch: u32, nr: i32) -> Self {
        SeccompData { nr, arch, instruction_pointer: 0, args: [0; 6] }
    }

    /// The 64 bytes a little-endian kernel hands to the filter.
    pub fn to_bytes(&self) -> [u8; SECCOMP_DATA_SIZE] {
        let mut out = [0u8; SECCOMP_DATA_SIZE];
        let fields = std::iter::once(self.nr.to_le_bytes().to_vec())
            .chain(std::iter::once(self.arch.to_le_bytes().to_vec()))
            .chain(std::iter::once(self.instruction_pointer.to_le_bytes().to_vec()))
            .chain(self.args.iter().map(|a| a.to_le_bytes().to_vec()));
        for (dst, src) in out.iter_mut().zip(fields.flatten()) {
            *dst = src;
        }
        out
    }

    /// Inverse of [`SeccompData::to_bytes`].
    pub fn from_bytes(bytes: &[u8; SECCOMP_DATA_SIZE]) -> Self {
        let word = |off: usize| {
            let mut w = [0u8; 4];
            for (i, b) in w.iter_mut().enumerate() {
                *b = bytes.get(off + i).copied().unwrap_or(0);
            }
            w
        };
        let dword = |off: usize| {
            let (lo, hi) = (word(off), word(off + 4));
            u64::from(u32::from_le_bytes(lo)) | (u64::from(u32::from_le_bytes(hi)) << 32)
        };
        let mut args = [0u64; 6];
        for (i, a) in args.iter_mut().enumerate() {
            *a = dword(16 + 8 * i);
        }
        SeccompData {
            nr: i32::from_le_bytes(word(0)),
            arch: u32::from_le_bytes(word(4)),
            instruction_pointer: dword(8),
            args,
        }
    }

    /// The 32-bit word a seccomp `ld [offset]` reads on a little-endian host,
    /// or `None` when `offset` is not 4-aligned and below 64 (such loads are
    /// rejected by `seccomp_check_filter()`).
    pub fn load_word(&self, offset: u32) -> Option<u32> {
        if offset % 4 != 0 || offset >= SECCOMP_DATA_SIZE as u32 {
            return None;
        }
        let lo_hi = |v: u64, high: bool| if high { (v >> 32) as u32 } else { v as u32 };
        Some(match offset {
            OFFSET_NR => self.nr as u32,
            OFFSET_ARCH => self.arch,
            8 | 12 => lo_hi(self.instruction_pointer, offset == 12),
            _ => {
                let i = ((offset - OFFSET_ARGS) / 8) as usize;
                lo_hi(self.args.get(i).copied().unwrap_or(0), (offset - OFFSET_ARGS) % 8 == 4)
            }
        })
    }
}

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
