#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every testdata/filters program, converted, on every kernel-checked
//! vector: the fused interpreter (superinstructions, linked load-compare
//! runs) returns the kernel's
//! action and executes exactly the steps of the plain one. One aggregating
//! test listing every failing case.

use cbpf::SeccompData;
use ebpf::{Helpers, LoadOptions, Program, Vm};
use test_kit::corpus::{self, Filter};

#[test]
fn converted_filters_fused_and_plain_agree_with_the_kernel() {
    let filters = corpus::filters().unwrap();
    let plain_opts = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let (mut failures, mut runs) = (Vec::new(), 0);
    for filter in &filters {
        let name = &filter.name;
        let insns = convert::convert(&filter.program, &Default::default()).unwrap().insns;
        let fused = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
        let plain = Program::load(&insns, &plain_opts, &Helpers::new()).unwrap();
        let (mut a, mut b) = (Vm::new(), Vm::new());
        for v in filter.vectors().unwrap() {
            runs += 1;
            let (data, want) = (v.data.to_bytes(), v.action);
            let (ra, rb) = (a.run_seccomp(&fused, &data), b.run_seccomp(&plain, &data));
            if ra != Ok(want) || rb != Ok(want) || a.executed() != b.executed() {
                failures.push(format!(
                    "{name} ({:?}) line {}: want {want:#x}, fused {ra:?} ({} steps), plain {rb:?} ({} steps)",
                    v.source,
                    v.line,
                    a.executed(),
                    b.executed()
                ));
            }
        }
    }
    println!("{} filters, {runs} vectors", filters.len());
    assert!(runs > 1000, "too few vectors: {runs}");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The step budget is exact on fused runs: linked load-compare runs count
/// both instructions of every pair.
#[test]
fn step_budget_is_exact_on_fused_filters() {
    let prog = Filter::load("long_jumps_large").unwrap().program;
    let insns = convert::convert(&prog, &Default::default()).unwrap().insns;
    let fused = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
    let data = SeccompData { nr: 80, arch: 0xc000_003e, instruction_pointer: 0, args: [0, 1, 0, 0, 0, 0] }.to_bytes();
    let want = 0x7fff_0000;
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
