//! The shared test data as the cbpf suites use it, read by `test_data`
//! (the leaf reader every crate's tests share) and turned into cbpf types.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use cbpf::Insn;

/// testdata/filters.
pub fn filters_dir() -> PathBuf {
    test_data::paths::filters_dir()
}

/// The stems of every `testdata/filters/*.bpf`, sorted.
pub fn filters() -> Vec<String> {
    test_data::filters::names().unwrap()
}

/// One instruction as cbpf holds it.
pub fn insn(r: test_data::RawInsn) -> Insn {
    Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }
}

/// lib/test_bpf.c's classic tests: name, whether the kernel refuses the
/// program, the program.
pub fn classic_tests() -> Vec<(String, bool, Vec<Insn>)> {
    let tests = test_data::test_bpf::classic().unwrap();
    tests.into_iter().map(|t| (t.name, t.expected_fail, t.insns.into_iter().map(insn).collect())).collect()
}
