//! Classic BPF (cBPF): the instruction model, raw and text formats, and
//! kernel-exact validation.
//!
//! ```text
//! bytes / text ─► decode / parse ─► validate ─► Program ─► (convert crate) eBPF
//!                                        └────► exec::interp (the reference oracle)
//! ```
//!
//! Layers, each importing only those before it (a test reads the `use`
//! lines of every crate and fails on a cycle): the instruction set
//! ([`insn`], [`opcode`], [`raw`]) → [`uapi`] (the seccomp constants,
//! [`SeccompData`], the socket buffer [`Skb`]) → [`text`] (formats; the C
//! reader resolves names from `uapi`'s tables) and [`validate`](mod@validate) → [`exec`]
//! (the fast interpreter, the trace, the plain model of the kernel's loop).
//!
//! ```
//! use cbpf::{raw, validate::{validate, Mode}};
//! let bytes = [0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]; // ret #ALLOW
//! let insns = raw::decode(&bytes).unwrap();
//! let prog = validate(&insns, Mode::Seccomp).unwrap();
//! assert_eq!(prog.len(), 1);
//! ```

pub mod exec;
pub mod insn;
pub mod opcode;
pub mod raw;
pub mod text;
pub mod uapi;
pub mod validate;

// The engines keep their short paths (`cbpf::interp`, `cbpf::plain`).
pub use exec::{interp, plain};

pub use exec::interp::Interp;
pub use exec::trace::{trace_seccomp, trace_socket, TraceStep};
pub use exec::ExecError;
pub use insn::{AluOp, Insn, JmpOp, Op, Pc, Size, Src};
pub use text::{Format, ParseError};
pub use uapi::{NetDevice, SeccompData, Skb};
pub use validate::{validate, Mode, Program, ValidateError};
