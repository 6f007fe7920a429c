//! Kernel-exact conversion of classic BPF to eBPF.
//!
//! ```text
//! cbpf::validate ─► Program ─► convert() ─► Converted { insns, pc_map, stack_depth, seen_ld_abs }
//!                                              └─► side_by_side(): classic + eBPF listing
//! ```
//!
//! [`convert`] mirrors `bpf_migrate_filter()` / `bpf_convert_filter()` of
//! net/core/filter.c (Linux 6.18) instruction for instruction, so the bytes
//! can be diffed against what the kernel runs. The only crate that sees both
//! instruction sets. Socket filters read our documented context layout
//! ([`ebpf::skb`]) instead of a kernel build's `struct sk_buff`.
//!
//! ```
//! use cbpf::{validate, Insn, Mode};
//! let prog = validate(&[Insn::stmt(0x20, 0), Insn::stmt(0x06, 0x7fff0000)], Mode::Seccomp).unwrap();
//! let out = convert::convert(&prog, &convert::Options::default()).unwrap();
//! // w0 ^= w0; w7 ^= w7; r6 = r1; w0 = *(u32 *)(r6 +0); w0 = 0x7fff0000; exit
//! assert_eq!(out.insns.len(), 6);
//! assert_eq!(out.pc_map.addrs(), [3, 4]);
//! ```

pub mod filter;
pub mod listing;
pub mod loadable;
pub mod socket_ctx;

pub use filter::{convert, ConvertError, Converted, Options, Pass, PcMap};
pub use listing::{filetest_text, side_by_side};
pub use loadable::{loadable, Loadable, LoadableError};

/// Checks that the kernel's attach path would accept a validated program:
/// `SO_ATTACH_FILTER` and `seccomp(SECCOMP_SET_MODE_FILTER)` both run
/// `bpf_prepare_filter()` → `bpf_migrate_filter()` → `bpf_convert_filter()`
/// (net/core/filter.c; seccomp through `seccomp_prepare_filter()` →
/// `bpf_prog_create_from_user()`), which fails with `-EINVAL` when a jump
/// offset does not fit the eBPF `off` field. [`cbpf::validate()`] alone
/// accepts such programs; this runs the conversion and reports the first
/// refusal (its message names `bpf_convert_filter` and the pc).
pub fn check_attach(prog: &cbpf::Program) -> Result<(), ConvertError> {
    convert(prog, &Options::default()).map(|_| ())
}
