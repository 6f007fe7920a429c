//! Extended BPF (eBPF): instruction model and raw encoding.
//!
//! Knows nothing of classic BPF: the `convert` crate is the only one that sees both.

pub mod insn;
pub mod opcode;
pub mod skb;
pub mod program;
pub mod interp;
pub mod helpers;

pub use insn::{decode, encode, DecodeError, Insn, Pc};
pub use helpers::{HelperError, HelperFn, Helpers};
pub use interp::{ExecError, Input, Vm};
pub use program::{LoadError, LoadOptions, Program};
pub use skb::{SkbContext, SkbMeta};
pub mod listing;
pub mod asm;
pub mod disasm;
pub mod conformance;
