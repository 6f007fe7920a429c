//! `testdata/test_bpf/classic.json`: lib/test_bpf.c's classic tests (see
//! the folder's README), read into plain numbers and bytes.

use serde::Deserialize;

use crate::paths::{read_text, testdata};
use crate::RawInsn;

/// One test of the kernel's table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Test {
    /// Its index in the kernel's table.
    pub index: u64,
    /// The kernel's description string.
    pub name: String,
    /// `FLAG_*` names.
    pub flags: Vec<String>,
    /// The classic program, `[code, jt, jf, k]` each.
    #[serde(deserialize_with = "insns")]
    pub insns: Vec<RawInsn>,
    /// The packet bytes (`data`, hex in the file).
    #[serde(default, deserialize_with = "hex")]
    pub data: Vec<u8>,
    /// `frag_data` (128 bytes) for `FLAG_SKB_FRAG`.
    #[serde(default, deserialize_with = "some_hex")]
    pub frag_data: Option<Vec<u8>>,
    /// The kernel refuses the program at load time.
    pub expected_fail: bool,
    /// Each run: the linear length and the expected value.
    pub runs: Vec<Run>,
}

/// One run of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Run {
    /// Linear bytes of the packet.
    pub len: usize,
    /// The value the program returns.
    pub result: u32,
}

#[derive(Deserialize)]
struct File {
    tests: Vec<Test>,
}

fn insns<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<RawInsn>, D::Error> {
    let raw: Vec<(u16, u8, u8, u32)> = Vec::deserialize(d)?;
    Ok(raw.into_iter().map(|(code, jt, jf, k)| RawInsn { code, jt, jf, k }).collect())
}

fn decode_hex<E: serde::de::Error>(s: &str) -> Result<Vec<u8>, E> {
    if s.len() % 2 != 0 {
        return Err(E::custom(format!("odd-length hex string {s:?}")));
    }
    (0..s.len() / 2)
        .map(|i| {
            s.get(2 * i..2 * i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| E::custom(format!("bad hex string {s:?}")))
        })
        .collect()
}

fn hex<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    decode_hex(&String::deserialize(d)?)
}

fn some_hex<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
    Option::<String>::deserialize(d)?.map(|s| decode_hex(&s)).transpose()
}

/// Every test of `testdata/test_bpf/classic.json`, in file order.
pub fn classic() -> Result<Vec<Test>, String> {
    let path = testdata().join("test_bpf/classic.json");
    let file: File = serde_json::from_str(&read_text(&path)?).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(file.tests)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_classic_suite_reads_whole() {
        let tests = classic().unwrap();
        assert_eq!(tests.len(), 121);
        assert!(tests.iter().any(|t| t.expected_fail));
        assert!(tests.iter().all(|t| t.frag_data.as_ref().is_none_or(|f| f.len() == 128)));
        assert_eq!(tests.first().map(|t| (t.index, t.name.as_str())), Some((0, "TAX")));
    }
}
