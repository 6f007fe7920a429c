//! Reading the shared test data, for the cbpf suites.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code, clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use cbpf::Insn;
use serde_json::Value;

/// testdata/filters.
pub const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");
/// lib/test_bpf.c's classic tests.
pub const CLASSIC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/test_bpf/classic.json");

/// Every `testdata/filters/*.bpf`, sorted by path.
pub fn filters() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(FILTERS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bpf"))
        .collect();
    v.sort();
    v
}

/// One classic test's `insns`: `[code, jt, jf, k]` each.
pub fn classic_insns(test: &Value) -> Vec<Insn> {
    test["insns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let f: Vec<u64> = i.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            Insn::jump(f[0] as u16, f[3] as u32, f[1] as u8, f[2] as u8)
        })
        .collect()
}

/// The classic tests of [`CLASSIC`].
pub fn classic_tests() -> Vec<Value> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(CLASSIC).unwrap()).unwrap();
    doc["tests"].as_array().unwrap().clone()
}
