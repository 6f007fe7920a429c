//! criterion bench of the fast engine's two forms of its argument-check
//! trees, side by side: IDs `fast_trees/<filter>/native` (x86-64 code, the
//! `native` crate) and `fast_trees/<filter>/tables` (the same switches
//! walked as tables: `FastFilter::without_native`), on each testdata
//! filter's deepest kernel-checked vector, for the filters whose deepest
//! vector reaches a tree. Where the host refuses native code, the native
//! row is left out and says why.
//!
//! `cargo test` runs each bench once (criterion's test mode), so they cannot rot.

use std::hint::black_box;

use bpfconv_benches::filters::{load_vectors, with_vectors, Filter};
use criterion::{criterion_group, criterion_main, Criterion};
use seccomp::fast::FastFilter;

fn bench_fast_trees(c: &mut Criterion) {
    let mut group = c.benchmark_group("fast_trees");
    for name in with_vectors() {
        let (Ok(filter), Ok(vectors)) = (Filter::load(&name), load_vectors(&name)) else {
            eprintln!("skipping {name}: it does not load");
            continue;
        };
        let Ok(native) = FastFilter::build(&filter.program) else { continue };
        // The deepest vector: the most classic instructions executed.
        let path = |d: &cbpf::SeccompData| filter.path_length(&d.to_bytes());
        let Some(deepest) = vectors.iter().max_by_key(|d| path(d)).copied() else { continue };
        // Only where the deepest vector's entry is a tree do the forms differ.
        if native.switch(deepest.arch, deepest.nr as u32).is_none() {
            continue;
        }
        let tables = native.clone().without_native();
        let data = deepest.to_bytes();
        let want = filter.interp.run_seccomp(&data).unwrap_or(0);
        assert_eq!((native.eval_bytes(&data), tables.eval_bytes(&data)), (want, want), "{name}");
        if let Some(why) = native.native_refusal() {
            eprintln!("fast_trees/{name}/native: left out ({why})");
        } else {
            group.bench_function(format!("{name}/native"), |b| b.iter(|| native.eval_bytes(black_box(&data))));
        }
        group.bench_function(format!("{name}/tables"), |b| b.iter(|| tables.eval_bytes(black_box(&data))));
    }
    group.finish();
}

criterion_group!(benches, bench_fast_trees);
criterion_main!(benches);
