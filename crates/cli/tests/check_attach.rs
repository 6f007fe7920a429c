#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 13 finding 8: `check` rejects what the kernel's attach-time
//! conversion (`bpf_convert_filter`) rejects.

use std::process::Output;

mod common;
use common::run;

fn check(mode: &str, raw: &[u8]) -> Output {
    run(&["check", "--mode", mode, "--from", "raw", "-"], raw)
}

/// `ja +n`, `n` × `ld [14]`, `ret #0` as raw sock_filter bytes.
fn ja_over_loads(n: u32) -> Vec<u8> {
    let rec = |code: u16, k: u32| {
        let mut b = code.to_le_bytes().to_vec();
        b.extend([0, 0]);
        b.extend(k.to_le_bytes());
        b
    };
    let mut out = rec(0x05, n);
    for _ in 0..n {
        out.extend(rec(0x20, 14));
    }
    out.extend(rec(0x06, 0));
    out
}

#[test]
fn socket_check_stops_at_the_conversion_limit() {
    let ok = check("socket", &ja_over_loads(2340));
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let bad = check("socket", &ja_over_loads(2341));
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.starts_with("error:"), "{err}");
    assert!(err.contains("bpf_convert_filter") && err.contains("insn 0"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(bad.stdout.is_empty());
}
