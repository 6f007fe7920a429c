//! criterion bench `convert`: `convert::convert` (the kernel's
//! `bpf_convert_filter()`) on 9-, 316- and 4096-instruction seccomp filters,
//! with throughput per classic instruction. IDs `convert/<filter>`.
//!
//! `cargo test` runs each bench once (criterion's test mode).

use std::hint::black_box;

use bpfconv_benches::filters::{load_raw, synthetic_allow_list};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn bench_convert(c: &mut Criterion) {
    let inputs = [
        ("seed_fast", load_raw("seed_fast")),
        ("allow306_end", load_raw("allow306_end")),
        ("synthetic4096", Ok(synthetic_allow_list(4096))),
    ];
    let mut group = c.benchmark_group("convert");
    for (name, insns) in inputs {
        let program = match insns
            .map_err(|e| e.to_string())
            .and_then(|i| cbpf::validate(&i, cbpf::Mode::Seccomp).map_err(|e| e.to_string()))
        {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skipping {name}: {e}");
                continue;
            }
        };
        let options = convert::Options::kernel();
        group.throughput(Throughput::Elements(program.len() as u64));
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| convert::convert(black_box(&program), &options))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_convert);
criterion_main!(benches);
