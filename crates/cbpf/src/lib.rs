//! Classic BPF (cBPF): the instruction model, raw and text formats, and
//! kernel-exact validation.
//!
//! ```text
//! bytes / text ─► decode / parse ─► validate ─► Program ─► (convert crate) eBPF
//!                                        └────► interp (the reference oracle)
//! ```
//!
//! ```
//! use cbpf::{raw, validate::{validate, Mode}};
//! let bytes = [0x06, 0, 0, 0, 0, 0, 0xff, 0x7f]; // ret #ALLOW
//! let insns = raw::decode(&bytes).unwrap();
//! let prog = validate(&insns, Mode::Seccomp).unwrap();
//! assert_eq!(prog.len(), 1);
//! ```

pub mod insn;
pub mod interp;
pub mod opcode;
pub mod plain;
pub mod raw;
pub mod text;
pub mod uapi;
pub mod validate;

pub use insn::{AluOp, Insn, JmpOp, Op, Pc, Size, Src};
pub use interp::{ExecError, Interp, NetDevice, SeccompData, Skb, TraceStep};
pub use text::{Format, ParseError};
pub use validate::{validate, Mode, Program, ValidateError};
