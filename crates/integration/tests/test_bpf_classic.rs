//! lib/test_bpf.c's classic tests (testdata/test_bpf/classic.json): every
//! run must give the kernel's expected value on the CONVERTED program run by
//! our eBPF interpreter, and the classic interpreters (`cbpf::Interp` and
//! the plain trace, the oracle's reference) must agree and give it too
//! (`test_kit::oracle`). The 10 `expected_fail` programs must be refused by
//! validation or conversion. One aggregating test lists every failing case.
//!
//! The skb of a run is built as the file's README says: `len` bytes of
//! `data` (zero padded) as the linear area, MAC header at 0, network header
//! at `min(len, 14)`, lib/test_bpf.c's field values ([`cbpf::Skb::test_bpf`]);
//! `FLAG_SKB_FRAG` appends the 128-byte `frag_data` as paged data;
//! `FLAG_NO_DATA` runs the eBPF program with `r1 = 0` (no skb at all).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use cbpf::{validate, Mode};
use test_kit::corpus;
use test_kit::Oracle;

#[test]
fn test_bpf_classic_runs_on_the_converted_program() {
    let tests = corpus::test_bpf_classic().unwrap();
    let (mut runs, mut passed, mut rejected) = (0, 0, 0);
    let mut failures = Vec::new();
    for test in &tests {
        let name = format!("#{} {}", test.index, test.name);
        if test.expected_fail {
            let refused = match validate(&test.insns, Mode::Socket) {
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
        let prog = match validate(&test.insns, Mode::Socket) {
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
        for &(len, want) in &test.runs {
            runs += 1;
            let got = if test.has_flag("FLAG_NO_DATA") {
                oracle.check_no_data()
            } else {
                if test.has_flag("FLAG_SKB_FRAG") {
                    assert_eq!(test.frag_data.as_ref().map(Vec::len), Some(128), "{name}");
                }
                oracle.check_socket(&test.input(len).skb())
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
