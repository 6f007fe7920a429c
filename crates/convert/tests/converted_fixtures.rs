#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! `testdata/converted/` is the converter's output, exactly: every filter
//! of `testdata/filters/` and every chain filetest, converted here, must
//! equal its `.ebpf` file byte for byte, and no `.ebpf` file may be left
//! without its source. The eBPF crate's own tests run those files
//! (crates/ebpf/tests/converted_programs.rs), so a change to the converter
//! that leaves them stale fails here. `UPDATE_EXPECT=1` rewrites them.

use std::collections::BTreeSet;

use cbpf::{validate, Insn, Mode};
use convert::{convert, Options};
use test_data::{converted, filetest, filters, paths, RawInsn};

/// The converted program's records, or why there is none.
fn converted_bytes(raw: &[RawInsn], mode: Mode) -> Result<Vec<u8>, String> {
    let insns: Vec<Insn> = raw.iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
    let prog = validate(&insns, mode).map_err(|e| format!("validate: {e}"))?;
    let out = convert(&prog, &Options::default()).map_err(|e| format!("convert: {e}"))?;
    Ok(ebpf::encode(&out.insns))
}

/// Every program the folder must hold: (name, converted bytes). A chain
/// filetest that is one of the filters (`; filter: NAME`, nothing else)
/// has no file of its own: its program is `filters/NAME.ebpf`.
fn sources(folder: &str) -> Vec<(String, Result<Vec<u8>, String>)> {
    match folder {
        "filters" => filters::names()
            .unwrap()
            .into_iter()
            .map(|name| {
                let bytes = filters::insns(&name).and_then(|raw| converted_bytes(&raw, Mode::Seccomp));
                (name, bytes)
            })
            .collect(),
        _ => paths::files_ending(&paths::testdata().join("chains"), ".txt")
            .unwrap()
            .into_iter()
            .filter_map(|path| {
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                let t = paths::read_text(&path).and_then(|text| filetest::parse(&text));
                if let Ok(Some(filter)) = t.as_ref().map(|t| t.value("filter")) {
                    return match filters::insns(filter) {
                        Ok(raw) if t.as_ref().is_ok_and(|t| t.insns == raw) => None,
                        _ => Some((name, Err(format!("not exactly the filter {filter}")))),
                    };
                }
                let bytes = t.and_then(|t| {
                    let mode = match t.value("mode") {
                        Some("seccomp") => Mode::Seccomp,
                        Some("socket") => Mode::Socket,
                        other => return Err(format!("mode {other:?}")),
                    };
                    converted_bytes(&t.insns, mode)
                });
                Some((name, bytes))
            })
            .collect(),
    }
}

#[test]
fn every_converted_fixture_is_the_converters_output() {
    let bless = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut count = 0;
    for folder in converted::FOLDERS {
        let mut names = BTreeSet::new();
        for (name, bytes) in sources(folder) {
            count += 1;
            let bytes = match bytes {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{folder}/{name}: {e}"));
                    continue;
                }
            };
            let path = converted::path(folder, &name);
            names.insert(format!("{name}.ebpf"));
            match converted::read(folder, &name) {
                Ok(kept) if kept == bytes => {}
                _ if bless => {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &bytes).unwrap();
                }
                Ok(kept) => failures.push(format!(
                    "{}: stale ({} instructions kept, the converter makes {}; UPDATE_EXPECT=1 rewrites it)",
                    path.display(),
                    kept.len() / 8,
                    bytes.len() / 8
                )),
                Err(e) => failures.push(format!("{e} (UPDATE_EXPECT=1 writes it)")),
            }
        }
        let dir = paths::testdata().join("converted").join(folder);
        for path in paths::files_ending(&dir, ".ebpf").unwrap_or_default() {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            if !names.contains(&file) {
                failures.push(format!(
                    "{}: nothing converts to it (no filter, or no chain filetest of its own)",
                    path.display()
                ));
            }
        }
    }
    assert!(count >= 20, "only {count} programs");
    assert!(failures.is_empty(), "{} of {count}:\n{}", failures.len(), failures.join("\n"));
}
