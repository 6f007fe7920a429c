#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! lib/test_bpf.c's classic programs (testdata/test_bpf/classic.json) through
//! `validate`: socket mode must agree with the kernel's load results, seccomp
//! mode with what `seccomp_check_filter()` would say.

use cbpf::opcode::*;
use cbpf::{validate, Insn, Mode, Pc, ValidateError};

mod common;
use common::classic_tests;

/// The classic tests that also pass `seccomp_check_filter()`: no packet
/// loads other than `ld [k]` with `k < 64`, `k % 4 == 0`, no `mod`, no MSH.
/// Written by hand from SPEC §2.4 (every other test uses `ldh/ldb`, `ld [x+k]`,
/// ancillary or unaligned/out-of-range `ld [k]`, `mod` or MSH).
const SECCOMP_ACCEPTED: [&str; 21] = [
    "TXA",
    "ADD_SUB_MUL_K",
    "AND_OR_LSH_K",
    "LD_IMM_0",
    "SPILL_FILL",
    "RET_A",
    "M[]: alt STX + LDX",
    "M[]: full STX + full LDX",
    "LD_ABS word",
    "LD_ABS word positive offset, all ff",
    "ADD default X",
    "ADD default A",
    "SUB default X",
    "SUB default A",
    "MUL default X",
    "MUL default A",
    "DIV default X",
    "DIV default A",
    "JMP EQ default A",
    "JMP EQ default X",
    "JNE signed compare, test 7",
];

fn tests() -> Vec<(String, bool, Vec<Insn>)> {
    classic_tests()
}

#[test]
fn socket_mode_rejects_exactly_the_expected_failures() {
    let all = tests();
    assert_eq!(all.len(), 121);
    let mut failures = Vec::new();
    for (name, expected_fail, insns) in &all {
        match (validate(insns, Mode::Socket), expected_fail) {
            (Ok(_), true) => failures.push(format!("{name}: accepted, kernel rejects")),
            (Err(e), false) => failures.push(format!("{name}: rejected ({e}), kernel accepts")),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(all.iter().filter(|t| t.1).count(), 10);
}

#[test]
fn expected_failures_fail_for_the_kernel_reason() {
    let want = |name: &str, e: &ValidateError| -> bool {
        match name {
            "check: missing ret" => *e == ValidateError::NoFinalRet { pc: Pc(0), code: LD_IMM },
            "check: div_k_0" => *e == ValidateError::DivByZero { pc: Pc(0) },
            "check: unknown insn" => *e == ValidateError::UnknownOpcode { pc: Pc(0), code: LDX_W_ABS },
            "check: out of range spill/fill" => *e == ValidateError::MemIndex { pc: Pc(0), k: 16 },
            "check: RET X" => *e == ValidateError::UnknownOpcode { pc: Pc(0), code: 0x0e },
            "check: LDX + RET X" => *e == ValidateError::UnknownOpcode { pc: Pc(1), code: 0x0e },
            "check: SKF_AD_MAX" => *e == ValidateError::BadAncillary { pc: Pc(0), k: SKF_AD_OFF + SKF_AD_MAX },
            n if n.starts_with("LD_ABS") => *e == ValidateError::BadAncillary { pc: Pc(0), k: u32::MAX },
            _ => false,
        }
    };
    let mut failures = Vec::new();
    for (name, _, insns) in tests().iter().filter(|t| t.1) {
        for mode in [Mode::Socket, Mode::Seccomp] {
            match validate(insns, mode) {
                Err(e) if want(name, &e) => {}
                other => failures.push(format!("{name} ({mode}): {other:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn seccomp_mode_accepts_exactly_what_seccomp_check_filter_accepts() {
    let mut failures = Vec::new();
    let mut accepted = 0;
    for (name, _, insns) in &tests() {
        let want = SECCOMP_ACCEPTED.contains(&name.as_str());
        match validate(insns, Mode::Seccomp) {
            Ok(prog) => {
                accepted += 1;
                if !want {
                    failures.push(format!("{name}: accepted, seccomp rejects"));
                }
                // The rewrites of seccomp_check_filter().
                for (pc, (orig, run)) in insns.iter().zip(prog.insns()).enumerate() {
                    let expected = match orig.code {
                        LD_W_ABS => Insn { code: LDX_W_ABS, ..*orig },
                        LD_W_LEN => Insn { code: LD_IMM, k: 64, ..*orig },
                        LDX_W_LEN => Insn { code: LDX_IMM, k: 64, ..*orig },
                        _ => *orig,
                    };
                    if *run != expected {
                        failures.push(format!("{name}: pc {pc}: rewritten to {run:?}, want {expected:?}"));
                    }
                }
                assert_eq!(prog.original(), &insns[..]);
            }
            Err(e) => {
                if want {
                    failures.push(format!("{name}: rejected ({e}), seccomp accepts"));
                } else if !matches!(
                    e,
                    ValidateError::SeccompOpcode { .. }
                        | ValidateError::SeccompLoad { .. }
                        | ValidateError::UnknownOpcode { .. }
                        | ValidateError::DivByZero { .. }
                        | ValidateError::MemIndex { .. }
                        | ValidateError::BadAncillary { .. }
                        | ValidateError::NoFinalRet { .. }
                ) {
                    failures.push(format!("{name}: unexpected error {e:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(accepted, SECCOMP_ACCEPTED.len());
}
