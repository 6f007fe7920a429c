//! The record both instruction sets are stored as: `struct sock_filter`
//! (include/uapi/linux/filter.h) and `struct bpf_insn`
//! (include/uapi/linux/bpf.h) are each 8 bytes, and a program on disk or in
//! a C byte array is a bare sequence of them. This crate frames raw bytes
//! into records, for `cbpf::raw` and `ebpf::insn`, which each give a record
//! its own meaning (and byte order).
//!
//! ```
//! let words: Vec<[u8; 8]> = record::records(&[0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]).unwrap().collect();
//! assert_eq!(words, [[0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]]);
//! assert!(record::records(&[0; 9]).is_err());
//! ```

/// Bytes per record: `sizeof(struct sock_filter)` = `sizeof(struct bpf_insn)`.
pub const SIZE: usize = 8;

/// Why a byte buffer is not a sequence of records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The buffer holds no instruction.
    #[error("empty program: no instructions")]
    Empty,
    /// The length is not a whole number of 8-byte records.
    #[error("length {len} is not a multiple of 8 (trailing {rem} bytes after instruction {whole})")]
    TrailingBytes { len: usize, whole: usize, rem: usize },
}

/// The records of `bytes`, which must be a non-empty whole number of them.
pub fn records(bytes: &[u8]) -> Result<impl Iterator<Item = [u8; SIZE]> + '_, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let chunks = bytes.chunks_exact(SIZE);
    let rem = chunks.remainder().len();
    if rem != 0 {
        return Err(DecodeError::TrailingBytes { len: bytes.len(), whole: bytes.len() / SIZE, rem });
    }
    // Chunks of exactly SIZE bytes: the conversion always succeeds.
    Ok(chunks.map(|c| c.try_into().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_errors_name_the_length_and_the_rest() {
        assert_eq!(records(&[]).err(), Some(DecodeError::Empty));
        let err = records(&[0; 19]).err();
        assert_eq!(err, Some(DecodeError::TrailingBytes { len: 19, whole: 2, rem: 3 }));
        assert_eq!(
            err.map(|e| e.to_string()).unwrap_or_default(),
            "length 19 is not a multiple of 8 (trailing 3 bytes after instruction 2)"
        );
    }

    #[test]
    fn records_come_in_order() {
        let bytes: Vec<u8> = (0..24).collect();
        let got: Vec<[u8; SIZE]> = records(&bytes).unwrap().collect();
        assert_eq!(got, [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15], [16, 17, 18, 19, 20, 21, 22, 23]]);
    }
}
