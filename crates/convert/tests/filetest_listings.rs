#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The converter's own check of the kernel's layout: every
//! `testdata/convert/*.txt` converted here must print exactly its expected
//! block (the `new_len`/`stack_depth`/`seen_ld_abs` summary and the
//! side-by-side listing), so a change to any rule of `bpf_convert_filter()`'s
//! mirror fails in this crate's tests, not only in the integration suite.
//!
//! The `; run:` lines, the oracle and `UPDATE_EXPECT=1` stay with the full
//! runner (crates/integration/tests/filetests.rs); this file only compares.

use cbpf::{validate, Insn, Mode};
use convert::{convert, filetest_text, Options};
use test_data::filetest;

/// What the converter prints for one filetest, in the runner's format.
fn listing(t: &filetest::FileTest) -> Result<String, String> {
    let mode = match t.value("mode") {
        Some("seccomp") => Mode::Seccomp,
        Some("socket") => Mode::Socket,
        other => return Err(format!("mode {other:?}")),
    };
    let legacy = t.value("options").is_some_and(|o| o.split_whitespace().any(|w| w == "legacy"));
    let options = if legacy { Options::legacy() } else { Options::kernel() };
    let insns: Vec<Insn> = t.insns.iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
    let prog = match validate(&insns, mode) {
        Ok(p) => p,
        Err(e) => return Ok(format!("error: validate: {e}\n")),
    };
    Ok(filetest_text(&prog, &convert(&prog, &options), t.marker.as_deref() == Some("expect")))
}

#[test]
fn every_filetest_converts_to_its_expected_listing() {
    let (count, failures) = filetest::check_each("convert", |t| match listing(t)? {
        got if got == t.expected => Ok(()),
        got => Err(format!("got\n{got}")),
    })
    .unwrap();
    assert!(count >= 80, "only {count} filetests");
    assert!(failures.is_empty(), "{} of {count} differ:\n{}", failures.len(), failures.join("\n"));
}
