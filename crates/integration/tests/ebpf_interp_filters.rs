#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every testdata/filters program, converted, on every kernel-checked
//! vector: the fused interpreter (superinstructions, linked load-compare
//! runs) returns the kernel's
//! action and executes exactly the steps of the plain one. One aggregating
//! test listing every failing case.

use ebpf::{Helpers, LoadOptions, Program, Vm};

const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

fn vector(line: &str) -> ([u8; 64], u32) {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let mut d = [0u8; 64];
    d[0..4].copy_from_slice(&(v["nr"].as_i64().unwrap() as u32).to_le_bytes());
    d[4..8].copy_from_slice(&(v["arch"].as_u64().unwrap() as u32).to_le_bytes());
    d[8..16].copy_from_slice(&v["ip"].as_u64().unwrap().to_le_bytes());
    for (k, a) in v["args"].as_array().unwrap().iter().enumerate() {
        d[16 + 8 * k..24 + 8 * k].copy_from_slice(&a.as_u64().unwrap().to_le_bytes());
    }
    (d, v["action"].as_u64().unwrap() as u32)
}

#[test]
fn converted_filters_fused_and_plain_agree_with_the_kernel() {
    let mut names: Vec<String> = std::fs::read_dir(FILTERS)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().unwrap().strip_suffix(".bpf").map(str::to_owned))
        .collect();
    names.sort();
    let plain_opts = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let (mut failures, mut runs) = (Vec::new(), 0);
    for name in &names {
        let raw = std::fs::read(format!("{FILTERS}/{name}.bpf")).unwrap();
        let prog = cbpf::validate(&cbpf::raw::decode(&raw).unwrap(), cbpf::Mode::Seccomp).unwrap();
        let insns = convert::convert(&prog, &Default::default()).unwrap().insns;
        let fused = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
        let plain = Program::load(&insns, &plain_opts, &Helpers::new()).unwrap();
        let (mut a, mut b) = (Vm::new(), Vm::new());
        for kind in ["vectors", "sim_only"] {
            let text = std::fs::read_to_string(format!("{FILTERS}/{name}.{kind}.jsonl")).unwrap();
            for (line_no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                runs += 1;
                let (data, want) = vector(line);
                let (ra, rb) = (a.run_seccomp(&fused, &data), b.run_seccomp(&plain, &data));
                if ra != Ok(want) || rb != Ok(want) || a.executed() != b.executed() {
                    failures.push(format!(
                        "{name}.{kind}:{}: want {want:#x}, fused {ra:?} ({} steps), plain {rb:?} ({} steps)",
                        line_no + 1,
                        a.executed(),
                        b.executed()
                    ));
                }
            }
        }
    }
    println!("{} filters, {runs} vectors", names.len());
    assert!(runs > 1000, "too few vectors: {runs}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The step budget is exact on fused runs: linked load-compare runs count
/// both instructions of every pair.
#[test]
fn step_budget_is_exact_on_fused_filters() {
    let raw = std::fs::read(format!("{FILTERS}/long_jumps_large.bpf")).unwrap();
    let prog = cbpf::validate(&cbpf::raw::decode(&raw).unwrap(), cbpf::Mode::Seccomp).unwrap();
    let insns = convert::convert(&prog, &Default::default()).unwrap().insns;
    let fused = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
    let (data, want) = vector(r#"{"arch":3221225534,"nr":80,"ip":0,"args":[0,1,0,0,0,0],"action":2147418112}"#);
    let mut vm = Vm::new();
    assert_eq!(vm.run_seccomp(&fused, &data), Ok(want));
    let steps = vm.executed();
    assert!(steps > 300, "{steps}");
    vm.set_step_budget(steps);
    assert_eq!(vm.run_seccomp(&fused, &data), Ok(want));
    vm.set_step_budget(steps - 1);
    let err = vm.run_seccomp(&fused, &data).unwrap_err();
    assert!(matches!(err, ebpf::ExecError::StepBudgetExceeded { .. }), "{err}");
}
