//! criterion bench `validate`: decode + validate (seccomp mode) of a
//! 4096-instruction program from its raw bytes, with throughput per
//! instruction (criterion prints elements/s; ns per instruction is its
//! inverse). ID `validate/decode_validate_4096`.
//!
//! `cargo test` runs it once (criterion's test mode).

use std::hint::black_box;

use bpfconv_benches::filters::synthetic_allow_list;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench_validate(c: &mut Criterion) {
    let insns = synthetic_allow_list(4096);
    let bytes = cbpf::raw::encode(&insns);
    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Elements(insns.len() as u64));
    group.bench_function("decode_validate_4096", |b| {
        b.iter(|| {
            cbpf::raw::decode(black_box(&bytes))
                .ok()
                .map(|decoded| cbpf::validate(&decoded, cbpf::Mode::Seccomp).is_ok())
        })
    });
    group.finish();
}

criterion_group!(benches, bench_validate);
criterion_main!(benches);
