//! The fast engine: build time for Docker-sized filters, and evaluation
//! time next to `cbpf::Interp` on the inputs of SPEC §10 Tables B and D.
//!
//! IDs: `fast_build/<filter>` and `fast_eval/<filter>-<syscall>/<engine>`
//! with engine `fast` or `cbpf`.

// A bench panics on broken test data, like a test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::hint::black_box;

use cbpf::{raw, validate, Interp, Mode, Program, SeccompData};
use criterion::{criterion_group, criterion_main, Criterion};
use seccomp::fast::FastFilter;

const X86_64: u32 = 0xc000_003e;

fn load(name: &str) -> Program {
    let path = format!("{}/../../testdata/filters/{name}.bpf", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let insns = raw::decode(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
    validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("fast_build");
    for name in ["allow306_default", "allow306_opt2", "long_jumps_large", "seed_slow"] {
        let prog = load(name);
        group.bench_function(name, |b| b.iter(|| FastFilter::build(black_box(&prog))));
    }
    group.finish();
}

fn eval(c: &mut Criterion) {
    let mut group = c.benchmark_group("fast_eval");
    // getppid (110) at the front, middle and end of the 306-syscall filter;
    // long_jumps_large's chdir (80, argument checks) and close (3).
    let chdir_args = [42, 1, 7, 0, 0, 0];
    let cases: [(&str, &str, i32, [u64; 6]); 6] = [
        ("allow306_front", "getppid", 110, [0; 6]),
        ("allow306_middle", "getppid", 110, [0; 6]),
        ("allow306_end", "getppid", 110, [0; 6]),
        ("allow306_default", "getppid", 110, [0; 6]),
        ("long_jumps_large", "chdir", 80, chdir_args),
        ("long_jumps_large", "close", 3, [0; 6]),
    ];
    for (name, syscall, nr, args) in cases {
        let prog = load(name);
        let fast = FastFilter::build(&prog).unwrap_or_else(|e| panic!("{name}: {e}"));
        let interp = Interp::new(&prog);
        let data = SeccompData { nr, arch: X86_64, instruction_pointer: 0x7f00_0000_1000, args };
        let bytes = data.to_bytes();
        assert_eq!(fast.eval(&data), interp.run_seccomp(&bytes).unwrap(), "{name} {syscall}");
        group.bench_function(format!("{name}-{syscall}/fast"), |b| b.iter(|| fast.eval(black_box(&data))));
        group.bench_function(format!("{name}-{syscall}/cbpf"), |b| b.iter(|| interp.run_seccomp(black_box(&bytes))));
    }
    group.finish();
}

criterion_group!(benches, build, eval);
criterion_main!(benches);
