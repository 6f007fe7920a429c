//! One module per subcommand. Each returns the process exit code.

pub mod analyze;
pub mod bench;
pub mod compile;
pub mod convert;
pub mod decompile;
pub mod disasm;
pub mod dump;
pub mod ebpf;
pub mod equiv;
pub mod optimize;
pub mod profile;
pub mod run;

use crate::fail::Result;
use seccomp::analysis::Budget;

use crate::out::{outln, Out};
use crate::InputArgs;

/// The analysis budget of one run (`seccomp::analysis::Budget`), for every
/// command that reads a filter as a policy: `analyze`, `decompile`,
/// `dump --decompile`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct BudgetArgs {
    /// Budget of the whole run: abstract instructions executed (data flow and path exploration, every number and arch).
    #[arg(long, value_name = "N", default_value_t = Budget::DEFAULT_STEPS)]
    pub max_steps: u64,
    /// Budget of the whole run: paths read (`--explain`, `decompile`).
    #[arg(long, value_name = "N", default_value_t = Budget::DEFAULT_PATHS)]
    pub max_paths: u64,
    /// Budget of the whole run: conditions read (bounds the output).
    #[arg(long, value_name = "N", default_value_t = Budget::DEFAULT_CONDS)]
    pub max_conds: u64,
    /// Budget of the whole run: nodes of the computed expressions read (`(args[0].lo + 0x1)` is 3).
    #[arg(long, value_name = "N", default_value_t = Budget::DEFAULT_EXPR_NODES)]
    pub max_expr_nodes: u64,
}

impl BudgetArgs {
    /// A fresh budget with these bounds.
    pub fn budget(&self) -> Budget {
        Budget::new(self.max_steps, self.max_paths, self.max_conds).with_max_expr_nodes(self.max_expr_nodes)
    }
}

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
