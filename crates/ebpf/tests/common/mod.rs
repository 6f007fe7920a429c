//! Shared by the suites over testdata/bpf_conformance.

use std::path::{Path, PathBuf};

/// testdata/bpf_conformance.
pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/bpf_conformance");

/// The `.data` files of testdata/bpf_conformance/`sub`, sorted by path.
pub fn data_files(sub: &str) -> Vec<PathBuf> {
    test_data::paths::files_ending(&Path::new(DIR).join(sub), ".data").unwrap()
}

/// The test's name: its file name without `.data`.
pub fn name(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}
