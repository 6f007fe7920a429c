//! The engines, each over what [`crate::load`] checked and knowing
//! nothing of the others; [`crate::vm`] picks one per run.
//!
//! - `general`: every loaded program, on the pre-decoded steps of
//!   `crate::load::ir` (the kernel's `___bpf_prog_run()` and RFC 9669);
//! - `seccomp`: converted seccomp filters (the subset it recognises),
//!   registers in locals and compare chains;
//! - [`plain`]: the kernel's interpreter modelled for like-for-like cost
//!   (the `ebpf-plain` engine), on the raw instructions.

pub(crate) mod general;
pub mod plain;
pub(crate) mod seccomp;
