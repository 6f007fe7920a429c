//! Extended BPF (eBPF): instruction model and raw encoding.
//!
//! Knows nothing of classic BPF: the `convert` crate is the only one that sees both.

pub mod insn;
pub mod opcode;
pub mod skb;

pub use insn::{decode, encode, DecodeError, Insn, Pc};
