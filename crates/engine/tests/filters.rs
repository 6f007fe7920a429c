#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Every engine on every kernel-checked vector of testdata/filters.

use engine::{EngineKind, Outcome, Prepared, SeccompEngine};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

fn filters() -> Vec<(String, Prepared, Vec<engine::vectors::Vector>)> {
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(DIR)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".bpf"))
        .collect();
    names.sort();
    for name in names {
        let stem = name.trim_end_matches(".bpf").to_string();
        let insns = cbpf::raw::decode(&std::fs::read(format!("{DIR}/{name}")).unwrap()).unwrap();
        let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
        let text = std::fs::read_to_string(format!("{DIR}/{stem}.vectors.jsonl")).unwrap();
        let sim = std::fs::read_to_string(format!("{DIR}/{stem}.sim_only.jsonl")).unwrap();
        let mut vectors = engine::vectors::parse(&text).unwrap();
        vectors.extend(engine::vectors::parse(&sim).unwrap());
        out.push((stem, Prepared::new(prog).unwrap(), vectors));
    }
    out
}

/// Runs every in-process engine that can load each filter; engines that
/// refuse a filter (rbpf's JIT past its page) must say so with an error.
#[test]
fn every_in_process_engine_gives_every_expected_action() {
    let mut failures = Vec::new();
    let mut runs = 0usize;
    for (name, prepared, vectors) in filters() {
        for kind in [
            EngineKind::Cbpf,
            EngineKind::Ebpf,
            EngineKind::Rbpf,
            EngineKind::RbpfJit,
            EngineKind::RbpfCranelift,
            EngineKind::Fast,
        ] {
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
                    Ok(Outcome::Action(a)) if Some(a) == v.action => {}
                    other => failures.push(format!("{name}:{} {kind}: got {other:?}, want {:?}", v.line, v.action)),
                }
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
