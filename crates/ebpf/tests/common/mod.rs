//! Shared by the suites over testdata/bpf_conformance.

use std::path::{Path, PathBuf};

/// testdata/bpf_conformance.
pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/bpf_conformance");

/// The `.data` files of testdata/bpf_conformance/`sub`, sorted by path.
pub fn data_files(sub: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(DIR).join(sub))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "data"))
        .collect();
    files.sort();
    files
}

/// The test's name: its file name without `.data`.
pub fn name(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}
