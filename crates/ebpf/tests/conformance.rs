#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The bpf_conformance suite (testdata/bpf_conformance/tests, 313 files) run
//! through our assembler and interpreter: `r1` = the `-- mem` bytes (a
//! writable copy), `r2` = their length, helper 5 registered, the whole
//! 64-bit `r0` compared with `-- result`.

use std::path::Path;

use ebpf::conformance::{parse, Expected};
use ebpf::{Helpers, Input, LoadOptions, Program, Vm};

mod common;
use common::{data_files, name, DIR};

/// Assembles, loads and runs one file; `Ok(r0)` or a description of the failure.
fn run_file(path: &Path, opts: &LoadOptions) -> Result<(u64, Expected), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read: {e}"))?;
    let test = parse(&text).map_err(|e| format!("parse: {e}"))?;
    let insns = test.program().map_err(|e| format!("assemble: {e}"))?;
    let prog = Program::load(&insns, opts, &Helpers::conformance()).map_err(|e| format!("load: {e}"))?;
    let mut mem = test.mem.clone();
    let r0 = Vm::new().run(&prog, Input::Memory(&mut mem)).map_err(|e| format!("run: {e}"))?;
    Ok((r0, test.expected))
}

#[test]
fn bpf_conformance_suite() {
    let files = data_files("tests");
    assert_eq!(files.len(), 313);
    let mut failures = Vec::new();
    for path in &files {
        match run_file(path, &LoadOptions::default()) {
            Ok((r0, Expected::Result(want))) if r0 == want => {}
            Ok((r0, expected)) => failures.push(format!("{}: r0 = {r0:#x}, expected {expected:?}", name(path))),
            Err(e) => failures.push(format!("{}: {e}", name(path))),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} conformance tests fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The suite also passes with strict reserved-field checks: every test
/// program is well-formed.
#[test]
fn bpf_conformance_suite_strict() {
    let strict = LoadOptions { strict: true, ..LoadOptions::default() };
    let mut failures = Vec::new();
    for path in data_files("tests") {
        // callx is not RFC 9669; strict loading refuses it by design.
        if name(&path) == "callx" {
            continue;
        }
        match run_file(&path, &strict) {
            Ok((r0, Expected::Result(want))) if r0 == want => {}
            Ok((r0, expected)) => failures.push(format!("{}: r0 = {r0:#x}, expected {expected:?}", name(&path))),
            Err(e) => failures.push(format!("{}: {e}", name(&path))),
        }
    }
    assert!(failures.is_empty(), "{} strict failures:\n{}", failures.len(), failures.join("\n"));
}

/// negative/: the runner self-test with a deliberately wrong expectation
/// computes the value README.md names, and the `unused-*` programs (a
/// non-zero reserved field) are refused by a strict load.
#[test]
fn negative_runtime_files() {
    let path = Path::new(DIR).join("negative/incorrect_return_value_high_bits.data");
    let (r0, expected) = run_file(&path, &LoadOptions::default()).unwrap();
    assert_eq!(r0, 0x8877_6655_4433_2211);
    assert_ne!(expected, Expected::Result(r0));

    let strict = LoadOptions { strict: true, ..LoadOptions::default() };
    let mut accepted = Vec::new();
    let mut count = 0;
    for path in data_files("negative").into_iter().filter(|p| name(p).starts_with("unused-")) {
        count += 1;
        let test = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let insns = test.program().unwrap();
        if let Ok(prog) = Program::load(&insns, &strict, &Helpers::conformance()) {
            accepted.push(format!("{}: strict load accepted {:?}", name(&path), prog.insns().first()));
        }
    }
    assert_eq!(count, 45);
    assert!(accepted.is_empty(), "{} unused-field programs accepted:\n{}", accepted.len(), accepted.join("\n"));
}
