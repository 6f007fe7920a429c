//! Reproduces the four published seccomp benchmarks (SPEC §10) on our engines
//! and on the running kernel.
//!
//! ```text
//! testdata/filters/*.bpf ─► filters::Filter (validate + convert, once)
//!                               │
//! tables::build(A|B|C|D) ─► rows (filter chain + syscall input)
//!                               │
//!        engines::ENGINES ──────┼──► measure::measure  (median ns per evaluation)
//!        kernel (x86_64 Linux) ─┘──► kernel::time_syscalls (median ns per syscall)
//!                               │
//!                     report (Markdown, JSON of FORMATS §5), plot (SVG)
//! ```
//!
//! Used by the `tables` binary (what `cargo xtask bench` runs, in release)
//! and by the criterion benches in `benches/`, which share the inputs so
//! both measure the same thing.

pub mod engines;
pub mod filters;
pub mod measure;
pub mod plot;
pub mod report;
pub mod run;
pub mod tables;

/// Why a benchmark could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    #[error("cannot read {path}: {why}")]
    Io { path: String, why: String },
    #[error("filter {name}: {why}")]
    Filter { name: String, why: String },
}
