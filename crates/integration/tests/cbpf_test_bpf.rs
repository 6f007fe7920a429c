#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! lib/test_bpf.c's classic tests (testdata/test_bpf/classic.json) on the
//! classic interpreter in socket mode, with the skb `populate_skb()` builds.

use cbpf::{validate, Insn, Interp, Mode, Skb};
use serde_json::Value;

const CLASSIC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/test_bpf/classic.json"));

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn insns(t: &Value) -> Vec<Insn> {
    t["insns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let f: Vec<u64> = i.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            Insn::jump(f[0] as u16, f[3] as u32, f[1] as u8, f[2] as u8)
        })
        .collect()
}

#[test]
fn every_classic_test_bpf_run_passes_in_socket_mode() {
    let doc: Value = serde_json::from_str(CLASSIC).unwrap();
    let mut failures = Vec::new();
    let mut runs = 0;
    for t in doc["tests"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        if t["expected_fail"].as_bool().unwrap() {
            continue;
        }
        let prog = match validate(&insns(t), Mode::Socket) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: rejected: {e}"));
                continue;
            }
        };
        let interp = Interp::new(&prog);
        let flags: Vec<&str> = t["flags"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        let no_data = flags.contains(&"FLAG_NO_DATA");
        let mut data = hex(t["data"].as_str().unwrap());
        data.resize(128, 0);
        let frag = t.get("frag_data").and_then(Value::as_str).map(hex);
        for (i, run) in t["runs"].as_array().unwrap().iter().enumerate() {
            let len = run["len"].as_u64().unwrap() as usize;
            let want = run["result"].as_u64().unwrap() as u32;
            // FLAG_NO_DATA: the kernel passes no skb; these programs never
            // touch it, so an empty packet stands in.
            let linear: Vec<u8> = if no_data { Vec::new() } else { data[..len].to_vec() };
            let mut bytes = linear.clone();
            if let Some(frag) = &frag {
                let mut f = frag.clone();
                f.resize(128, 0);
                bytes.extend_from_slice(&f);
            }
            let mut skb = Skb::test_bpf(&bytes);
            skb.headlen = linear.len();
            skb.network_offset = linear.len().min(14);
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
