//! Every libseccomp filter of testdata/filters, converted, gives each test
//! vector's kernel-observed action when run on rbpf's interpreter.
//!
//! `*.vectors.jsonl` come from the real kernel; `*.sim_only.jsonl` from
//! libseccomp's simulator (foreign arches, and the syscalls x86_64 exempts
//! from seccomp: their expected value is still what the filter computes).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use convert::{convert, Options};
use test_kit::corpus::{self, Source};

#[test]
fn converted_filters_match_kernel_vectors() {
    let filters = corpus::filters().unwrap();
    assert!(!filters.is_empty(), "no filters in {}", corpus::filters_dir().display());
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for filter in &filters {
        let name = &filter.name;
        let out = match convert(&filter.program, &Options::default()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: rejected by convert: {e}"));
                continue;
            }
        };
        for (source, suffix) in [(Source::Kernel, "vectors"), (Source::Simulator, "sim_only")] {
            let vectors = filter.vectors_from(source).unwrap();
            let mut file_failures = 0;
            let mut ctxs: Vec<[u8; 64]> = vectors.iter().map(|v| v.data.to_bytes()).collect();
            let results = match common::run_rbpf_many(&out.insns, &mut ctxs) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            for (v, got) in vectors.iter().zip(results) {
                checked += 1;
                if got.as_ref() != Ok(&v.action) {
                    file_failures += 1;
                    if file_failures <= 5 {
                        failures.push(format!(
                            "{name}.{suffix}.jsonl:{}: nr={} arch={:#x}: got {got:x?}, want {:#x}",
                            v.line, v.data.nr as u32, v.data.arch, v.action
                        ));
                    }
                }
            }
            if file_failures > 5 {
                failures.push(format!("{name}.{suffix}.jsonl: {} more failures", file_failures - 5));
            }
        }
    }
    println!("{} filters, {checked} vectors checked on rbpf", filters.len());
    assert!(checked > 0);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
