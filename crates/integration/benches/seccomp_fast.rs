//! The fast engine: build time for Docker-sized filters, and evaluation
//! time next to `cbpf::Interp` and rbpf's cranelift backend (running the
//! whole filter converted to eBPF) on the inputs of SPEC §10 Tables B and D.
//!
//! IDs: `fast_build/<filter>` and `fast_eval/<filter>-<syscall>/<engine>`
//! with engine `fast`, `cbpf` or `cranelift`.

// A bench panics on broken test data, like a test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::hint::black_box;

use cbpf::{Interp, Program, SeccompData};
use criterion::{criterion_group, criterion_main, Criterion};
use seccomp::fast::FastFilter;

const X86_64: u32 = 0xc000_003e;

mod support;
use support::NAMES;

fn load(name: &str) -> Program {
    test_kit::corpus::Filter::load(name).unwrap_or_else(|e| panic!("{e}")).program
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("fast_build");
    for name in ["allow306_default", "allow306_opt2", "long_jumps_large", "long_jumps_large_opt2", "seed_slow"] {
        let prog = load(name);
        group.bench_function(name, |b| b.iter(|| FastFilter::build(black_box(&prog))));
    }
    group.finish();
}

fn eval(c: &mut Criterion) {
    let mut group = c.benchmark_group("fast_eval");
    // getppid (110) at the front, middle and end of the 306-syscall filter,
    // brk (12), close (3); chdir (80) with long_jumps' argument checks:
    // chdir(0, 1, 0) matches the first rule after walking none, chdir(42,
    // 1, 7) the 43rd.
    let cases: [(&str, i32, [u64; 6]); 5] = [
        ("getppid", 110, [0; 6]),
        ("brk", 12, [0; 6]),
        ("close", 3, [0; 6]),
        ("chdir", 80, [0, 1, 0, 0, 0, 0]),
        ("chdir42", 80, [42, 1, 7, 0, 0, 0]),
    ];
    for &name in NAMES {
        let prog = load(name);
        let fast = FastFilter::build(&prog).unwrap_or_else(|e| panic!("{name}: {e}"));
        let interp = Interp::new(&prog);
        let code = ebpf::encode(&convert::convert(&prog, &Default::default()).unwrap().insns);
        let mut vm = rbpf::EbpfVmRaw::new(Some(&code)).unwrap();
        let cranelift = vm.cranelift_compile().is_ok();
        for (syscall, nr, args) in cases {
            if syscall == "chdir42" && !name.starts_with("long_jumps") {
                continue;
            }
            let data = SeccompData { nr, arch: X86_64, instruction_pointer: 0x7f00_0000_1000, args };
            let bytes = data.to_bytes();
            let want = interp.run_seccomp(&bytes).unwrap();
            assert_eq!(fast.eval(&data), want, "{name} {syscall}");
            group.bench_function(format!("{name}-{syscall}/fast"), |b| b.iter(|| fast.eval(black_box(&data))));
            group
                .bench_function(format!("{name}-{syscall}/cbpf"), |b| b.iter(|| interp.run_seccomp(black_box(&bytes))));
            if cranelift {
                let mut mem = bytes;
                assert_eq!(vm.execute_program_cranelift(&mut mem).unwrap() as u32, want, "{name} {syscall}");
                group.bench_function(format!("{name}-{syscall}/cranelift"), |b| {
                    b.iter(|| {
                        let mut mem = black_box(bytes);
                        vm.execute_program_cranelift(&mut mem)
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, build, eval);
criterion_main!(benches);
