#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! lib/test_bpf.c's INTERNAL (eBPF) tests, from testdata/test_bpf/internal.json:
//! every run of every test, on our interpreter, low 32 bits of r0 compared.

use ebpf::{Helpers, Insn, LoadOptions, Program, SkbContext, SkbMeta};
use ebpf::{Input, Vm};
use serde_json::Value;

const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/test_bpf/internal.json");

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn run_one(t: &Value, opts: &LoadOptions) -> Result<(), String> {
    let insns: Vec<Insn> = t["insns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let f: Vec<i64> = i.as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
            Insn::new(f[0] as u8, f[1] as u8, f[2] as u8, f[3] as i16, f[4] as i32)
        })
        .collect();
    let prog = Program::load(&insns, opts, &Helpers::socket()).map_err(|e| format!("load: {e}"))?;
    let data = hex(t["data"].as_str().unwrap_or(""));
    let mut vm = Vm::new();
    for run in t["runs"].as_array().unwrap() {
        let len = run["len"].as_u64().unwrap() as usize;
        let expected = run["result"].as_u64().unwrap();
        let mut packet = data.clone();
        packet.resize(len.max(packet.len()), 0);
        packet.truncate(len);
        let got = match t["ctx"].as_str().unwrap() {
            "none" => vm.run(&prog, Input::None),
            "buffer" => {
                let mut buf = vec![0u8; len];
                vm.run(&prog, Input::Memory(&mut buf))
            }
            _ => {
                let skb = SkbContext::new(&packet, &SkbMeta::default());
                vm.run(&prog, Input::Skb(&skb))
            }
        }
        .map_err(|e| format!("run len {len}: {e}"))?;
        if got as u32 as u64 != expected {
            return Err(format!("len {len}: got {:#x}, expected {expected:#x}", got as u32));
        }
    }
    Ok(())
}

fn suite(opts: &LoadOptions) -> (usize, Vec<String>) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(SUITE).unwrap()).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    let mut failures = Vec::new();
    let mut runs = 0;
    for t in tests {
        runs += t["runs"].as_array().unwrap().len();
        if let Err(e) = run_one(t, opts) {
            failures.push(format!("#{} {}: {e}", t["index"], t["name"].as_str().unwrap()));
        }
    }
    (runs, failures)
}

#[test]
fn test_bpf_internal_all_runs_pass() {
    let (runs, failures) = suite(&LoadOptions::default());
    assert_eq!(runs, 648);
    assert!(failures.is_empty(), "{} of {runs} runs failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn test_bpf_internal_all_runs_pass_without_superinstructions() {
    let opts = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let (runs, failures) = suite(&opts);
    assert!(failures.is_empty(), "{} of {runs} runs failed:\n{}", failures.len(), failures.join("\n"));
}
