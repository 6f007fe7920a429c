//! Extended BPF (eBPF): instruction model and raw encoding.
//!
//! Knows nothing of classic BPF: the `convert` crate is the only one that sees both.
//!
//! # Running programs
//!
//! ```
//! use ebpf::{Helpers, Input, Insn, LoadOptions, Program, Vm};
//!
//! // w0 = *(u32 *)(r1 + 0); if r0 == 60 goto +2; w0 = 0x7fff0000; exit; w0 = 0; exit
//! let insns = [
//!     Insn::new(0x61, 0, 1, 0, 0),
//!     Insn::new(0x15, 0, 0, 2, 60),
//!     Insn::new(0xb4, 0, 0, 0, 0x7fff_0000),
//!     Insn::new(0x95, 0, 0, 0, 0),
//!     Insn::new(0xb4, 0, 0, 0, 0),
//!     Insn::new(0x95, 0, 0, 0, 0),
//! ];
//! let prog = Program::load(&insns, &LoadOptions::default(), &Helpers::new())?;
//! let mut vm = Vm::new(); // reusable: a run allocates nothing
//! let mut data = [0u8; 64]; // struct seccomp_data
//! data[0] = 60;
//! assert_eq!(vm.run_seccomp(&prog, &data)?, 0);
//! assert_eq!(vm.run(&prog, Input::Ctx(&[1, 0, 0, 0]))?, 0x7fff_0000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`Op`] is the typed instruction: [`Op::decode`] / [`Op::encode`] and the
//!   per-family tables of [`op`] (bits, kernel listing symbol, conformance
//!   mnemonic, evaluation) are the one definition of the instruction set every
//!   module here matches on; [`filter_h`] holds include/linux/filter.h's
//!   instruction constructors and the converter's register convention.
//! - [`Program::load`]`(&[Insn], &LoadOptions, &Helpers) -> Result<Program, LoadError>`
//!   checks the program structurally (see [`program`]) and pre-decodes it;
//!   [`LoadOptions::strict`] also rejects non-zero reserved fields (RFC 9669).
//! - [`Vm::new`], then [`Vm::run`]`(&Program, Input) -> Result<u64, ExecError>`
//!   returns the whole `r0`; [`Vm::run_seccomp`] returns its low 32 bits for a
//!   64-byte `struct seccomp_data`. [`Input`] is nothing (`r1 = 0`), a
//!   read-only context, a socket buffer ([`SkbContext::new`]`(packet, &SkbMeta)`),
//!   or writable memory (`r1` = address, `r2` = length: the bpf_conformance
//!   convention).
//! - [`Helpers::socket`] registers the converter's eight socket helpers
//!   ([`skb::helper`]); [`Helpers::conformance`] the suite's helper 5.
//! - Semantics ([`interp`]): the kernel's `___bpf_prog_run()` plus RFC 9669
//!   (local calls, legacy `LD ABS/IND`, masked shift K), memory regions with
//!   bounds checks, a step budget ([`Vm::set_step_budget`]).

pub mod elf;
pub mod filter_h;
pub mod helpers;
pub mod insn;
pub mod interp;
pub mod op;
pub mod opcode;
pub mod plain;
pub mod program;
pub mod seccomp_exec;
pub mod skb;

pub use helpers::{HelperError, HelperFn, Helpers};
pub use insn::{decode, encode, DecodeError, Insn, Pc};
pub use interp::{ExecError, Input, Vm};
pub use op::Op;
pub use program::{LoadError, LoadOptions, Program};
pub use skb::{SkbContext, SkbMeta};
pub mod asm;
pub mod conformance;
pub mod disasm;
pub mod listing;
