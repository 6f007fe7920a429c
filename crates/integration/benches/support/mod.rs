//! Shared by the interpreter benches: the benchmark filters of
//! testdata/filters, converted for rbpf, with their kernel-checked vectors.

#![allow(dead_code, clippy::panic)]

use cbpf::{Interp, SeccompData};
use ebpf::Insn;
use test_kit::corpus::{Filter, Source};

/// Every filter of testdata/filters: libseccomp's and the hand-written
/// sandboxes (OpenSSH's and Chromium's rules).
pub const NAMES: &[&str] = &[
    "seed_fast",
    "seed_slow",
    "seed_slow_opt2",
    "long_jumps_short",
    "long_jumps_short_opt2",
    "long_jumps_large",
    "long_jumps_large_opt2",
    "allow306_default",
    "allow306_front",
    "allow306_middle",
    "allow306_end",
    "allow306_opt2",
    "sshd_like",
    "sshd_preauth",
    "sshd_preauth_i386",
    "chromium_baseline",
];

pub struct Case {
    pub interp: Interp,
    pub ebpf_bytes: Vec<u8>,
    /// (seccomp_data, expected action)
    pub vectors: Vec<([u8; 64], u32)>,
}

pub fn load(name: &str) -> Result<Case, String> {
    let filter = Filter::load(name)?;
    let converted = convert::convert(&filter.program, &Default::default()).map_err(|e| e.to_string())?;
    let ebpf_bytes = ebpf::encode(&converted.insns);
    let vectors = filter.vectors_from(Source::Kernel)?.iter().map(|v| (v.data.to_bytes(), v.action)).collect();
    Ok(Case { interp: Interp::new(&filter.program), ebpf_bytes, vectors })
}

pub fn executed(interp: &Interp, data: &[u8; 64]) -> usize {
    let mut n = 0;
    let _ = interp.trace_seccomp(data, |_| n += 1);
    n
}

/// `(filter, nr, args)`: the workloads of the published eBPF interpreter
/// tables (getppid on the seed and allow306 filters, brk on the short
/// long_jumps filters, `chdir(0, 1, 0)` on the large ones).
pub const WORKLOADS: [(&str, u32, [u64; 6]); 8] = [
    ("seed_fast", 110, [0; 6]),
    ("long_jumps_short", 12, [0; 6]),
    ("seed_slow", 110, [0; 6]),
    ("long_jumps_large", 80, [0, 1, 0, 0, 0, 0]),
    ("long_jumps_large_opt2", 80, [0, 1, 0, 0, 0, 0]),
    ("allow306_front", 110, [0; 6]),
    ("allow306_end", 110, [0; 6]),
    ("allow306_opt2", 110, [0; 6]),
];

/// The 64-byte `struct seccomp_data` of syscall `nr` on x86-64 with `args`.
pub fn seccomp_data(nr: u32, args: [u64; 6]) -> [u8; 64] {
    SeccompData { nr: nr as i32, arch: 0xc000_003e, instruction_pointer: 0, args }.to_bytes()
}

/// The testdata filter `name`, converted to eBPF.
pub fn converted(name: &str) -> Vec<Insn> {
    let prog = Filter::load(name).unwrap_or_else(|e| panic!("{e}")).program;
    convert::convert(&prog, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}")).insns
}
