//! Classic interpreter speed on libseccomp filters (testdata/filters), side
//! by side with rbpf 0.4's interpreter running the converted program.
//!
//! IDs:
//! - `cbpf_vs_rbpf/<filter>/<cbpf|rbpf>`: one call on the filter's deepest
//!   vector (the kernel-checked vector that executes the most classic
//!   instructions);
//! - `cbpf_vs_rbpf_all/<filter>/<cbpf|rbpf>`: one call per kernel-checked
//!   vector of the filter; criterion's throughput (elements = calls) gives
//!   the time per call.
//!
//! The rbpf side is what the kernel would run: `convert::convert` with the
//! default options, `ebpf::encode`, `rbpf::EbpfVmRaw::execute_program` on
//! the same 64 bytes. Both sides are checked against the kernel's expected
//! action before timing, so a broken engine cannot look fast.
//!
//! Set `CBPF_BENCH_FILTERS=a,b` to time only some filters.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use support::{executed, load, NAMES};

mod support;

fn bench_filters(c: &mut Criterion) {
    let only = std::env::var("CBPF_BENCH_FILTERS").ok();
    let wanted = |name: &str| only.as_deref().is_none_or(|list| list.split(',').any(|n| n == name));
    for name in NAMES.iter().copied().filter(|n| wanted(n)) {
        let case = match load(name) {
            Ok(case) => case,
            Err(why) => {
                eprintln!("skipping {name}: {why}");
                continue;
            }
        };
        let rbpf = match rbpf::EbpfVmRaw::new(Some(&case.ebpf_bytes)) {
            Ok(vm) => vm,
            Err(e) => {
                eprintln!("skipping {name}: rbpf rejects the converted program: {e}");
                continue;
            }
        };
        let mut wrong = Vec::new();
        for (data, want) in &case.vectors {
            let ours = case.interp.run_seccomp(data);
            let theirs = rbpf.execute_program(&mut data.clone()).map(|v| v as u32);
            if ours != Ok(*want) || theirs.as_ref().ok() != Some(want) {
                wrong.push(format!("want {want:#x} cbpf {ours:?} rbpf {theirs:?}"));
            }
        }
        assert!(wrong.is_empty(), "{name}: wrong results: {wrong:?}");

        let interp = &case.interp;
        let total: usize = case.vectors.iter().map(|(v, _)| executed(interp, v)).sum();
        let (deepest, _) =
            case.vectors.iter().max_by_key(|(v, _)| executed(interp, v)).copied().unwrap_or(([0; 64], 0));
        eprintln!(
            "{name}: {} insns, {} vectors, {:.1} insns executed on average, deepest {}",
            interp.len(),
            case.vectors.len(),
            total as f64 / case.vectors.len().max(1) as f64,
            executed(interp, &deepest)
        );

        let mut group = c.benchmark_group("cbpf_vs_rbpf");
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{name}/cbpf"), |b| {
            b.iter(|| interp.run_seccomp(black_box(&deepest)).unwrap_or(0))
        });
        let mut data = deepest;
        group.bench_function(format!("{name}/rbpf"), |b| {
            b.iter(|| rbpf.execute_program(black_box(&mut data)).unwrap_or(0))
        });
        group.finish();

        let mut group = c.benchmark_group("cbpf_vs_rbpf_all");
        group.throughput(Throughput::Elements(case.vectors.len() as u64));
        group.bench_function(format!("{name}/cbpf"), |b| {
            b.iter(|| {
                let mut acc = 0u32;
                for (v, _) in &case.vectors {
                    acc ^= interp.run_seccomp(black_box(v)).unwrap_or(0);
                }
                acc
            })
        });
        let mut all: Vec<[u8; 64]> = case.vectors.iter().map(|(v, _)| *v).collect();
        group.bench_function(format!("{name}/rbpf"), |b| {
            b.iter(|| {
                let mut acc = 0u64;
                for v in all.iter_mut() {
                    acc ^= rbpf.execute_program(black_box(v)).unwrap_or(0);
                }
                acc
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_filters);
criterion_main!(benches);
