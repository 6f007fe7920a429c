//! bpfconv's cross-crate suites (not published). Each library's own tests
//! use only that library and the crates below it; a suite that needs more
//! lives here, as a test or bench of this package:
//!
//! | suite | what |
//! |---|---|
//! | `tests/filetests.rs` | converter filetests, `testdata/convert/` (`UPDATE_EXPECT=1` blesses) |
//! | `tests/oracle_props.rs` | the oracle on generated and real programs |
//! | `tests/test_bpf_classic.rs` | lib/test_bpf.c's classic tests: the classic interpreters and the converted program |
//! | `tests/engine_filters.rs` | every engine of `engine` on every testdata/filters vector |
//! | `tests/convert_filters.rs`, `tests/ebpf_interp_filters.rs`, `tests/ebpf_seccomp_exec.rs` | every converted testdata/filters program on every vector (rbpf; fused and plain interpreter; the seccomp executor) |
//! | `tests/conformance_kernel.rs` | the bpf_conformance suite run by the kernel (`kernel::bpf::memory`) and our interpreter; the verifier's verdicts pinned in testdata/bpf_conformance/kernel-verdicts.txt (`UPDATE_EXPECT=1` blesses) |
//! | `tests/fuzz_kernel_replay.rs` | every saved `cargo xtask fuzz-kernel` reproducer (`testdata/fuzz-kernel/`) |
//! | `benches/` | interpreter benches comparing crates (and rbpf) |
//!
//! Its library holds what the kernel judge (`cargo xtask fuzz-kernel`, the
//! `fuzz-kernel` binary of this package) and its replay share:
//! [`fuzz_kernel`].
//!
//! The shared corpus reader, program generator, branch inputs and oracle are
//! in `bpfconv-test-kit`.

pub mod fuzz_kernel;
