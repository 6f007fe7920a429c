#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Interpreter cost on converted-seccomp-style filters: the SPEC §4.8
//! program and a generated 300-compare chain, with and without compare-chain
//! superinstructions. Prints executed instructions per run so criterion's
//! time per run converts to ns per instruction.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use ebpf::{Helpers, Insn, LoadOptions, Program, Vm};

fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

/// SPEC §4.8: arch check then allow (11 insns).
fn spec_4_8() -> Vec<Insn> {
    vec![
        i(0xac, 0, 0, 0, 0),
        i(0xac, 7, 7, 0, 0),
        i(0xbf, 6, 1, 0, 0),
        i(0x61, 0, 6, 4, 0),
        i(0xb4, 2, 0, 0, 0xc000_003eu32 as i32),
        i(0x1d, 0, 2, 2, 0),
        i(0xb4, 0, 0, 0, 0x8000_0000u32 as i32),
        i(0x95, 0, 0, 0, 0),
        i(0x61, 0, 6, 0, 0),
        i(0xb4, 0, 0, 0, 0x7fff_0000),
        i(0x95, 0, 0, 0, 0),
    ]
}

/// Prologue, arch check, `w0 = nr`, then `n` compares `if r0 == k goto
/// allow`; when `every` > 0, every `every`-th compare goes through
/// `w2 = k; if r0 == r2 goto` (the converter's form for k >= 0x80000000);
/// then `return KILL`; `allow: return ALLOW`.
fn chain(n: usize, every: usize) -> Vec<Insn> {
    let mut p = spec_4_8();
    p.truncate(8);
    p.push(i(0x61, 0, 6, 0, 0));
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

fn seccomp_data(nr: u32) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[0..4].copy_from_slice(&nr.to_le_bytes());
    d[4..8].copy_from_slice(&0xc000_003eu32.to_le_bytes());
    d
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("interp");
    let fused = LoadOptions::default();
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let cases: [(&str, Vec<Insn>, u32); 3] = [
        ("spec_4_8", spec_4_8(), 0),
        ("chain300_mixed_miss", chain(300, 10), 7),
        ("chain300_eq_miss", chain(300, 0), 7),
    ];
    for (name, insns, nr) in cases {
        for (mode, opts) in [("fused", &fused), ("plain", &plain)] {
            let prog = Program::load(&insns, opts, &Helpers::new()).unwrap();
            let data = seccomp_data(nr);
            let mut vm = Vm::new();
            let r = vm.run_seccomp(&prog, &data).unwrap();
            println!(
                "{name}/{mode}: result {r:#x}, {} insns executed, {} fused chain starts",
                vm.executed(),
                prog.fused_chains()
            );
            g.bench_function(format!("{name}/{mode}"), |b| {
                b.iter(|| vm.run_seccomp(black_box(&prog), black_box(&data)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
