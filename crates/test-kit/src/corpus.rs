//! The one reader of the test corpus under `testdata/`.
//!
//! - `testdata/filters/NAME.bpf` with `NAME.vectors.jsonl` (expected actions
//!   from the running kernel) and `NAME.sim_only.jsonl` (from libseccomp's
//!   `scmp_bpf_sim` only): [`filters`], [`Filter::vectors`]. The line format
//!   is FORMATS.md §2, parsed by the CLI's own parser
//!   ([`engine::vectors::parse`]), so tests read vectors exactly as
//!   `bpfconv run --vectors` does.
//! - `testdata/test_bpf/classic.json` (lib/test_bpf.c's classic tests):
//!   [`test_bpf_classic`], each run's socket buffer built as
//!   testdata/test_bpf/README.md says ([`TestBpf::input`]).
//!
//! Errors are strings naming the file: a broken corpus is a test failure,
//! reported once.

use std::path::{Path, PathBuf};

use cbpf::{Insn, Mode, Program, SeccompData};
use serde_json::Value;

use crate::input::SocketInput;

/// `testdata/` of the workspace.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// `testdata/filters/`.
pub fn filters_dir() -> PathBuf {
    testdata().join("filters")
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// One benchmark seccomp filter of `testdata/filters`.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The file stem (`seed_fast`, `allow306_end`, ...).
    pub name: String,
    /// `NAME.bpf` decoded.
    pub insns: Vec<Insn>,
    /// The instructions validated in seccomp mode.
    pub program: Program,
}

/// Which oracle produced a vector's expected action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// `NAME.vectors.jsonl`: the running kernel.
    Kernel,
    /// `NAME.sim_only.jsonl`: `scmp_bpf_sim` only (foreign arches, and
    /// x86_64 syscalls the kernel exempts from seccomp).
    Simulator,
}

/// One vector with its expected action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vector {
    /// The system call.
    pub data: SeccompData,
    /// The full 32-bit `SECCOMP_RET_*` value expected.
    pub action: u32,
    /// The file it came from.
    pub source: Source,
    /// 1-based line number in that file.
    pub line: usize,
}

impl Filter {
    /// Reads `testdata/filters/NAME.bpf`.
    pub fn load(name: &str) -> Result<Filter, String> {
        let path = filters_dir().join(format!("{name}.bpf"));
        let insns = cbpf::raw::decode(&read(&path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        let program = cbpf::validate(&insns, Mode::Seccomp).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Filter { name: name.to_owned(), insns, program })
    }

    /// The vectors of one source.
    pub fn vectors_from(&self, source: Source) -> Result<Vec<Vector>, String> {
        let suffix = match source {
            Source::Kernel => "vectors",
            Source::Simulator => "sim_only",
        };
        let path = filters_dir().join(format!("{}.{suffix}.jsonl", self.name));
        let parsed = engine::vectors::parse(&read_text(&path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        parsed
            .into_iter()
            .map(|v| match v.action {
                Some(action) => Ok(Vector { data: v.data, action, source, line: v.line }),
                None => Err(format!("{}: line {}: no expected action", path.display(), v.line)),
            })
            .collect()
    }

    /// Every vector: the kernel-checked ones, then the simulator-only ones.
    pub fn vectors(&self) -> Result<Vec<Vector>, String> {
        let mut all = self.vectors_from(Source::Kernel)?;
        all.extend(self.vectors_from(Source::Simulator)?);
        Ok(all)
    }
}

/// The stems of every `testdata/filters/*.bpf`, sorted.
pub fn filter_names() -> Result<Vec<String>, String> {
    let dir = filters_dir();
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.strip_suffix(".bpf").map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// Every filter of `testdata/filters`, sorted by name.
pub fn filters() -> Result<Vec<Filter>, String> {
    filter_names()?.iter().map(|n| Filter::load(n)).collect()
}

/// One test of lib/test_bpf.c's classic suite (testdata/test_bpf/README.md).
#[derive(Debug, Clone)]
pub struct TestBpf {
    /// The test's index in the kernel's table.
    pub index: u64,
    /// The kernel's description string.
    pub name: String,
    /// The classic program.
    pub insns: Vec<Insn>,
    /// `FLAG_*` names.
    pub flags: Vec<String>,
    /// The packet bytes (`data`).
    pub data: Vec<u8>,
    /// `frag_data` (128 bytes) for `FLAG_SKB_FRAG`.
    pub frag_data: Option<Vec<u8>>,
    /// The kernel refuses the program at load time.
    pub expected_fail: bool,
    /// `(len, result)`: the linear length of each run and its expected value.
    pub runs: Vec<(usize, u32)>,
}

impl TestBpf {
    /// Whether the test carries `flag` (`"FLAG_NO_DATA"`, ...).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// The socket buffer of a run with `len` linear bytes: `data` cut or
    /// zero-padded to `len`, MAC header at 0, network header at
    /// `min(len, 14)`, lib/test_bpf.c's field values; with `FLAG_SKB_FRAG`
    /// the 128 `frag_data` bytes follow as paged data.
    pub fn input(&self, len: usize) -> SocketInput {
        let mut data = self.data.clone();
        data.resize(len, 0);
        let mut input = SocketInput::test_bpf(data);
        if let (true, Some(frag)) = (self.has_flag("FLAG_SKB_FRAG"), &self.frag_data) {
            input.data.extend(frag);
            input.meta.headlen = len;
            input.meta.network_offset = len.min(14);
        }
        input
    }
}

fn hex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err(format!("odd-length hex string {s:?}"));
    }
    (0..s.len() / 2)
        .map(|i| {
            s.get(2 * i..2 * i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| format!("bad hex string {s:?}"))
        })
        .collect()
}

/// `v[key]`, `null` when absent.
fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&Value::Null)
}

fn test_bpf_entry(t: &Value) -> Result<TestBpf, String> {
    let name = field(t, "name").as_str().ok_or("a test without a name")?.to_owned();
    let bad = |what: &str| format!("{name}: bad {what}");
    let insns = field(t, "insns")
        .as_array()
        .ok_or_else(|| bad("insns"))?
        .iter()
        .map(|i| {
            let f: Option<Vec<u64>> = i.as_array().and_then(|a| a.iter().map(Value::as_u64).collect());
            match f.as_deref() {
                Some(&[code, jt, jf, k]) => Ok(Insn { code: code as u16, jt: jt as u8, jf: jf as u8, k: k as u32 }),
                _ => Err(bad("instruction")),
            }
        })
        .collect::<Result<_, _>>()?;
    let flags = field(t, "flags")
        .as_array()
        .ok_or_else(|| bad("flags"))?
        .iter()
        .map(|f| f.as_str().map(str::to_owned).ok_or_else(|| bad("flag")))
        .collect::<Result<_, _>>()?;
    let runs = field(t, "runs")
        .as_array()
        .ok_or_else(|| bad("runs"))?
        .iter()
        .map(|r| match (field(r, "len").as_u64(), field(r, "result").as_u64()) {
            (Some(len), Some(result)) => Ok((len as usize, result as u32)),
            _ => Err(bad("run")),
        })
        .collect::<Result<_, _>>()?;
    Ok(TestBpf {
        index: field(t, "index").as_u64().ok_or_else(|| bad("index"))?,
        insns,
        flags,
        data: hex(field(t, "data").as_str().unwrap_or(""))?,
        frag_data: t.get("frag_data").and_then(Value::as_str).map(hex).transpose()?,
        expected_fail: field(t, "expected_fail").as_bool().ok_or_else(|| bad("expected_fail"))?,
        runs,
        name,
    })
}

/// Every test of `testdata/test_bpf/classic.json`, in file order.
pub fn test_bpf_classic() -> Result<Vec<TestBpf>, String> {
    let path = testdata().join("test_bpf/classic.json");
    let doc: Value = serde_json::from_str(&read_text(&path)?).map_err(|e| format!("{}: {e}", path.display()))?;
    let tests =
        doc.get("tests").and_then(Value::as_array).ok_or_else(|| format!("{}: no `tests` array", path.display()))?;
    tests.iter().map(test_bpf_entry).collect::<Result<_, _>>().map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_reads_whole() {
        let filters = filters().unwrap();
        assert!(filters.len() >= 12, "{} filters", filters.len());
        for f in &filters {
            assert!(!f.vectors_from(Source::Kernel).unwrap().is_empty(), "{}", f.name);
        }
        let classic = test_bpf_classic().unwrap();
        assert!(classic.iter().any(|t| t.expected_fail));
        assert!(classic.iter().all(|t| t.frag_data.as_ref().is_none_or(|f| f.len() == 128)));
    }
}
