//! `testdata/filters/`: each `NAME.bpf` (raw little-endian `struct
//! sock_filter` records) with `NAME.vectors.jsonl` (actions the running
//! kernel gave) and `NAME.sim_only.jsonl` (libseccomp's `scmp_bpf_sim`
//! only: foreign arches, syscalls the kernel exempts). See the folder's
//! README for provenance.

use crate::paths::{filters_dir, read_bytes};
use crate::vectors::{self, Vector};
use crate::RawInsn;

/// Which oracle gave a vector file's actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// `NAME.vectors.jsonl`: the running kernel.
    Kernel,
    /// `NAME.sim_only.jsonl`: `scmp_bpf_sim` only.
    Simulator,
}

impl Source {
    /// Both, kernel first.
    pub const ALL: [Source; 2] = [Source::Kernel, Source::Simulator];

    /// The file suffix after `NAME.`.
    pub fn suffix(self) -> &'static str {
        match self {
            Source::Kernel => "vectors.jsonl",
            Source::Simulator => "sim_only.jsonl",
        }
    }
}

/// The stems of every `testdata/filters/*.bpf`, sorted.
pub fn names() -> Result<Vec<String>, String> {
    let paths = crate::paths::files_ending(&filters_dir(), ".bpf")?;
    Ok(paths.iter().filter_map(|p| p.file_name()?.to_str()?.strip_suffix(".bpf").map(str::to_owned)).collect())
}

/// `NAME.bpf` as records.
pub fn insns(name: &str) -> Result<Vec<RawInsn>, String> {
    let path = filters_dir().join(format!("{name}.bpf"));
    RawInsn::records(&read_bytes(&path)?).map_err(|e| format!("{}: {e}", path.display()))
}

/// The vectors of `NAME` from `source` (each with its expected action).
pub fn vectors(name: &str, source: Source) -> Result<Vec<Vector>, String> {
    vectors::read(&filters_dir().join(format!("{name}.{}", source.suffix())))
}

/// Every vector of `NAME`: the kernel-checked ones, then the simulator's.
pub fn all_vectors(name: &str) -> Result<Vec<(Source, Vector)>, String> {
    let mut out = Vec::new();
    for source in Source::ALL {
        out.extend(vectors(name, source)?.into_iter().map(|v| (source, v)));
    }
    Ok(out)
}
