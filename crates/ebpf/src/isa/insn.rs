//! `struct bpf_insn` and raw encode/decode.

/// Index of an eBPF instruction slot (a `ld_imm64` takes two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pc(pub usize);

impl std::fmt::Display for Pc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Mirror of `struct bpf_insn` (include/uapi/linux/bpf.h): `u8 code`,
/// `u8 dst_reg:4, src_reg:4` (dst in the low nibble on little-endian hosts),
/// `s16 off`, `s32 imm`; 8 bytes, little-endian here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct Insn {
    pub code: u8,
    /// dst in bits 0..4, src in bits 4..8, exactly as the byte is stored.
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

/// Size in bytes of one encoded [`Insn`].
pub const INSN_SIZE: usize = record::SIZE;

impl Insn {
    /// Builds an instruction from its fields; registers are masked to 4 bits.
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Self {
        Insn { code, regs: (dst & 0x0f) | ((src & 0x0f) << 4), off, imm }
    }

    /// Destination register (0..=15; only 0..=10 are valid).
    pub const fn dst(self) -> u8 {
        self.regs & 0x0f
    }

    /// Source register (0..=15; only 0..=10 are valid).
    pub const fn src(self) -> u8 {
        self.regs >> 4
    }

    /// `BPF_CLASS(code)`.
    pub const fn class(self) -> u8 {
        self.code & 0x07
    }

    /// The 8 little-endian bytes of this instruction.
    pub fn to_bytes(self) -> [u8; INSN_SIZE] {
        let o = self.off.to_le_bytes();
        let i = self.imm.to_le_bytes();
        [self.code, self.regs, o[0], o[1], i[0], i[1], i[2], i[3]]
    }

    /// Decodes 8 little-endian bytes.
    pub fn from_bytes(b: [u8; INSN_SIZE]) -> Self {
        Insn {
            code: b[0],
            regs: b[1],
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

/// Why a byte buffer is not a sequence of `struct bpf_insn` (the framing
/// both instruction sets share).
pub use record::DecodeError;

/// Decodes little-endian `struct bpf_insn` records (framing only).
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, DecodeError> {
    Ok(record::records(bytes)?.map(Insn::from_bytes).collect())
}

/// Encodes instructions as little-endian `struct bpf_insn` records.
pub fn encode(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.to_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insn_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Insn>(), INSN_SIZE);
    }

    #[test]
    fn layout_matches_kernel_example() {
        // SPEC §4.8 e3: w0 = *(u32 *)(r6 + 4) is `61 60 04 00 00 00 00 00`.
        let i = Insn::new(0x61, 0, 6, 4, 0);
        assert_eq!(i.to_bytes(), [0x61, 0x60, 4, 0, 0, 0, 0, 0]);
        assert_eq!(Insn::from_bytes(i.to_bytes()), i);
        assert_eq!((i.dst(), i.src()), (0, 6));
    }
}
