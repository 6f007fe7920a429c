//! The bodies of bpfconv's fuzz targets, shared by two drivers:
//!
//! ```text
//! fuzz/fuzz_targets/<name>.rs  (cargo +nightly fuzz run <name>)  ─┐
//!                                                                  ├─► fuzz_replay::<name>(&[u8])
//! crates/fuzz-replay/tests/replay.rs (cargo test, stable)  ──────┘     panics iff a property fails
//! ```
//!
//! Each target is a plain function from bytes to `()` that panics (with a
//! message naming the property) when the code under test misbehaves, so a
//! crash found by libFuzzer replays on stable Rust from the very same file:
//! `tests/replay.rs` runs every file under `fuzz/regressions/<target>/` and
//! `fuzz/seeds/<target>/`.
//!
//! | target | input | property |
//! |---|---|---|
//! | [`decode_validate`] | raw `sock_filter` bytes | decode and validate (both modes) never panic; what validates converts, loads and agrees with the classic interpreter on a fixed context |
//! | [`text_parse`] | text | every cBPF text parser, the seccomp assembler and the eBPF assembler never panic; what parses round-trips through the printers |
//! | [`convert_equiv`] | a generated valid program + contexts ([`gen`]) | the oracle ([`test_kit::oracle`]): the classic trace interpreter == every engine (optimised classic interpreter, converted eBPF with and without superinstructions with equal step counts, and for seccomp the fast engine and rbpf's interpreter); the legacy socket shape too |
//! | [`ebpf_exec`] | raw eBPF bytes | load + run with a step budget never panics or hangs; memory outside the regions is never touched; superinstructions change nothing; disassembly round-trips |
//! | [`analysis_sound`] | a generated valid seccomp program | every constant action the analysis promises holds on random arguments |
//! | [`fast_equiv`] | a generated valid seccomp program + contexts | the fast engine builds without whole-filter fallbacks and returns the classic interpreter's answer |
//! | [`equiv`](fn@equiv) | a generated valid seccomp program and a second one (generated, mutated, or equal by construction) | `equiv::check` says equal only where no branch-reaching or random input tells them apart on any engine, differ only with a counterexample every engine confirms, and never differ on copies equal by construction (undecided within small limits is allowed) |
//! | [`optimize`](fn@optimize) | a generated valid seccomp program | `optimize::optimize` refuses only on a budget or an undecided proof; its output validates again, is no longer than the input, keeps every kernel-cached ALLOW of the input, and returns the input's value on branch-reaching, generated and brute-force region inputs |
//! | [`compile`](fn@compile) | a generated profile (OCI, Docker, seccompiler JSON), or text | reading never panics; `policy::compile` refuses only on a size or an undecided proof; its filter validates, returns the profile's value and the reference program's on inputs from the profile's constants, and keeps every always-allowed number cached; a profile `decompile` gives for it means the same |
//! | [`bounded_work`] | a blow-up shape ([`blowup`]) or a generated valid seccomp program | every analysis and the fast build end within one run budget (an answer or the budget error); the fast engine still agrees with the classic interpreter; run under the xtask's memory and time limits |
//!
//! The functions take `&[u8]` rather than `arbitrary` types so a regression
//! file is exactly the bytes libFuzzer wrote.

pub mod blowup;
pub mod profiles;
/// The program and context generator, shared with the seeded suites.
pub use test_kit::gen;
mod targets;

pub use profiles::compile;
pub use targets::{
    analysis_sound, bounded_work, convert_equiv, decode_validate, ebpf_exec, equiv, fast_equiv, optimize, text_parse,
};

/// A fuzz target: its name (also its directory under `fuzz/regressions/`
/// and `fuzz/seeds/`) and its body.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order the xtask runs them.
pub const TARGETS: [Target; 10] = [
    Target { name: "decode_validate", run: decode_validate },
    Target { name: "text_parse", run: text_parse },
    Target { name: "convert_equiv", run: convert_equiv },
    Target { name: "ebpf_exec", run: ebpf_exec },
    Target { name: "analysis_sound", run: analysis_sound },
    Target { name: "fast_equiv", run: fast_equiv },
    Target { name: "bounded_work", run: bounded_work },
    Target { name: "equiv", run: equiv },
    Target { name: "optimize", run: optimize },
    Target { name: "compile", run: compile },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|t| t.name == name)
}
