#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Data-driven round trips: every test filter and every kernel test_bpf
//! program that validates prints and parses back byte for byte in every
//! syntax that is also an input syntax, and `detect` names each printed form.

use cbpf::text::{detect, parse, print_asm, print_c, print_ddd, print_ddd_line, Format};
use cbpf::{raw, validate, Insn, Mode};

mod common;
use common::{classic_tests, filters, filters_dir};

type Printer = fn(&[Insn]) -> String;

const PRINTERS: [(&str, Printer, Format); 4] = [
    ("asm", print_asm, Format::Asm),
    ("c", print_c, Format::C),
    ("ddd", print_ddd, Format::Ddd),
    ("ddd-line", print_ddd_line, Format::Ddd),
];

/// Checks every printer on `insns`; returns one message per failure.
fn round_trip_failures(name: &str, insns: &[Insn]) -> Vec<String> {
    let mut failures = Vec::new();
    for (pname, print, format) in PRINTERS {
        let text = print(insns);
        match parse(text.as_bytes(), format) {
            Ok(back) if back == insns => {}
            Ok(back) => {
                let at = back.iter().zip(insns).position(|(a, b)| a != b).unwrap_or(back.len().min(insns.len()));
                failures.push(format!(
                    "{name} via {pname}: differs at insn {at} (len {} vs {})",
                    back.len(),
                    insns.len()
                ));
            }
            Err(e) => failures.push(format!("{name} via {pname}: {e}")),
        }
        let detected = detect(text.as_bytes());
        if detected != format {
            failures.push(format!("{name} via {pname}: detected as {detected}"));
        }
    }
    let bytes = raw::encode(insns);
    if detect(&bytes) != Format::Raw {
        failures.push(format!("{name}: raw bytes detected as {}", detect(&bytes)));
    }
    failures
}

#[test]
fn every_test_filter_round_trips_through_every_syntax() {
    let names = filters();
    assert!(names.len() >= 10, "expected the test filters, found {}", names.len());
    let mut failures = Vec::new();
    for stem in &names {
        let name = format!("{stem}.bpf");
        let bytes = std::fs::read(filters_dir().join(&name)).unwrap();
        let insns = raw::decode(&bytes).unwrap();
        assert!(validate(&insns, Mode::Seccomp).is_ok(), "{name} should be a valid seccomp filter");
        assert_eq!(parse(&bytes, detect(&bytes)).unwrap(), insns, "{name}: raw auto-detected");
        failures.extend(round_trip_failures(&name, &insns));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_valid_classic_test_bpf_program_round_trips() {
    let tests = classic_tests();
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, _, insns) in &tests {
        // Invalid programs must round-trip too (through `.raw` where needed);
        // the contract is only promised for valid ones, so count those.
        if validate(insns, Mode::Socket).is_ok() {
            checked += 1;
        }
        failures.extend(round_trip_failures(name, insns));
    }
    assert!(checked >= 100, "only {checked} valid programs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn seccomp_rewritten_program_round_trips() {
    // Program::insns() holds 0x21 (LDX|W|ABS) after seccomp_check_filter().
    let bytes = std::fs::read(filters_dir().join("seed_fast.bpf")).unwrap();
    let prog = validate(&raw::decode(&bytes).unwrap(), Mode::Seccomp).unwrap();
    assert!(prog.insns().iter().any(|i| i.code == 0x21));
    let failures = round_trip_failures("seed_fast (rewritten)", prog.insns());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(print_asm(prog.insns()).contains(".raw 0x0021, 0, 0, 0x00000004"));
}
