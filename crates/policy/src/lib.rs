//! Seccomp profiles in both directions: a filter read back as the policy
//! it enforces, and a profile (OCI, Docker, seccompiler) compiled into a
//! filter proved to mean it.
//!
//! ```text
//! cbpf::Program ─► seccomp::analysis (classes, explain_in: paths per number)
//!                    └─► read (arch views, numbers by name, the default)
//!                          ├─► rules (paths → 64-bit argument comparisons, merged)
//!                          ├─► text  (`analyze --explain`)
//!                          └─► oci   (the OCI `linux.seccomp` profile)
//!                                └─► decompile (held to runc's multiplexing of socket/IPC calls)
//! profile JSON ─► profile (its Meaning: the documented reference; eval; reference program)
//!                    └─► compile (optimize's layout, cache check, proved by equiv)
//! abi: which ABIs pass 64-bit arguments, where each word sits (below both)
//! ```
//!
//! Nothing here interprets classic programs: the paths and their
//! conditions come from [`seccomp::analysis::explain_in`], which runs the
//! one abstract domain ([`seccomp::domain`]); this crate only reads them.
//!
//! ```
//! let insns = cbpf::raw::decode(&std::fs::read(concat!(
//!     env!("CARGO_MANIFEST_DIR"), "/../../testdata/profiles/docker_like.bpf")).unwrap()).unwrap();
//! let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp).unwrap();
//! let reading = policy::read(&prog, &mut seccomp::analysis::Budget::default()).unwrap();
//! let profile = policy::decompile(&reading).unwrap();
//! assert_eq!(profile.default_action, "SCMP_ACT_ERRNO");
//! ```

pub mod abi;
pub mod compile;
pub mod decompile;
pub mod oci;
pub mod profile;
pub mod read;
pub mod rules;
pub mod set;
pub mod text;

pub use decompile::{decompile, decompile_with};
pub use oci::{DecompileError, Decompiled, Profile};
pub use read::{read, Reading};
pub use text::explain_lines;
