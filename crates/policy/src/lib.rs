//! A seccomp filter read back as the policy it enforces.
//!
//! ```text
//! cbpf::Program ─► seccomp::analysis (classes, explain_in: paths per number)
//!                    └─► read (arch views, numbers by name, the default)
//!                          ├─► rules (paths → 64-bit argument comparisons, merged)
//!                          ├─► text  (`analyze --explain`)
//!                          └─► oci   (`decompile`: the OCI `linux.seccomp` profile)
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

pub mod oci;
pub mod read;
pub mod rules;
pub mod set;
pub mod text;

pub use oci::{decompile, DecompileError, Profile};
pub use read::{read, Reading};
pub use text::explain_lines;
