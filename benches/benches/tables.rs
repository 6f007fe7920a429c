//! criterion benches of the four published tables: one group per table,
//! IDs `<table>/<row>/<engine>` (e.g. `b/large/ebpf`), the same rows and
//! inputs as `cargo xtask bench` (see `bpfconv_benches::tables`). The kernel
//! column is left to `cargo xtask bench`: it forks and installs filters.
//!
//! `cargo test` runs each bench once (criterion's test mode), so they cannot rot.

use std::hint::black_box;

use bpfconv_benches::engines::ENGINES;
use bpfconv_benches::tables::{self, TableId};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn bench_tables(c: &mut Criterion) {
    for id in TableId::ALL {
        let table = match tables::build(id) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipping table {}: {e}", id.letter());
                continue;
            }
        };
        let mut group = c.benchmark_group(id.slug());
        for row in &table.rows {
            let expected = row.expected();
            for engine in ENGINES {
                // Engines that cannot run a row (JIT page too small, no fast
                // engine yet) or rows with nothing to evaluate are skipped.
                let Ok(Some(mut runner)) = row.prepare(engine) else {
                    continue;
                };
                let mut data = row.syscall.data();
                assert_eq!(runner.run(&mut data), Ok(expected), "{}/{}/{}", id.slug(), row.id, engine.name);
                group.bench_function(BenchmarkId::new(row.id, engine.name), |b| {
                    b.iter(|| runner.run(black_box(&mut data)))
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench_tables);
criterion_main!(benches);
