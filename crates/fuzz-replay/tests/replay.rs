//! Replays, on stable Rust, every crash libFuzzer ever found
//! (`fuzz/regressions/<target>/*`) and every committed seed
//! (`fuzz/seeds/<target>/*`) through the same target bodies the fuzzer runs.
//!
//! One aggregating test per directory kind lists every failing file by name.
//! A regression whose bug is not fixed yet is listed in [`KNOWN_OPEN`] so the
//! suite stays green; once the fix lands, its replay passes and this test
//! fails until the entry is removed, so the list cannot go stale.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

/// `<target>/<file>` of regressions whose root cause is not fixed yet, each
/// with the issue it waits for. Keep in step with the READMEs beside them.
const KNOWN_OPEN: &[&str] = &[];

fn fuzz_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz")).to_path_buf()
}

/// Every input file of `<kind>/<target>/`, skipping the README and sidecar notes.
fn inputs(kind: &str) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for target in fuzz_replay::TARGETS {
        let dir = fuzz_dir().join(kind).join(target.name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_file() && !name.ends_with(".md") && !name.ends_with(".txt") && !name.starts_with('.') {
                out.push((format!("{}/{name}", target.name), path));
            }
        }
    }
    out.sort();
    out
}

/// Runs every file of `kind`; returns the names that panicked, with the message.
fn replay(kind: &str) -> (usize, Vec<(String, String)>) {
    let files = inputs(kind);
    let mut failures = Vec::new();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for (name, path) in &files {
        let target = fuzz_replay::target(name.split('/').next().unwrap()).unwrap();
        let data = std::fs::read(path).unwrap();
        if let Err(p) = std::panic::catch_unwind(|| (target.run)(&data)) {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push((name.clone(), msg));
        }
    }
    std::panic::set_hook(hook);
    (files.len(), failures)
}

#[test]
fn every_regression_replays() {
    let (count, failures) = replay("regressions");
    let mut unexpected = Vec::new();
    for (name, msg) in &failures {
        if !KNOWN_OPEN.contains(&name.as_str()) {
            unexpected.push(format!("{name}: {}", msg.lines().next().unwrap_or("")));
        }
    }
    let fixed: Vec<_> = KNOWN_OPEN.iter().filter(|k| !failures.iter().any(|(n, _)| n == *k)).collect();
    assert!(count > 0, "no regression found under {}/regressions", fuzz_dir().display());
    println!("{count} regressions replayed, {} known open", KNOWN_OPEN.len());
    assert!(unexpected.is_empty(), "{} regressions fail:\n{}", unexpected.len(), unexpected.join("\n"));
    assert!(fixed.is_empty(), "fixed (remove from KNOWN_OPEN): {fixed:?}");
}

#[test]
fn every_seed_passes() {
    let (count, failures) = replay("seeds");
    assert!(count >= 6, "only {count} seeds found under {}", fuzz_dir().display());
    let lines: Vec<_> = failures
        .iter()
        .filter(|(n, _)| !KNOWN_OPEN.contains(&n.as_str()))
        .map(|(n, m)| format!("{n}: {}", m.lines().next().unwrap_or("")))
        .collect();
    println!("{count} seeds replayed");
    assert!(lines.is_empty(), "{} seeds fail:\n{}", lines.len(), lines.join("\n"));
}

#[test]
fn every_target_has_seeds() {
    let missing: Vec<_> = fuzz_replay::TARGETS
        .iter()
        .filter(|t| !inputs("seeds").iter().any(|(n, _)| n.starts_with(&format!("{}/", t.name))))
        .map(|t| t.name)
        .collect();
    assert!(missing.is_empty(), "targets without seeds: {missing:?}");
}

/// The generator's promise: whatever the bytes, the program it builds is
/// valid (the fuzz targets would silently skip cases otherwise).
#[test]
fn generator_always_builds_valid_programs() {
    let mut failures = 0;
    let mut rng = test_kit::SplitMix64::new(0x9e37_79b9_7f4a_7c15);
    for len in 0..2000usize {
        let bytes: Vec<u8> = (0..len % 400).map(|_| rng.next_u64() as u8).collect();
        let mut u = arbitrary::Unstructured::new(&bytes);
        match fuzz_replay::gen::case(&mut u) {
            Ok(case) => assert!(!case.inputs.is_empty()),
            Err(_) => failures += 1,
        }
    }
    assert_eq!(failures, 0, "{failures} byte strings built no valid program");
}
