//! Shared by the interpreter benches: the benchmark filters of
//! testdata/filters, converted for rbpf, with their kernel-checked vectors.

#![allow(dead_code)]

use cbpf::Interp;
use test_kit::corpus::{Filter, Source};

/// Every benchmark filter of testdata/filters.
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
