//! lib/test_bpf.c's classic tests (testdata/test_bpf/classic.json): every
//! run must give the kernel's expected value on the CONVERTED program run by
//! our eBPF interpreter, and the classic interpreters must agree
//! (`test_kit::oracle`). The 10 `expected_fail` programs must be refused by
//! validation or conversion. One aggregating test lists every failing case.
//!
//! The skb of a run is built as the file's README says: `len` bytes of
//! `data` (zero padded) as the linear area, MAC header at 0, network header
//! at `min(len, 14)`, lib/test_bpf.c's field values ([`cbpf::Skb::test_bpf`]);
//! `FLAG_SKB_FRAG` appends the 128-byte `frag_data` as paged data;
//! `FLAG_NO_DATA` runs the eBPF program with `r1 = 0` (no skb at all).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{validate, Insn, Mode};
use serde_json::Value;
use test_kit::{Oracle, SocketInput};

const CLASSIC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/test_bpf/classic.json");

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn insns(test: &Value) -> Vec<Insn> {
    test["insns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let f: Vec<u64> = i.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            Insn { code: f[0] as u16, jt: f[1] as u8, jf: f[2] as u8, k: f[3] as u32 }
        })
        .collect()
}

/// The skb of one run, per testdata/test_bpf/README.md.
fn run_input(test: &Value, len: usize) -> SocketInput {
    let mut data = hex(test["data"].as_str().unwrap_or(""));
    data.resize(len, 0);
    let mut input = SocketInput::test_bpf(data);
    if has_flag(test, "FLAG_SKB_FRAG") {
        let frag = hex(test["frag_data"].as_str().unwrap());
        assert_eq!(frag.len(), 128);
        input.data.extend(frag);
        input.headlen = len;
        input.network_offset = len.min(14);
    }
    input
}

fn has_flag(test: &Value, flag: &str) -> bool {
    test["flags"].as_array().unwrap().iter().any(|f| f == flag)
}

#[test]
fn test_bpf_classic_runs_on_the_converted_program() {
    let text = std::fs::read_to_string(CLASSIC).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let tests = json["tests"].as_array().unwrap();
    let (mut runs, mut passed, mut rejected) = (0, 0, 0);
    let mut failures = Vec::new();
    for test in tests {
        let name = format!("#{} {}", test["index"], test["name"].as_str().unwrap());
        let insns = insns(test);
        if test["expected_fail"].as_bool().unwrap() {
            let refused = match validate(&insns, Mode::Socket) {
                Err(_) => true,
                Ok(prog) => convert::convert(&prog, &convert::Options::default()).is_err(),
            };
            if refused {
                rejected += 1;
            } else {
                failures.push(format!("{name}: expected a load-time failure, but it was accepted"));
            }
            continue;
        }
        let prog = match validate(&insns, Mode::Socket) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: validate: {e}"));
                continue;
            }
        };
        let mut oracle = match Oracle::new(name.clone(), &prog) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{e}"));
                continue;
            }
        };
        for run in test["runs"].as_array().unwrap() {
            runs += 1;
            let len = run["len"].as_u64().unwrap() as usize;
            let want = run["result"].as_u64().unwrap() as u32;
            let got = if has_flag(test, "FLAG_NO_DATA") {
                oracle.check_no_data()
            } else {
                oracle.check_socket(&run_input(test, len).skb())
            };
            match got {
                Ok(v) if v == want => passed += 1,
                Ok(v) => failures.push(format!("{name} (len {len}): both returned {v:#x}, kernel expects {want:#x}")),
                Err(m) => failures.push(format!("{m} (len {len}, kernel expects {want:#x})")),
            }
        }
    }
    println!("test_bpf classic: {passed}/{runs} runs pass, {rejected} expected load failures refused");
    assert_eq!(runs, 159, "the README promises 159 classic runs");
    assert_eq!(rejected + failures.iter().filter(|f| f.contains("load-time")).count(), 10);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
