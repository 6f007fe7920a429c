//! Raw `struct sock_filter[]` bytes, as `seccomp_export_bpf()` writes them.

use crate::insn::{Insn, INSN_SIZE};

/// Why a byte buffer is not a sequence of `struct sock_filter`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The buffer holds no instruction.
    #[error("empty program: no instructions")]
    Empty,
    /// The length is not a whole number of 8-byte instructions.
    #[error("length {len} is not a multiple of 8 (trailing {rem} bytes after instruction {whole})")]
    TrailingBytes { len: usize, whole: usize, rem: usize },
}

/// Decodes little-endian `struct sock_filter` records.
///
/// Only the framing is checked here; what the instructions mean is
/// [`crate::validate()`]'s job.
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let chunks = bytes.chunks_exact(INSN_SIZE);
    let rem = chunks.remainder().len();
    if rem != 0 {
        return Err(DecodeError::TrailingBytes { len: bytes.len(), whole: bytes.len() / INSN_SIZE, rem });
    }
    Ok(chunks
        .map(|c| {
            let mut b = [0u8; INSN_SIZE];
            b.copy_from_slice(c);
            Insn::from_bytes(b)
        })
        .collect())
}

/// Encodes instructions as little-endian `struct sock_filter` records.
pub fn encode(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.to_bytes()).collect()
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
    fn round_trips() {
        let p = vec![Insn::stmt(0x20, 4), Insn::jump(0x15, 1, 0, 2), Insn::stmt(6, 0x7fff0000)];
        assert_eq!(decode(&encode(&p)).unwrap(), p);
    }
}
