//! `bpfconv compile`: a profile (OCI, Docker, seccompiler) as a seccomp
//! filter in `optimize`'s layout, proved equal to the profile's meaning
//! (`policy::compile`) before it is written.

use clap::Args;

use crate::cmd::optimize::{encode, OptimizeFormat};
use crate::cmd::profile::{load, print_notes, ProfileFormat, SelectionArgs};
use crate::fail::{Failure, Result};
use crate::io::{write_output, EndianArg};

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// Profile file (`-` for stdin): OCI linux.seccomp, Docker/Podman, or seccompiler JSON.
    profile: String,
    /// The profile's format; detected from its JSON when absent.
    #[arg(long, value_enum)]
    from: Option<ProfileFormat>,
    #[command(flatten)]
    selection: SelectionArgs,
    /// Output file (`-` for stdout); raw sock_filter records unless --format says otherwise.
    #[arg(short, long)]
    output: Option<String>,
    /// Output form (default: raw with -o, the seccomp listing without).
    #[arg(long, value_enum)]
    format: Option<OptimizeFormat>,
    /// Byte order of raw output records.
    #[arg(long, value_enum, default_value_t)]
    endian: EndianArg,
    /// Print sizes, longest paths and the layout's figures to stderr.
    #[arg(long)]
    stats: bool,
}

/// `bpfconv compile`.
pub fn compile(args: &CompileArgs) -> Result<i32> {
    let sel = args.selection.selection()?;
    let meaning = load(&args.profile, args.from, &sel)?;
    print_notes(&meaning);
    let out = policy::compile::compile(&meaning, &Default::default()).map_err(Failure::rejected)?;
    if let Some(n) = out.stats.depth_layout_too_long {
        eprintln!(
            "note: the layout with every argument tree has {n} instructions, more than BPF_MAXINSNS (4096): trees only where no longer than their checks"
        );
    }
    if let Some(note) = out.stats.layout.budget_note() {
        eprintln!("note: {note}");
    }
    if args.stats {
        eprintln!("{}", out.stats);
    }
    let format =
        args.format.unwrap_or(if args.output.is_some() { OptimizeFormat::Raw } else { OptimizeFormat::Seccomp });
    let bytes = encode(out.program.original(), format, args.endian);
    write_output(args.output.as_deref().unwrap_or("-"), &bytes)?;
    Ok(0)
}
