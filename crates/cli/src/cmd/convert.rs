//! `bpfconv convert`.

use clap::{Args, ValueEnum};

use crate::cmd::load;
use crate::fail::Result;
use crate::io::write_output;
use crate::InputArgs;

/// What `convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// Raw `struct bpf_insn` records (8 bytes, little-endian), as the kernel builds them.
    Raw,
    /// Each classic instruction followed by the eBPF it became.
    Listing,
    /// The eBPF program alone, in the kernel/bpftool listing style.
    Ebpf,
    /// The eBPF program in bpf_conformance assembly.
    Asm,
    /// The eBPF program's control-flow graph as Graphviz DOT.
    Dot,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output file (`-` for stdout); raw eBPF unless --format says otherwise.
    #[arg(short, long)]
    output: Option<String>,
    /// Output form (default: raw with -o, listing without).
    #[arg(long, value_enum)]
    format: Option<ConvertFormat>,
    /// Emit packet loads as the pre-4.18 eBPF LD_ABS/LD_IND instructions.
    #[arg(long)]
    legacy_ld_abs: bool,
}

/// `bpfconv convert`.
pub fn convert(args: &ConvertArgs) -> Result<i32> {
    let prog = load(&args.input)?;
    let opts = convert::Options { legacy_ld_abs: args.legacy_ld_abs };
    let conv = convert::convert(&prog, &opts)?;
    let format = args.format.unwrap_or(if args.output.is_some() { ConvertFormat::Raw } else { ConvertFormat::Listing });
    let bytes = match format {
        ConvertFormat::Raw => ebpf::encode(&conv.insns),
        ConvertFormat::Listing => convert::side_by_side(&prog, &conv).into_bytes(),
        ConvertFormat::Ebpf => ebpf::listing::listing_with(&conv.insns, ebpf::listing::skb_helper_name).into_bytes(),
        ConvertFormat::Asm => ebpf::disasm::disassemble(&conv.insns)
            .map_err(|e| crate::fail::Failure::rejected(format!("disassembling the converted program: {e}")))?
            .into_bytes(),
        ConvertFormat::Dot => {
            let helpers = match args.input.mode {
                crate::ModeArg::Socket => ebpf::listing::skb_helper_name,
                crate::ModeArg::Seccomp => ebpf::listing::kernel_helper_name,
            };
            crate::dot::ebpf(&conv.insns, crate::cmd::disasm::returns(args.input.mode), helpers).into_bytes()
        }
    };
    write_output(args.output.as_deref().unwrap_or("-"), &bytes)?;
    Ok(0)
}
