//! The benchmark filters: the libseccomp-generated filters of
//! `testdata/filters/` and the two tiny filters of the kernel's
//! `seccomp_benchmark`, each validated and converted once, outside any timed
//! code.

use std::path::PathBuf;

use cbpf::opcode::{LD_IMM, LD_W_ABS, RET_K};
use cbpf::{Insn, Interp, Mode, Op, Program, Size};

use crate::BenchError;

/// `AUDIT_ARCH_X86_64`: every benchmark input is a native x86_64 call.
pub use cbpf::uapi::audit::AUDIT_ARCH_X86_64;
/// `offsetof(struct seccomp_data, args[0])` (its low half on x86_64).
pub use cbpf::uapi::seccomp::OFFSET_ARGS as OFFSET_ARG0;
/// `offsetof(struct seccomp_data, nr)`.
pub use cbpf::uapi::seccomp::OFFSET_NR;
/// `SECCOMP_RET_ALLOW`.
pub use cbpf::uapi::seccomp::SECCOMP_RET_ALLOW as RET_ALLOW;

/// Where the benchmark filters live.
pub fn testdata_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/filters"))
}

/// Reads `testdata/filters/NAME.bpf` (raw `struct sock_filter` records).
pub fn load_raw(name: &str) -> Result<Vec<Insn>, BenchError> {
    let path = testdata_dir().join(format!("{name}.bpf"));
    let bytes =
        std::fs::read(&path).map_err(|e| BenchError::Io { path: path.display().to_string(), why: e.to_string() })?;
    cbpf::raw::decode(&bytes).map_err(|e| BenchError::Filter { name: name.to_string(), why: e.to_string() })
}

/// Reads `testdata/profiles/NAME.bpf` (the Docker-sized libseccomp pair).
pub fn load_profile(name: &str) -> Result<Vec<Insn>, BenchError> {
    load_profile_endian(name, cbpf::raw::Endian::Little)
}

/// [`load_profile`] for a filter exported with records in `endian` byte
/// order (`s390x.bpf`: big).
pub fn load_profile_endian(name: &str, endian: cbpf::raw::Endian) -> Result<Vec<Insn>, BenchError> {
    let path = testdata_dir().join(format!("../profiles/{name}.bpf"));
    let bytes =
        std::fs::read(&path).map_err(|e| BenchError::Io { path: path.display().to_string(), why: e.to_string() })?;
    cbpf::raw::decode_endian(&bytes, endian)
        .map_err(|e| BenchError::Filter { name: name.to_string(), why: e.to_string() })
}

/// The filters of testdata/filters with kernel-checked vectors
/// (`NAME.vectors.jsonl`), by name, sorted.
pub fn with_vectors() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(testdata_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.strip_suffix(".vectors.jsonl").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Reads the `struct seccomp_data` inputs of `NAME.vectors.jsonl`, from
/// testdata/filters or, failing that, testdata/profiles.
pub fn load_vectors(name: &str) -> Result<Vec<cbpf::SeccompData>, BenchError> {
    let file = format!("{name}.vectors.jsonl");
    let mut path = testdata_dir().join(&file);
    if !path.exists() {
        path = testdata_dir().join("../profiles").join(&file);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| BenchError::Io { path: path.display().to_string(), why: e.to_string() })?;
    let vectors = engine::vectors::parse(&text).map_err(|e| BenchError::Filter { name: file, why: e.to_string() })?;
    Ok(vectors.into_iter().map(|v| v.data).collect())
}

/// `seccomp_benchmark`'s "bitmap" filter, `ld [0]; ret ALLOW`: constant-ALLOW
/// for every number, so the kernel's action cache covers it.
pub fn bitmap_filter() -> Vec<Insn> {
    vec![Insn::stmt(LD_W_ABS, OFFSET_NR), Insn::stmt(RET_K, RET_ALLOW)]
}

/// `seccomp_benchmark`'s "full" filter, `ld [16]; ret ALLOW`: it reads an
/// argument, which the kernel's cache emulator cannot follow, so it always runs.
pub fn full_filter() -> Vec<Insn> {
    vec![Insn::stmt(LD_W_ABS, OFFSET_ARG0), Insn::stmt(RET_K, RET_ALLOW)]
}

/// The same filter, made to run on every call under the kernel's
/// constant-action cache.
///
/// Prepends `ld [16]` (an argument load, which `seccomp_is_const_allow()`
/// gives up on, so no number is cached). Jumps are relative, so they keep
/// their targets. The original program starts with `A = 0`; when its first
/// instruction does not overwrite A with a load that ignores A, `ld #0` is
/// prepended as well to restore that. Returns `None` when the result would
/// exceed `BPF_MAXINSNS`.
pub fn forced(insns: &[Insn]) -> Option<Vec<Insn>> {
    let first_overwrites_a =
        insns.first().is_some_and(|i| matches!(i.op(), Some(Op::LdAbs { size: Size::W, .. } | Op::LdImm { .. })));
    let mut out = vec![Insn::stmt(LD_W_ABS, OFFSET_ARG0)];
    if !first_overwrites_a {
        out.push(Insn::stmt(LD_IMM, 0));
    }
    out.extend_from_slice(insns);
    (out.len() <= cbpf::opcode::BPF_MAXINSNS).then_some(out)
}

/// `getppid` on x86_64: the call the synthetic allow-lists check last.
pub const NR_GETPPID: u32 = 110;

/// A synthetic seccomp allow-list of exactly `len` instructions (at least
/// 7): arch check, then `jeq #nr; ret ALLOW` pairs for nr = 0, 1, 2, ...
/// (skipping getppid), getppid's pair last, and a default KILL. getppid
/// walks every comparison: its path is about half the filter's length (the
/// `ret ALLOW` of each pair is jumped over).
/// Stands in for filters of any length up to `BPF_MAXINSNS` (4096) in the
/// length sweep and the conversion and validation benches.
pub fn synthetic_allow_list(len: usize) -> Vec<Insn> {
    use cbpf::opcode::JMP_JEQ_K;
    use cbpf::uapi::seccomp::SECCOMP_RET_KILL_PROCESS as RET_KILL_PROCESS;
    let len = len.max(7);
    let mut out = vec![
        Insn::stmt(LD_W_ABS, 4),
        Insn::jump(JMP_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        Insn::stmt(RET_K, RET_KILL_PROCESS),
        Insn::stmt(LD_W_ABS, OFFSET_NR),
    ];
    let pairs = (len - out.len() - 1) / 2;
    let others = (0..).filter(|&nr| nr != NR_GETPPID).take(pairs - 1);
    for nr in others.chain([NR_GETPPID]) {
        out.push(Insn::jump(JMP_JEQ_K, nr, 0, 1));
        out.push(Insn::stmt(RET_K, RET_ALLOW));
    }
    // An odd remainder: one more (harmless) load of nr.
    if out.len() + 1 < len {
        out.push(Insn::stmt(LD_W_ABS, OFFSET_NR));
    }
    out.push(Insn::stmt(RET_K, RET_KILL_PROCESS));
    out
}

/// A filter validated for seccomp and converted to eBPF, ready for every engine.
#[derive(Debug, Clone)]
pub struct Filter {
    /// Name shown in tables (`seed_fast`, `bitmap`, `seed_fast+ld16`, ...).
    pub name: String,
    /// The validated program (`original()` = what a process installs).
    pub program: Program,
    /// The pre-decoded classic interpreter.
    pub interp: Interp,
    /// The converted eBPF, as `bpf_convert_filter()` builds it.
    pub ebpf: Vec<ebpf::Insn>,
    /// The same as raw `struct bpf_insn` bytes (for rbpf).
    pub ebpf_bytes: Vec<u8>,
    /// The converted program loaded for our eBPF interpreter.
    pub ebpf_program: ebpf::Program,
}

impl Filter {
    /// Validates (seccomp mode) and converts `insns`.
    pub fn new(name: &str, insns: &[Insn]) -> Result<Filter, BenchError> {
        let fail = |why: String| BenchError::Filter { name: name.to_string(), why };
        let program = cbpf::validate(insns, Mode::Seccomp).map_err(|e| fail(e.to_string()))?;
        let converted = convert::convert(&program, &convert::Options::kernel()).map_err(|e| fail(e.to_string()))?;
        let ebpf_program = ebpf::Program::load(&converted.insns, &ebpf::LoadOptions::default(), &ebpf::Helpers::new())
            .map_err(|e| fail(e.to_string()))?;
        Ok(Filter {
            name: name.to_string(),
            interp: Interp::new(&program),
            ebpf_bytes: ebpf::encode(&converted.insns),
            ebpf: converted.insns,
            ebpf_program,
            program,
        })
    }

    /// Loads `testdata/filters/NAME.bpf` and prepares it.
    pub fn load(name: &str) -> Result<Filter, BenchError> {
        Filter::new(name, &load_raw(name)?)
    }

    /// The instructions a process installs (unrewritten).
    pub fn original(&self) -> &[Insn] {
        self.program.original()
    }

    /// Number of classic instructions.
    pub fn len(&self) -> usize {
        self.program.len()
    }

    /// Always false: a validated program is never empty.
    pub fn is_empty(&self) -> bool {
        self.program.is_empty()
    }

    /// The classic instructions executed on `data` (the path length).
    pub fn path_length(&self, data: &[u8; 64]) -> usize {
        let mut steps = 0;
        // A seccomp-mode program always runs on a seccomp context.
        let _ = self.interp.trace_seccomp(data, |_| steps += 1);
        steps
    }

    /// Does the kernel's constant-action cache skip this filter for `nr`
    /// (x86_64)? Then the kernel never runs it for that call.
    pub fn kernel_caches(&self, nr: u32) -> bool {
        seccomp::cache::seccomp_is_const_allow(self.original(), nr, AUDIT_ARCH_X86_64, AUDIT_ARCH_X86_64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_filters_are_not_cached_and_keep_their_results() {
        let data = cbpf::SeccompData { nr: 110, arch: AUDIT_ARCH_X86_64, ..Default::default() }.to_bytes();
        for name in ["seed_fast", "seed_slow", "allow306_end", "allow306_opt2"] {
            let filter = Filter::load(name).unwrap();
            assert!(filter.kernel_caches(110), "{name}: getppid should be constant-allow as written");
            let forced = Filter::new("forced", &forced(filter.original()).unwrap()).unwrap();
            assert!(!forced.kernel_caches(110), "{name}: forced variant is still cached");
            assert_eq!(forced.interp.run_seccomp(&data).unwrap(), filter.interp.run_seccomp(&data).unwrap());
            assert_eq!(forced.path_length(&data), filter.path_length(&data) + forced.len() - filter.len());
        }
    }

    #[test]
    fn forced_restores_a_when_the_filter_reads_it_first() {
        // `ret a` as the first instruction returns the initial A (0).
        let ret_a = [Insn::stmt(cbpf::opcode::RET_A, 0)];
        let forced = forced(&ret_a).unwrap();
        assert_eq!(forced.len(), 3);
        let filter = Filter::new("forced", &forced).unwrap();
        let data = cbpf::SeccompData { nr: 1, args: [5, 0, 0, 0, 0, 0], ..Default::default() }.to_bytes();
        assert_eq!(filter.interp.run_seccomp(&data).unwrap(), 0);
    }

    #[test]
    fn synthetic_allow_lists_have_the_requested_length_and_validate() {
        for len in [7, 8, 316, 4095, 4096] {
            let insns = synthetic_allow_list(len);
            assert_eq!(insns.len(), len);
            let filter = Filter::new("synthetic", &insns).unwrap();
            let call = |nr| cbpf::SeccompData { nr, arch: AUDIT_ARCH_X86_64, ..Default::default() }.to_bytes();
            assert_eq!(filter.interp.run_seccomp(&call(110)).unwrap(), RET_ALLOW);
            assert_eq!(filter.path_length(&call(110)), (len - 5) / 2 + 4);
            let zero_allowed = if len >= 9 { RET_ALLOW } else { 0x8000_0000 };
            assert_eq!(filter.interp.run_seccomp(&call(0)).unwrap(), zero_allowed);
            assert_eq!(filter.interp.run_seccomp(&call(5000)).unwrap(), 0x8000_0000);
        }
    }

    #[test]
    fn seccomp_benchmark_filters_cache_as_the_kernel_does() {
        let bitmap = Filter::new("bitmap", &bitmap_filter()).unwrap();
        let full = Filter::new("full", &full_filter()).unwrap();
        assert!(bitmap.kernel_caches(39));
        assert!(!full.kernel_caches(39));
    }
}
