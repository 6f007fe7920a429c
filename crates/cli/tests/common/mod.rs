//! Running the `bpfconv` binary, for the command-line suites.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_bpfconv");
/// testdata/filters.
pub const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

/// `testdata/filters/NAME`.
pub fn filter(name: &str) -> String {
    format!("{FILTERS}/{name}")
}

/// Runs with `stdin` piped in and stderr captured, stdout going to `stdout`.
pub fn run_into(args: &[&str], stdin: &[u8], stdout: Stdio) -> Output {
    let mut child =
        Command::new(BIN).args(args).stdin(Stdio::piped()).stdout(stdout).stderr(Stdio::piped()).spawn().unwrap();
    // The child may exit before reading stdin: a broken pipe here is fine,
    // the exit status and output say what happened.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

/// Runs with `stdin` piped in, stdout and stderr captured.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    run_into(args, stdin, Stdio::piped())
}

/// Captured stdout, lossily decoded.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Captured stderr, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `contents` to `dir/name`; its path.
pub fn write_in(dir: &std::path::Path, name: &str, contents: impl AsRef<[u8]>) -> String {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path.to_str().unwrap().to_string()
}
