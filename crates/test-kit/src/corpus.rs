//! The test corpus under `testdata/` in cbpf's types, read by
//! `test_data` (the leaf reader every crate's own tests share).
//!
//! - `testdata/filters/NAME.bpf` with `NAME.vectors.jsonl` (expected actions
//!   from the running kernel) and `NAME.sim_only.jsonl` (from libseccomp's
//!   `scmp_bpf_sim` only): [`filters`], [`Filter::vectors`].
//! - `testdata/test_bpf/classic.json` (lib/test_bpf.c's classic tests):
//!   [`test_bpf_classic`], each run's socket buffer built as
//!   testdata/test_bpf/README.md says ([`TestBpf::input`]).
//!
//! Errors are strings naming the file: a broken corpus is a test failure,
//! reported once.

use std::path::PathBuf;

use cbpf::{Insn, Mode, Program, SeccompData};
pub use test_data::filters::Source;
use test_data::RawInsn;

use crate::input::SocketInput;

/// `testdata/` of the workspace.
pub fn testdata() -> PathBuf {
    test_data::paths::testdata()
}

/// `testdata/filters/`.
pub fn filters_dir() -> PathBuf {
    test_data::paths::filters_dir()
}

fn insn(r: RawInsn) -> Insn {
    Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }
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
        let insns: Vec<Insn> = test_data::filters::insns(name)?.into_iter().map(insn).collect();
        let program = cbpf::validate(&insns, Mode::Seccomp).map_err(|e| format!("{name}.bpf: {e}"))?;
        Ok(Filter { name: name.to_owned(), insns, program })
    }

    /// The vectors of one source.
    pub fn vectors_from(&self, source: Source) -> Result<Vec<Vector>, String> {
        test_data::filters::vectors(&self.name, source)?
            .into_iter()
            .map(|v| {
                let data = SeccompData { nr: v.nr, arch: v.arch, instruction_pointer: v.ip, args: v.args };
                match v.action {
                    Some(action) => Ok(Vector { data, action, source, line: v.line }),
                    None => Err(format!("{}.{}: line {}: no expected action", self.name, source.suffix(), v.line)),
                }
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
    test_data::filters::names()
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

/// Every test of `testdata/test_bpf/classic.json`, in file order.
pub fn test_bpf_classic() -> Result<Vec<TestBpf>, String> {
    Ok(test_data::test_bpf::classic()?
        .into_iter()
        .map(|t| TestBpf {
            index: t.index,
            name: t.name,
            insns: t.insns.into_iter().map(insn).collect(),
            flags: t.flags,
            data: t.data,
            frag_data: t.frag_data,
            expected_fail: t.expected_fail,
            runs: t.runs.into_iter().map(|r| (r.len, r.result)).collect(),
        })
        .collect())
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
