//! The seccomp side of bpfconv: what a seccomp filter reads, what it returns,
//! which arch and syscall it is about, and how stacked filters combine.
//!
//! ```text
//! bytes / text ─► cbpf (decode, validate) ─► Program ─► engines ─► u32 ─► action::Action
//!                                                │                          │
//!                 data::SeccompData (input) ─────┘      stack::combine ◄────┘
//! disasm (seccomp-tools style) ◄─► asm              arch + syscalls (@generated tables)
//! ```
//!
//! ```
//! use seccomp::{action::Action, arch::Arch, syscalls};
//! assert_eq!("ERRNO(1)".parse::<Action>().unwrap().to_u32(), 0x0005_0001);
//! let x86_64: Arch = "x86_64".parse().unwrap();
//! assert_eq!(x86_64.audit_arch(), 0xc000_003e);
//! assert_eq!(syscalls::number(x86_64, "getppid"), Some(110));
//! // The kernel's precedence: the most restrictive action wins.
//! assert_eq!(seccomp::stack::combine([0x7fff_0000, 0x0005_0001]), 0x0005_0001);
//! ```

pub mod action;
pub mod analysis;
pub mod arch;
pub mod asm;
pub mod cache;
pub mod stack;

/// The filter-stack module's former name (a "chain" is a compare chain
/// now, crate `chain`), kept so code written against it builds.
#[doc(hidden)]
pub mod chain {
    pub use crate::stack::{
        combine, evaluate_stack as evaluate_chain, evaluate_stack_cached as evaluate_chain_cached, Stack as Chain,
    };
}
pub mod data;
pub mod disasm;
pub mod domain;
pub mod fast;
pub mod syscalls;

pub use action::Action;
pub use arch::Arch;
pub use data::SeccompData;
