#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every `cargo xtask fuzz-kernel --mode hook` reproducer saved under
//! `testdata/fuzz-kernel/hook/` (see testdata/fuzz-kernel/README.md): judged
//! again with today's code generator and the running kernel, the
//! disagreement is gone; each names its root cause. Without the privilege
//! to load programs it skips through `test_data::require` (a failure under
//! `CI=true`).

use std::path::PathBuf;

use bpfconv_integration::fuzz_hook::HookReproducer;
use test_data::require::{self, Need};

mod common;

#[test]
fn every_saved_hook_reproducer_replays() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fuzz-kernel/hook");
    let names = common::files_with_extension(&dir, "json");
    let mut parsed = Vec::new();
    for path in &names {
        let text = std::fs::read_to_string(path).unwrap();
        let repro: HookReproducer =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a hook reproducer: {e}", path.display()));
        assert!(repro.root_cause.as_ref().is_some_and(|c| !c.is_empty()), "{}: no root cause", path.display());
        parsed.push((path, repro));
    }
    if require::have("every_saved_hook_reproducer_replays", Need::Bpf, kernel::bpf::available()).is_none() {
        return;
    }
    for (path, repro) in &parsed {
        if let Err(e) = repro.replay() {
            panic!("{}: still disagrees: {e}", path.display());
        }
    }
    eprintln!("{} hook reproducers replayed", parsed.len());
}
