//! Seccomp vector files (JSON Lines, FORMATS.md §2): one
//! `{"arch", "nr", "ip", "args": [6], "action"}` object per line, read into
//! plain numbers. The product's own reader (`engine::vectors`) checks user
//! input field by field; this one reads the repository's files, which
//! that reader's tests and the CLI's already hold to the format.

use serde::Deserialize;

use crate::paths::read_text;

/// One line of a vector file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Vector {
    /// 1-based line number in its file.
    #[serde(skip)]
    pub line: usize,
    /// `AUDIT_ARCH_*`.
    pub arch: u32,
    /// `int nr` (x32 calls carry bit 30; `0xffffffff` may be written -1).
    #[serde(deserialize_with = "int_nr")]
    pub nr: i32,
    /// The instruction pointer (0 when the line has none).
    #[serde(default)]
    pub ip: u64,
    /// The six arguments.
    pub args: [u64; 6],
    /// The expected `SECCOMP_RET_*` value, if the line has one.
    #[serde(default)]
    pub action: Option<u32>,
}

impl Vector {
    /// The 64 bytes of `struct seccomp_data` on a little-endian host:
    /// `nr`, `arch`, `instruction_pointer`, `args[6]`.
    pub fn data_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        let words = [u64::from(self.nr as u32) | (u64::from(self.arch) << 32), self.ip];
        for (chunk, w) in out.chunks_exact_mut(8).zip(words.iter().chain(&self.args)) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

fn int_nr<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let n = i64::deserialize(d)?;
    if (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&n) {
        Ok(n as u32 as i32)
    } else {
        Err(serde::de::Error::custom(format!("nr {n} is not a 32-bit value")))
    }
}

/// Every vector of a JSONL text (blank lines skipped), or an error naming
/// the line.
pub fn parse(text: &str) -> Result<Vec<Vector>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let mut v: Vector = serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1))?;
            v.line = i + 1;
            Ok(v)
        })
        .collect()
}

/// Every vector of the file at `path`, or an error naming it.
pub fn read(path: &std::path::Path) -> Result<Vec<Vector>, String> {
    parse(&read_text(path)?).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn lines_read_into_numbers_with_their_line() {
        let v =
            parse("\n{\"arch\":3221225534,\"nr\":-1,\"ip\":7,\"args\":[1,2,3,4,5,6],\"action\":2147418112}\n").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].line, v[0].arch, v[0].nr, v[0].ip), (2, 0xc000_003e, -1, 7));
        assert_eq!(v[0].action, Some(0x7fff_0000));
        let b = v[0].data_bytes();
        assert_eq!(&b[..8], &[0xff, 0xff, 0xff, 0xff, 0x3e, 0, 0, 0xc0]);
        assert_eq!(b[16], 1);
        assert_eq!(b[56], 6);
        let no_action = parse("{\"arch\":1,\"nr\":4294967295,\"args\":[0,0,0,0,0,0]}").unwrap();
        assert_eq!((no_action[0].nr, no_action[0].action), (-1, None));
        assert!(parse("{\"arch\":1,\"nr\":0}").unwrap_err().starts_with("line 1:"));
        assert!(parse("{\"arch\":1,\"nr\":4294967296,\"args\":[0,0,0,0,0,0]}").is_err());
    }
}
