//! Shared by the interpreter benches: the benchmark filters of
//! testdata/filters, converted for rbpf, with their kernel-checked vectors.

#![allow(dead_code)]

use cbpf::{raw, validate, Interp, Mode, SeccompData};
use serde_json::Value;

const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");

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
    let bytes = std::fs::read(format!("{FILTERS}/{name}.bpf")).map_err(|e| e.to_string())?;
    let insns = raw::decode(&bytes).map_err(|e| e.to_string())?;
    let prog = validate(&insns, Mode::Seccomp).map_err(|e| e.to_string())?;
    let converted = convert::convert(&prog, &Default::default()).map_err(|e| e.to_string())?;
    let ebpf_bytes = ebpf::encode(&converted.insns);
    let text = std::fs::read_to_string(format!("{FILTERS}/{name}.vectors.jsonl")).map_err(|e| e.to_string())?;
    let mut vectors = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let field = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(|| format!("bad {k} in {line}"));
        let mut args = [0u64; 6];
        let list = v.get("args").and_then(Value::as_array).ok_or("no args")?;
        for (slot, a) in args.iter_mut().zip(list) {
            *slot = a.as_u64().ok_or("bad arg")?;
        }
        let nr = v.get("nr").and_then(Value::as_i64).ok_or("bad nr")? as i32;
        let data = SeccompData { nr, arch: field("arch")? as u32, instruction_pointer: field("ip")?, args };
        vectors.push((data.to_bytes(), field("action")? as u32));
    }
    Ok(Case { interp: Interp::new(&prog), ebpf_bytes, vectors })
}

pub fn executed(interp: &Interp, data: &[u8; 64]) -> usize {
    let mut n = 0;
    let _ = interp.trace_seccomp(data, |_| n += 1);
    n
}
