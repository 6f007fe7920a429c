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
//! # Layers
//!
//! Each module imports only those above it in this list (a test reads the
//! `use` lines of every crate and fails on a cycle):
//!
//! - [`isa`]: the instruction set (`Insn`, opcodes, the typed [`Op`] and its
//!   tables, include/linux/filter.h's constructors);
//! - [`abi`]: what a run sees (memory regions, `Input`/`Memory`, errors,
//!   the socket-buffer context, helpers);
//! - [`load`]: structural checks, the general interpreter's internal form
//!   and its load-time superinstructions;
//! - [`exec`]: the engines (the general interpreter, the converted-seccomp
//!   executor, the plain model of the kernel's loop);
//! - [`vm`]: [`Program`] and [`Vm`], the one place that picks an engine;
//! - text on top: [`asm`], [`disasm`], [`listing`], [`conformance`].
//!
//! # The pieces
//!
//! - [`Op`] is the typed instruction: [`Op::decode`] / [`Op::encode`] and the
//!   per-family tables of [`op`] (bits, kernel listing symbol, conformance
//!   mnemonic, evaluation) are the one definition of the instruction set every
//!   module here matches on; [`filter_h`] holds include/linux/filter.h's
//!   instruction constructors and the converter's register convention.
//! - [`Program::load`]`(&[Insn], &LoadOptions, &Helpers) -> Result<Program, LoadError>`
//!   checks the program structurally (see [`load`]) and pre-decodes it;
//!   [`LoadOptions::strict`] also rejects non-zero reserved fields (RFC 9669).
//! - [`Vm::new`], then [`Vm::run`]`(&Program, Input) -> Result<u64, ExecError>`
//!   returns the whole `r0`; [`Vm::run_seccomp`] returns its low 32 bits for a
//!   64-byte `struct seccomp_data`. [`Input`] is nothing (`r1 = 0`), a
//!   read-only context, a socket buffer ([`SkbContext::new`]`(packet, &SkbMeta)`),
//!   or writable memory (`r1` = address, `r2` = length: the bpf_conformance
//!   convention).
//! - [`Helpers::socket`] registers the converter's eight socket helpers
//!   ([`skb::helper`]); [`Helpers::conformance`] the suite's helper 5.
//! - Semantics ([`exec`]): the kernel's `___bpf_prog_run()` plus RFC 9669
//!   (local calls, legacy `LD ABS/IND`, masked shift K), memory regions with
//!   bounds checks ([`abi::region`]), a step budget ([`Vm::set_step_budget`]).

pub mod abi;
pub mod exec;
pub mod isa;
pub mod load;
pub mod vm;

pub mod asm;
pub mod conformance;
pub mod disasm;
pub mod elf;
pub mod listing;

// Short paths for what users reach for most (the layers above hold them).
pub use abi::error::{ExecError, HelperError};
pub use abi::helpers::{HelperFn, Helpers};
pub use abi::memory::Input;
pub use abi::skb::{SkbContext, SkbMeta};
pub use abi::{helpers, skb};
pub use exec::plain;
pub use isa::insn::{decode, encode, DecodeError, Insn, Pc};
pub use isa::op::Op;
pub use isa::{filter_h, insn, op, opcode};
pub use load::{LoadError, LoadOptions};
pub use vm::{Program, SeccompRunner, Vm};

/// The paths of the module that held the run-time environment and the
/// general interpreter before the crate was layered (now [`abi`],
/// [`exec`] and [`vm`]), kept so code written against them builds.
#[doc(hidden)]
pub mod interp {
    pub use crate::abi::error::{Access, ExecError};
    pub use crate::abi::memory::{Input, Memory};
    pub use crate::abi::region::{CTX_BASE, MAX_FRAMES, MEM_BASE, PACKET_BASE, STACK_BASE, STACK_SIZE};
    pub use crate::vm::{Vm, DEFAULT_STEP_BUDGET};
}

/// The paths of the module that held loading before the crate was
/// layered (now [`load`] and [`vm`]), kept so code written against them
/// builds.
#[doc(hidden)]
pub mod program {
    pub use crate::load::{LoadError, LoadOptions, MAX_INSNS};
    pub use crate::vm::Program;
}

/// The path of the seccomp executor's chain listing before the crate was
/// layered (now [`Program::seccomp_chain_listing`]), kept so code written
/// against it builds.
#[doc(hidden)]
pub mod seccomp_exec {
    /// [`crate::Program::seccomp_chain_listing`].
    pub fn chain_listing(prog: &crate::Program) -> Option<String> {
        prog.seccomp_chain_listing()
    }
}
