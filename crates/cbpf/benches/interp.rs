//! Classic interpreter speed on libseccomp filters (testdata/filters).
//!
//! IDs: `cbpf_interp/<filter>/<vectors>`; each iteration runs the filter
//! once per vector of the set, and criterion's throughput (elements = calls)
//! gives the time per call. `all` uses every kernel-checked vector of the
//! filter; `deepest` repeats the vector that executes the most instructions.

use std::hint::black_box;

use cbpf::{raw, validate, Interp, Mode, SeccompData};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;

const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

fn load(name: &str) -> Option<(Interp, Vec<[u8; 64]>)> {
    let bytes = std::fs::read(format!("{FILTERS}/{name}.bpf")).ok()?;
    let prog = validate(&raw::decode(&bytes).ok()?, Mode::Seccomp).ok()?;
    let text = std::fs::read_to_string(format!("{FILTERS}/{name}.vectors.jsonl")).ok()?;
    let mut vectors = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).ok()?;
        let mut args = [0u64; 6];
        for (slot, a) in args.iter_mut().zip(v.get("args")?.as_array()?) {
            *slot = a.as_u64()?;
        }
        let data = SeccompData {
            nr: v.get("nr")?.as_i64()? as i32,
            arch: v.get("arch")?.as_u64()? as u32,
            instruction_pointer: v.get("ip")?.as_u64()?,
            args,
        };
        vectors.push(data.to_bytes());
    }
    Some((Interp::new(&prog), vectors))
}

fn executed(interp: &Interp, data: &[u8; 64]) -> usize {
    let mut n = 0;
    let _ = interp.trace_seccomp(data, |_| n += 1);
    n
}

fn bench_filters(c: &mut Criterion) {
    let mut group = c.benchmark_group("cbpf_interp");
    for name in ["seed_fast", "long_jumps_large"] {
        let Some((interp, vectors)) = load(name) else {
            eprintln!("skipping {name}: cannot load filter or vectors");
            continue;
        };
        let total: usize = vectors.iter().map(|v| executed(&interp, v)).sum();
        let deepest = vectors.iter().max_by_key(|v| executed(&interp, v)).copied().unwrap_or([0; 64]);
        eprintln!(
            "{name}: {} insns, {} vectors, {:.1} insns executed on average, deepest {}",
            interp.len(),
            vectors.len(),
            total as f64 / vectors.len().max(1) as f64,
            executed(&interp, &deepest)
        );
        group.throughput(Throughput::Elements(vectors.len() as u64));
        group.bench_function(format!("{name}/all"), |b| {
            b.iter(|| {
                let mut acc = 0u32;
                for v in &vectors {
                    acc ^= interp.run_seccomp(black_box(v)).unwrap_or(0);
                }
                acc
            })
        });
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{name}/deepest"), |b| {
            b.iter(|| interp.run_seccomp(black_box(&deepest)).unwrap_or(0))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_filters);
criterion_main!(benches);
