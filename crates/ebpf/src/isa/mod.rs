//! The instruction set, below everything else in the crate: the raw
//! record ([`insn`]: `struct bpf_insn`, decode and encode of bytes), the
//! opcode constants ([`opcode`]), the typed instruction [`op::Op`] with its
//! one decoder and encoder and the per-family tables, and
//! include/linux/filter.h's constructors with the converter's register
//! convention ([`filter_h`]).

pub mod filter_h;
pub mod insn;
pub mod op;
pub mod opcode;
