//! Every libseccomp filter of testdata/filters, converted, gives each test
//! vector's kernel-observed action when run on rbpf's interpreter.
//!
//! `*.vectors.jsonl` come from the real kernel; `*.sim_only.jsonl` from
//! libseccomp's simulator (foreign arches, and the syscalls x86_64 exempts
//! from seccomp: their expected value is still what the filter computes).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use cbpf::{raw, validate, Mode};
use convert::{convert, Options};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

#[test]
fn converted_filters_match_kernel_vectors() {
    let mut names: Vec<String> = std::fs::read_dir(DIR)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".bpf").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no filters in {DIR}");
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for name in &names {
        let bytes = std::fs::read(format!("{DIR}/{name}.bpf")).unwrap();
        let insns = raw::decode(&bytes).unwrap();
        let prog = match validate(&insns, Mode::Seccomp) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{name}: rejected by validate: {e}"));
                continue;
            }
        };
        let out = match convert(&prog, &Options::default()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: rejected by convert: {e}"));
                continue;
            }
        };
        for suffix in ["vectors", "sim_only"] {
            let path = format!("{DIR}/{name}.{suffix}.jsonl");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut file_failures = 0;
            let mut ctxs = Vec::new();
            let mut wants = Vec::new();
            for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let nr = v["nr"].as_i64().unwrap() as u32;
                let arch = v["arch"].as_u64().unwrap() as u32;
                let ip = v["ip"].as_u64().unwrap_or(0);
                let mut args = [0u64; 6];
                for (slot, a) in args.iter_mut().zip(v["args"].as_array().unwrap()) {
                    *slot = a.as_u64().unwrap();
                }
                ctxs.push(common::seccomp_data(nr, arch, ip, args));
                wants.push((n + 1, nr, arch, v["action"].as_u64().unwrap() as u32));
            }
            let results = match common::run_rbpf_many(&out.insns, &mut ctxs) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            for ((line, nr, arch, want), got) in wants.into_iter().zip(results) {
                checked += 1;
                if got.as_ref() != Ok(&want) {
                    file_failures += 1;
                    if file_failures <= 5 {
                        failures.push(format!(
                            "{name}.{suffix}.jsonl:{line}: nr={nr} arch={arch:#x}: got {got:x?}, want {want:#x}"
                        ));
                    }
                }
            }
            if file_failures > 5 {
                failures.push(format!("{name}.{suffix}.jsonl: {} more failures", file_failures - 5));
            }
        }
    }
    println!("{} filters, {checked} vectors checked on rbpf", names.len());
    assert!(checked > 0);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
