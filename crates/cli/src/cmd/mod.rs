//! One module per subcommand. Each returns the process exit code.

pub mod analyze;
pub mod bench;
pub mod convert;
pub mod decompile;
pub mod disasm;
pub mod dump;
pub mod ebpf;
pub mod equiv;
pub mod optimize;
pub mod run;

use crate::fail::Result;

use crate::out::{outln, Out};
use crate::InputArgs;

/// Reads, parses and validates the program named by `args`.
pub fn load(args: &InputArgs) -> Result<cbpf::Program> {
    let insns = args.source.read()?;
    Ok(cbpf::validate(&insns, args.mode.mode())?)
}

/// `bpfconv check`.
pub fn check(args: &InputArgs) -> Result<i32> {
    let prog = load(args)?;
    // The kernel converts both socket and seccomp filters on attach.
    ::convert::check_attach(&prog)?;
    let mut out = Out::stdout();
    outln!(out, "ok: {} instructions, valid {} filter", prog.len(), prog.mode())?;
    out.finish()?;
    Ok(0)
}
