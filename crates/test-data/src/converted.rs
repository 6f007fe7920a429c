//! `testdata/converted/`: the converter's output for every filter of
//! `testdata/filters/` (`filters/NAME.ebpf`) and every chain filetest
//! (`chains/NAME.ebpf`, NAME the file's stem), as raw little-endian
//! `struct bpf_insn` records. The eBPF crate sits below the converter, so
//! its own tests cannot convert; with these they run the programs the
//! converter really makes (libseccomp's, Chromium's and OpenSSH's shapes).
//! Written and kept equal to the converter's output by
//! `crates/convert/tests/converted_fixtures.rs` (`UPDATE_EXPECT=1`
//! rewrites them).

use std::path::PathBuf;

use crate::paths::{read_bytes, testdata};

/// The two kinds of program kept: `filters` and `chains`.
pub const FOLDERS: [&str; 2] = ["filters", "chains"];

/// `testdata/converted/FOLDER/NAME.ebpf`.
pub fn path(folder: &str, name: &str) -> PathBuf {
    testdata().join("converted").join(folder).join(format!("{name}.ebpf"))
}

/// The bytes of `FOLDER/NAME.ebpf`, a whole number of 8-byte records.
pub fn read(folder: &str, name: &str) -> Result<Vec<u8>, String> {
    let path = path(folder, name);
    let bytes = read_bytes(&path)?;
    if bytes.is_empty() || bytes.len() % 8 != 0 {
        return Err(format!("{}: {} bytes is not a whole number of instructions", path.display(), bytes.len()));
    }
    Ok(bytes)
}
