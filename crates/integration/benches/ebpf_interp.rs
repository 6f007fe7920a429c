#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Interpreter cost, side by side with rbpf 0.4's interpreter, on the
//! converted testdata/filters programs (each driven by the call that walks
//! the path the published tables use), plus the fusion on/off comparison on
//! synthetic compare chains.
//!
//! Group `vs_rbpf`, IDs `vs_rbpf/<filter>/<engine>` with engine `ours`
//! (superinstructions on, the default; `Vm::run_seccomp_uncounted`, what a
//! seccomp engine calls), `ours_counted` (the same through
//! `Vm::run_seccomp`, which also counts executed instructions),
//! `ours_plain` (superinstructions off) and `rbpf`
//! (`EbpfVmRaw::execute_program` on the same converted bytes, the 64-byte
//! `struct seccomp_data` as its memory). Before measuring, every program is
//! checked to give the same result on both engines, and the executed eBPF
//! instruction count of each run is printed, so criterion's time per run
//! converts to ns per executed instruction.
//!
//! `BENCH_FILTERS=seed_fast,allow306_end` restricts the filters.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use ebpf::{Helpers, Insn, LoadOptions, Program, Vm};

mod support;
use support::{converted, seccomp_data, WORKLOADS};

fn vs_rbpf(c: &mut Criterion) {
    let only = std::env::var("BENCH_FILTERS").ok();
    let mut g = c.benchmark_group("vs_rbpf");
    for (name, nr, args) in WORKLOADS {
        if only.as_deref().is_some_and(|o| !o.split(',').any(|n| n == name)) {
            continue;
        }
        let insns = converted(name);
        let bytes = ebpf::encode(&insns);
        let data = seccomp_data(nr, args);
        let fused = Program::load(&insns, &LoadOptions::default(), &Helpers::new()).unwrap();
        let plain_opts = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
        let plain = Program::load(&insns, &plain_opts, &Helpers::new()).unwrap();
        let rbpf_vm = rbpf::EbpfVmRaw::new(Some(&bytes)).unwrap();
        let mut vm = Vm::new();
        let ours = vm.run_seccomp(&fused, &data).unwrap();
        let executed = vm.executed();
        assert_eq!(vm.run_seccomp_uncounted(&fused, &data).unwrap(), ours);
        assert_eq!(vm.run_seccomp(&plain, &data).unwrap(), ours);
        assert_eq!(vm.executed(), executed);
        let mut mem = data;
        let theirs = rbpf_vm.execute_program(&mut mem).unwrap() as u32;
        assert_eq!(theirs, ours, "{name}: rbpf and ours disagree");
        println!("{name}: nr {nr}, result {ours:#x}, {} eBPF insns, {executed} executed per run", insns.len());
        g.bench_function(format!("{name}/ours"), |b| {
            b.iter(|| vm.run_seccomp_uncounted(black_box(&fused), black_box(&data)))
        });
        g.bench_function(format!("{name}/ours_counted"), |b| {
            b.iter(|| vm.run_seccomp(black_box(&fused), black_box(&data)))
        });
        g.bench_function(format!("{name}/ours_plain"), |b| {
            b.iter(|| vm.run_seccomp(black_box(&plain), black_box(&data)))
        });
        g.bench_function(format!("{name}/rbpf"), |b| {
            b.iter(|| {
                let mut mem = black_box(data);
                rbpf_vm.execute_program(&mut mem)
            })
        });
    }
    g.finish();
}

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

/// Prologue, arch check, `w0 = nr`, then `n` compares `if r0 == k goto
/// allow`; when `every` > 0, every `every`-th compare goes through
/// `w2 = k; if r0 == r2 goto` (the converter's form for k >= 0x80000000);
/// then `return KILL`; `allow: return ALLOW`.
fn chain(n: usize, every: usize) -> Vec<Insn> {
    let mut p = vec![
        i(0xac, 0, 0, 0, 0),
        i(0xac, 7, 7, 0, 0),
        i(0xbf, 6, 1, 0, 0),
        i(0x61, 0, 6, 4, 0),
        i(0xb4, 2, 0, 0, 0xc000_003eu32 as i32),
        i(0x1d, 0, 2, 2, 0),
        i(0xb4, 0, 0, 0, 0x8000_0000u32 as i32),
        i(0x95, 0, 0, 0, 0),
        i(0x61, 0, 6, 0, 0),
    ];
    let big = |k: usize| every > 0 && k % every == every - 1;
    let body_len: usize = (0..n).map(|k| if big(k) { 2 } else { 1 }).sum();
    let mut emitted = 0usize;
    for k in 0..n {
        let value = if big(k) { 0x8000_0000u32 | k as u32 } else { 1000 + k as u32 };
        if big(k) {
            p.push(i(0xb4, 2, 0, 0, value as i32));
            emitted += 1;
        }
        emitted += 1;
        let to_allow = (body_len - emitted + 2) as i16;
        p.push(if big(k) { i(0x1d, 0, 2, to_allow, 0) } else { i(0x15, 0, 0, to_allow, value as i32) });
    }
    p.extend([i(0xb4, 0, 0, 0, 0), i(0x95, 0, 0, 0, 0), i(0xb4, 0, 0, 0, 0x7fff_0000), i(0x95, 0, 0, 0, 0)]);
    p
}

fn fusion(c: &mut Criterion) {
    let mut g = c.benchmark_group("fusion");
    let fused = LoadOptions::default();
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    for (name, insns) in [("chain300_mixed_miss", chain(300, 10)), ("chain300_eq_miss", chain(300, 0))] {
        let data = seccomp_data(7, [0; 6]);
        for (mode, opts) in [("fused", &fused), ("plain", &plain)] {
            let prog = Program::load(&insns, opts, &Helpers::new()).unwrap();
            let mut vm = Vm::new();
            vm.run_seccomp(&prog, &data).unwrap();
            println!("{name}/{mode}: {} insns executed, {} superinstructions", vm.executed(), prog.fused_chains());
            g.bench_function(format!("{name}/{mode}"), |b| {
                b.iter(|| vm.run_seccomp(black_box(&prog), black_box(&data)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, vs_rbpf, fusion);
criterion_main!(benches);
