//! `bpfconv optimize`.

use clap::{Args, ValueEnum};

use crate::fail::{Failure, Result};
use crate::io::write_output;
use crate::io::FileArgs;

/// What `optimize` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptimizeFormat {
    /// Raw `struct sock_filter` records (little-endian unless `--endian big`).
    Raw,
    /// C array as `tcpdump -dd` prints it.
    C,
    /// bpf_asm assembly.
    Asm,
    /// seccomp-tools style listing, naming syscalls and actions.
    Seccomp,
}

#[derive(Args, Debug)]
pub struct OptimizeArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Output file (`-` for stdout); raw sock_filter records unless --format says otherwise.
    #[arg(short, long)]
    output: Option<String>,
    /// Output form (default: raw with -o, the seccomp listing without).
    #[arg(long, value_enum)]
    format: Option<OptimizeFormat>,
    /// Abstract steps the partition may spend (as `analyze --max-steps`).
    #[arg(long, default_value_t = seccomp::analysis::Budget::DEFAULT_STEPS)]
    max_steps: u64,
    /// Print sizes, longest paths and the layout's figures to stderr.
    #[arg(long)]
    stats: bool,
    /// Where an argument tree is longer than the checks it stands for: the
    /// fewest instructions (never longer than the input) or the shortest
    /// paths (up to 4096 instructions).
    #[arg(long, value_enum, default_value_t = PreferArg::Size)]
    prefer: PreferArg,
}

/// `--prefer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PreferArg {
    /// The fewest instructions.
    Size,
    /// The shortest paths.
    Depth,
}

/// `bpfconv optimize`.
pub fn optimize(args: &OptimizeArgs) -> Result<i32> {
    let insns = args.source.read()?;
    let input = cbpf::validate(&insns, cbpf::Mode::Seccomp)?;
    let budget = seccomp::analysis::Budget::new(
        args.max_steps,
        seccomp::analysis::Budget::DEFAULT_PATHS,
        seccomp::analysis::Budget::DEFAULT_CONDS,
    );
    let prefer = match args.prefer {
        PreferArg::Size => ::optimize::Prefer::Size,
        PreferArg::Depth => ::optimize::Prefer::Depth,
    };
    let options = ::optimize::Options { budget, prefer, ..Default::default() };
    let out = ::optimize::optimize(&input, &options).map_err(Failure::rejected)?;
    let s = out.stats;
    if let Some(n) = s.depth_layout_too_long {
        eprintln!(
            "note: the depth-first layout has {n} instructions, more than BPF_MAXINSNS (4096): the size-first one is used"
        );
    }
    if let Some(why) = s.kept_input {
        eprintln!("note: the input is written unchanged: {why}, the input {}", s.input_insns);
    }
    if let Some(note) = s.layout.budget_note() {
        eprintln!("note: {note}");
    }
    if args.stats {
        eprintln!("{s}");
    }
    let format =
        args.format.unwrap_or(if args.output.is_some() { OptimizeFormat::Raw } else { OptimizeFormat::Seccomp });
    let bytes = encode(out.program.original(), format, args.source.endian);
    write_output(args.output.as_deref().unwrap_or("-"), &bytes)?;
    Ok(0)
}

/// A filter in one of the forms `optimize` and `compile` write.
pub fn encode(insns: &[cbpf::Insn], format: OptimizeFormat, endian: crate::io::EndianArg) -> Vec<u8> {
    match format {
        OptimizeFormat::Raw => cbpf::raw::encode_endian(insns, endian.endian()),
        OptimizeFormat::C => cbpf::text::print_c(insns).into_bytes(),
        OptimizeFormat::Asm => cbpf::text::print_asm(insns).into_bytes(),
        OptimizeFormat::Seccomp => {
            seccomp::disasm::disasm(insns, seccomp::disasm::DisasmOptions { default_arch: None }).into_bytes()
        }
    }
}
