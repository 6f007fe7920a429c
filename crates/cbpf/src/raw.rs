//! Raw `struct sock_filter[]` bytes, as `seccomp_export_bpf()` writes them.

use crate::insn::{Insn, INSN_SIZE};

/// Why a byte buffer is not a sequence of `struct sock_filter` (the framing
/// both instruction sets share).
pub use record::DecodeError;

/// The byte order of `code` and `k` in raw records. `struct sock_filter`
/// is written in the host's order (`seccomp_export_bpf()` dumps memory), so
/// a filter made on s390x, ppc64 or big-endian mips is [`Endian::Big`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Endian {
    /// x86, arm64, riscv64, ... (and the default everywhere here).
    #[default]
    Little,
    /// s390x, ppc64 (big-endian), mips, sparc, m68k, parisc.
    Big,
}

impl Endian {
    /// The other byte order.
    pub fn swapped(self) -> Endian {
        match self {
            Endian::Little => Endian::Big,
            Endian::Big => Endian::Little,
        }
    }

    /// The name `--endian` takes.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }
}

/// Decodes little-endian `struct sock_filter` records.
///
/// Only the framing is checked here; what the instructions mean is
/// [`crate::validate()`]'s job.
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, DecodeError> {
    decode_endian(bytes, Endian::Little)
}

/// Decodes `struct sock_filter` records written in byte order `endian`.
pub fn decode_endian(bytes: &[u8], endian: Endian) -> Result<Vec<Insn>, DecodeError> {
    Ok(record::records(bytes)?.map(|b| Insn::from_bytes(swap_if(b, endian))).collect())
}

/// Encodes instructions as little-endian `struct sock_filter` records.
pub fn encode(insns: &[Insn]) -> Vec<u8> {
    encode_endian(insns, Endian::Little)
}

/// Encodes instructions as `struct sock_filter` records in byte order `endian`.
pub fn encode_endian(insns: &[Insn], endian: Endian) -> Vec<u8> {
    insns.iter().flat_map(|i| swap_if(i.to_bytes(), endian)).collect()
}

/// A little-endian record in `endian` order, or back (the swap is its own
/// inverse): `code` (2 bytes) and `k` (4) reversed, `jt`/`jf` kept.
fn swap_if(b: [u8; INSN_SIZE], endian: Endian) -> [u8; INSN_SIZE] {
    match endian {
        Endian::Little => b,
        Endian::Big => {
            let [c0, c1, jt, jf, k0, k1, k2, k3] = b;
            [c1, c0, jt, jf, k3, k2, k1, k0]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_and_ragged() {
        assert_eq!(decode(&[]), Err(DecodeError::Empty));
        assert!(matches!(decode(&[0; 9]), Err(DecodeError::TrailingBytes { rem: 1, whole: 1, .. })));
    }

    #[test]
    fn big_endian_records_swap_code_and_k_only() {
        let p = vec![Insn::jump(0x15, 0xc000_003e, 1, 2)];
        let be = encode_endian(&p, Endian::Big);
        assert_eq!(be, [0x00, 0x15, 1, 2, 0xc0, 0x00, 0x00, 0x3e]);
        assert_eq!(decode_endian(&be, Endian::Big).unwrap(), p);
        assert_eq!(decode(&be).unwrap(), vec![Insn { code: 0x1500, jt: 1, jf: 2, k: 0x3e00_00c0 }]);
    }

    #[test]
    fn round_trips() {
        let p = vec![Insn::stmt(0x20, 4), Insn::jump(0x15, 1, 0, 2), Insn::stmt(6, 0x7fff0000)];
        assert_eq!(decode(&encode(&p)).unwrap(), p);
    }
}
