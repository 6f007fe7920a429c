#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every engine on every kernel-checked vector of testdata/filters: the
//! in-process ones, then `kernel-jit` (the running kernel's JIT through
//! `BPF_PROG_TEST_RUN`, skipped visibly without `bpf(2)`, a failure under
//! `CI=true`). The `kernel` engine's vectors are checked by the CLI suite.

use engine::{EngineKind, Outcome, Prepared, SeccompEngine};
use test_kit::corpus;

/// Every filter, prepared for the engines, with all its vectors.
fn filters() -> Vec<(String, Prepared, Vec<corpus::Vector>)> {
    corpus::filters()
        .unwrap()
        .into_iter()
        .map(|f| {
            let vectors = f.vectors().unwrap();
            (f.name, Prepared::new(f.program).unwrap(), vectors)
        })
        .collect()
}

/// Runs every in-process engine that can load each filter; engines that
/// refuse a filter (rbpf's JIT past its page) must say so with an error.
#[test]
fn every_in_process_engine_gives_every_expected_action() {
    let mut failures = Vec::new();
    let mut runs = 0usize;
    for (name, prepared, vectors) in filters() {
        for kind in EngineKind::ALL.into_iter().filter(|&k| !matches!(k, EngineKind::Kernel | EngineKind::KernelJit)) {
            let mut engine = match SeccompEngine::new(kind, &prepared) {
                Ok(e) => e,
                Err(e) => {
                    assert_eq!(kind, EngineKind::RbpfJit, "{name}: {kind} refused: {e}");
                    eprintln!("{name}: {kind} not run: {e}");
                    continue;
                }
            };
            for v in &vectors {
                runs += 1;
                match engine.eval(&v.data) {
                    Ok(Outcome::Action(a)) if a == v.action => {}
                    other => {
                        failures.push(format!("{name}:{} {kind}: got {other:?}, want {:?}", v.line, Some(v.action)))
                    }
                }
            }
        }
    }
    assert!(runs > 20_000, "only {runs} runs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// `kernel-jit` answers every vector of every filter, simulator-only ones
/// (foreign arches, calls x86_64 exempts) included: no system call is made.
#[test]
fn kernel_jit_gives_every_expected_action() {
    let test = "kernel_jit_gives_every_expected_action";
    let Some(()) = test_data::require::have(test, test_data::require::Need::Bpf, kernel::bpf::available()) else {
        return;
    };
    let mut failures = Vec::new();
    let mut runs = 0usize;
    for (name, prepared, vectors) in filters() {
        let mut engine = SeccompEngine::new(EngineKind::KernelJit, &prepared).unwrap();
        let inputs: Vec<cbpf::SeccompData> = vectors.iter().map(|v| v.data).collect();
        for (v, got) in vectors.iter().zip(engine.eval_batch(&inputs).unwrap()) {
            runs += 1;
            if got != Outcome::Action(v.action) {
                failures.push(format!("{name}:{} kernel-jit: got {got:?}, want {:#x}", v.line, v.action));
            }
        }
    }
    assert!(runs > 20_000, "only {runs} runs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn engine_names_round_trip() {
    for k in EngineKind::ALL {
        assert_eq!(k.name().parse::<EngineKind>().unwrap(), k);
    }
    assert!("jit".parse::<EngineKind>().is_err());
}
