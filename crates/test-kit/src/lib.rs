//! bpfconv's test kit (not published): what every cross-crate suite and
//! every fuzz target shares, written once.
//!
//! ```text
//! corpus ──► testdata/filters (+ vectors), testdata/test_bpf/classic.json
//!            (feature `corpus`)
//! gen ─────► random VALID classic programs and their contexts (arbitrary
//!            bytes, or seeded through rng::SplitMix64)
//! gen_ebpf ► random general eBPF programs the kernel's verifier accepts, and
//!            their memory (`cargo xtask fuzz-kernel --mode ebpf`)
//! branch ──► inputs that reach every branch of a program
//! oracle ──► trace interpreter (reference) vs every engine, with step counts
//! pairs ───► programs equal by construction and single-instruction mutations (equiv's suites)
//! regions ─► brute force: stand-in inputs covering every class of comparison-only filters
//! socket ──► socket filetests, packet shapes and a seeded raw-filter generator
//! ```
//!
//! The libraries' own tests use only their library; suites that need
//! several crates live in `crates/integration` and use this crate; the fuzz
//! target bodies (`crates/fuzz-replay`) use it too.

pub mod branch;
pub mod capture;
pub mod corpus;
pub mod gen;
pub mod gen_ebpf;
pub mod input;
pub mod oracle;
pub mod pairs;
pub mod pool;
pub mod regions;
pub mod rng;
pub mod socket;

pub use branch::{branch_inputs, branch_packets, impossible_outcomes};

/// A program from bpf_asm text, validated in `mode`: the hand-written
/// filters of the suites. The error names the phase and where.
pub fn asm_program(text: &str, mode: cbpf::Mode) -> Result<cbpf::Program, String> {
    let insns = cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).map_err(|e| format!("parse: {e}"))?;
    cbpf::validate(&insns, mode).map_err(|e| format!("validate: {e}"))
}
pub use input::SocketInput;
pub use oracle::{check_seccomp, check_socket, Engine, Mismatch, Oracle, OracleError, OracleInput, Run, SetupError};
pub use rng::SplitMix64;
