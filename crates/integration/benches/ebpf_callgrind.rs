#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Instruction counts per run, the noise-free companion of `ebpf_interp.rs`:
//! the same converted filters and workloads, each engine's runs inside one
//! `#[inline(never)]` function (`measure`) so callgrind can count only them.
//!
//! ```text
//! cargo bench -p bpfconv-integration --bench ebpf_callgrind --no-run   # build (bench profile)
//! valgrind --tool=callgrind --toggle-collect='ebpf_callgrind::measure' \
//!     --callgrind-out-file=/dev/null target/release/deps/ebpf_callgrind-HASH FILTER ENGINE RUNS
//! ```
//!
//! `ENGINE` is `ours` (`Vm::run_seccomp_uncounted`, what a seccomp engine
//! calls), `ours_counted` (`Vm::run_seccomp`, which also counts executed
//! instructions), `ours_plain` (no superinstructions) or `rbpf`;
//! callgrind's `Collected` total divided by `RUNS` is the x86 instructions
//! per run. `ebpf_callgrind-HASH FILTER ENGINE RUNS time` (no valgrind) prints
//! the best wall-clock time per run over 200 batches of `RUNS` runs: a
//! noise-resistant companion to criterion's medians on a shared machine. Without arguments (as `cargo bench` runs it) it runs every
//! workload once on every engine and checks they agree.

use ebpf::{Helpers, Insn, LoadOptions, Program, Vm};
use std::hint::black_box;

mod support;
use support::{converted, seccomp_data, WORKLOADS};

enum Engine<'a> {
    /// The program, the VM, and whether runs count executed instructions.
    Ours(Box<(Program, Vm)>, bool),
    Rbpf(Box<rbpf::EbpfVmRaw<'a>>),
}

impl Engine<'_> {
    fn run(&mut self, data: &[u8; 64]) -> u32 {
        match self {
            Engine::Ours(ours, counted) => {
                let (prog, vm) = &mut **ours;
                if *counted {
                    vm.run_seccomp(prog, data).unwrap()
                } else {
                    vm.run_seccomp_uncounted(prog, data).unwrap()
                }
            }
            Engine::Rbpf(vm) => {
                let mut mem = *data;
                vm.execute_program(&mut mem).unwrap() as u32
            }
        }
    }
}

/// The measured runs (callgrind's `--toggle-collect` target).
#[inline(never)]
fn measure(engine: &mut Engine<'_>, data: &[u8; 64], runs: u64) -> u32 {
    let mut acc = 0u32;
    for _ in 0..runs {
        acc ^= engine.run(black_box(data));
    }
    acc
}

fn engine<'a>(kind: &str, insns: &[Insn], bytes: &'a [u8]) -> Engine<'a> {
    let plain = LoadOptions { no_superinstructions: true, ..LoadOptions::default() };
    let fused = || Box::new((Program::load(insns, &LoadOptions::default(), &Helpers::new()).unwrap(), Vm::new()));
    match kind {
        "ours" => Engine::Ours(fused(), false),
        "ours_counted" => Engine::Ours(fused(), true),
        "ours_plain" => {
            Engine::Ours(Box::new((Program::load(insns, &plain, &Helpers::new()).unwrap(), Vm::new())), true)
        }
        "rbpf" => Engine::Rbpf(Box::new(rbpf::EbpfVmRaw::new(Some(bytes)).unwrap())),
        other => panic!("unknown engine {other}: ours, ours_counted, ours_plain or rbpf"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if let [filter, kind, runs, time] = &args[..] {
        // Wall-clock companion on a shared machine: the fastest of 200
        // batches of RUNS runs (preemption only ever adds time).
        assert_eq!(time, "time", "fourth argument: `time`");
        let (_, nr, a) = WORKLOADS.iter().find(|w| w.0 == filter).expect("unknown filter");
        let insns = converted(filter);
        let bytes = ebpf::encode(&insns);
        let mut e = engine(kind, &insns, &bytes);
        let data = seccomp_data(*nr, *a);
        let runs: u64 = runs.parse().unwrap();
        let best = (0..200)
            .map(|_| {
                let t = std::time::Instant::now();
                black_box(measure(&mut e, &data, runs));
                t.elapsed().as_secs_f64() * 1e9 / runs as f64
            })
            .fold(f64::INFINITY, f64::min);
        println!("{filter}/{kind}: {best:.1} ns per run (best of 200 batches of {runs})");
        return;
    }
    if let [filter, kind, runs] = &args[..] {
        let (_, nr, a) = WORKLOADS.iter().find(|w| w.0 == filter).expect("unknown filter");
        let insns = converted(filter);
        let bytes = ebpf::encode(&insns);
        let mut e = engine(kind, &insns, &bytes);
        let data = seccomp_data(*nr, *a);
        println!("{filter}/{kind}: {:#x}", measure(&mut e, &data, runs.parse().unwrap()));
        return;
    }
    for (name, nr, a) in WORKLOADS {
        let insns = converted(name);
        let bytes = ebpf::encode(&insns);
        let data = seccomp_data(nr, a);
        let results: Vec<u32> = ["ours", "ours_counted", "ours_plain", "rbpf"]
            .iter()
            .map(|k| measure(&mut engine(k, &insns, &bytes), &data, 1))
            .collect();
        assert!(results.iter().all(|r| *r == results[0]), "{name}: engines disagree: {results:x?}");
    }
    println!("all workloads agree on every engine; pass FILTER ENGINE RUNS to measure one");
}
