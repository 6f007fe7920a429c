#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! lib/test_bpf.c's classic tests (testdata/test_bpf/classic.json) on the
//! classic interpreter in socket mode, with the skb `populate_skb()` builds.

use cbpf::{validate, Interp, Mode};
use test_kit::corpus;
use test_kit::SocketInput;

#[test]
fn every_classic_test_bpf_run_passes_in_socket_mode() {
    let mut failures = Vec::new();
    let mut runs = 0;
    for t in corpus::test_bpf_classic().unwrap() {
        let name = &t.name;
        if t.expected_fail {
            continue;
        }
        let prog = match validate(&t.insns, Mode::Socket) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: rejected: {e}"));
                continue;
            }
        };
        let interp = Interp::new(&prog);
        let no_data = t.has_flag("FLAG_NO_DATA");
        for (i, &(len, want)) in t.runs.iter().enumerate() {
            // FLAG_NO_DATA: the kernel passes no skb; these programs never
            // touch it, so an empty packet stands in.
            let input = if no_data { SocketInput::test_bpf(Vec::new()) } else { t.input(len) };
            let skb = input.skb();
            let got = interp.run_socket(&skb).unwrap();
            let traced = interp.trace_socket(&skb, |_| {}).unwrap();
            runs += 1;
            if got != want || traced != want {
                failures.push(format!("{name} run {i} (len {len}): got {got:#x} (trace {traced:#x}), want {want:#x}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(runs, 159);
}
