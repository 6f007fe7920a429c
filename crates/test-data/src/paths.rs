//! Where the test data lives: `testdata/` of the workspace, found from
//! this crate's manifest, so every crate's tests read the same files.

use std::path::{Path, PathBuf};

/// `testdata/` of the workspace.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// `testdata/filters/`: the seccomp filters with kernel-checked vectors.
pub fn filters_dir() -> PathBuf {
    testdata().join("filters")
}

/// A folder for one test's files, `bpfconv-TAG-PID` under the system's
/// temporary folder, created (the process id keeps concurrent runs apart).
pub fn scratch_dir(tag: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("bpfconv-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// The files of `dir` whose name ends with `suffix`, sorted by path.
pub fn files_ending(dir: &Path, suffix: &str) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(suffix)))
        .collect();
    out.sort();
    Ok(out)
}

/// The text of `path`, or an error naming it.
pub fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The bytes of `path`, or an error naming it.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}
