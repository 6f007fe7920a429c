#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! The assembler, disassembler and `.data` parser over every file of
//! testdata/bpf_conformance (tests/ and negative/).

use ebpf::asm::assemble;
use ebpf::conformance::{parse, ConformanceError, Expected};
use ebpf::disasm::disassemble;

mod common;
use common::{data_files, name};

/// Every conformance test parses, assembles, matches its `-- raw` section,
/// and survives disassemble -> assemble unchanged.
#[test]
fn all_conformance_tests_assemble_and_round_trip() {
    let files = data_files("tests");
    assert_eq!(files.len(), 313, "testdata/bpf_conformance/tests should hold 313 files");
    let mut failures = Vec::new();
    let mut raw_checked = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let test = match parse(&text) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: parse: {e}", name(path)));
                continue;
            }
        };
        if !matches!(test.expected, Expected::Result(_)) {
            failures.push(format!("{}: expected a result, got {:?}", name(path), test.expected));
        }
        let prog = match test.assemble() {
            Some(Ok(p)) => p,
            Some(Err(e)) => {
                failures.push(format!("{}: assemble: {e}", name(path)));
                continue;
            }
            None => {
                failures.push(format!("{}: no -- asm section", name(path)));
                continue;
            }
        };
        if let Some(raw) = &test.raw {
            raw_checked += 1;
            if raw != &prog {
                failures.push(format!("{}: asm {prog:?} != raw {raw:?}", name(path)));
            }
        }
        match disassemble(&prog) {
            Ok(text) => match assemble(&text) {
                Ok(again) if again == prog => {}
                Ok(again) => failures.push(format!("{}: re-assembly differs:\n{text}{again:?}", name(path))),
                Err(e) => failures.push(format!("{}: re-assembly failed: {e}\n{text}", name(path))),
            },
            Err(e) => failures.push(format!("{}: disassemble: {e}", name(path))),
        }
    }
    assert!(failures.is_empty(), "{} of {} files failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    assert_eq!(raw_checked, 1, "lddw.data is the one file with a -- raw section");
}

/// What each negative/ file must do, per testdata/bpf_conformance/README.md.
#[test]
fn negative_files_are_rejected_where_they_should_be() {
    let files = data_files("negative");
    assert_eq!(files.len(), 60);
    let mut failures = Vec::new();
    let mut counts = [0usize; 3];
    for path in &files {
        let n = name(path);
        let text = std::fs::read_to_string(path).unwrap();
        let parsed = parse(&text);
        if n.starts_with("invalid_") || n.starts_with("empty") {
            counts[0] += 1;
            // Assembler (or file-format) errors.
            let err = match &parsed {
                Err(e) => e.to_string(),
                Ok(t) => match t.program() {
                    Err(e) => e.to_string(),
                    Ok(p) => {
                        failures.push(format!("{n}: accepted as {p:?}"));
                        continue;
                    }
                },
            };
            // Where upstream names the error, our message says the same (lower-case).
            if let Ok(t) = &parsed {
                if let Expected::Error(want) = &t.expected {
                    if !err.to_lowercase().contains(&want.to_lowercase()) {
                        failures.push(format!("{n}: error {err:?} does not say {want:?}"));
                    }
                }
            }
            let kind_ok = match n.as_str() {
                "invalid_unknown_directive" => matches!(parsed, Err(ConformanceError::UnknownDirective { .. })),
                "empty" => matches!(parsed, Err(ConformanceError::NoExpectation { .. })),
                "empty_instructions" => matches!(parsed, Err(ConformanceError::NoProgram { .. })),
                _ => parsed.is_ok(),
            };
            if !kind_ok {
                failures.push(format!("{n}: rejected for the wrong reason: {err}"));
            }
        } else if n.starts_with("unused-") {
            counts[1] += 1;
            // Two raw instructions, expecting a load error; the first has a
            // non-zero unused field, which the disassembler refuses to print.
            match parsed {
                Ok(t) => {
                    let raw = t.raw.clone().unwrap_or_default();
                    if raw.len() != 2 || t.expected != Expected::Error(String::new()) {
                        failures.push(format!("{n}: parsed as {t:?}"));
                    } else if let Ok(text) = disassemble(&raw[..1]) {
                        failures.push(format!("{n}: unused field printed as {text:?}"));
                    }
                }
                Err(e) => failures.push(format!("{n}: parse: {e}")),
            }
        } else {
            counts[2] += 1;
            // Runner self-tests: valid programs.
            match parsed.map(|t| t.program()) {
                Ok(Ok(_)) => {}
                other => failures.push(format!("{n}: should assemble: {other:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} negative files misbehave:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(counts, [13, 45, 2]);
}
