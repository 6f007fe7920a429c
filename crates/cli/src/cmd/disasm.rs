//! `bpfconv disasm` and `bpfconv asm`.

use clap::{Args, ValueEnum};

use crate::fail::{Failure, Result};
use crate::io::write_output;
use crate::io::FileArgs;

/// Output syntaxes of `disasm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DisasmFormat {
    /// bpf_asm assembly (assembles back with `bpfconv asm`).
    #[default]
    Asm,
    /// C array as `tcpdump -dd` prints it.
    C,
    /// Decimal as `tcpdump -ddd` prints it.
    Ddd,
    /// libpcap's `tcpdump -d` listing (output only).
    Pcap,
    /// seccomp-tools style, naming syscalls and actions.
    Seccomp,
    /// The control-flow graph as Graphviz DOT (basic blocks, true/false edges, returns coloured by action); output only.
    Dot,
}

#[derive(Args, Debug)]
pub struct DisasmArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Output syntax.
    #[arg(long, value_enum, default_value_t)]
    format: DisasmFormat,
    /// Arch used to name syscalls where the filter establishes none (seccomp format).
    #[arg(long)]
    arch: Option<String>,
    /// Output file (`-` for stdout).
    #[arg(short, long, default_value = "-")]
    output: String,
    /// What the program's returns mean (colours of `--format dot`).
    #[arg(long, value_enum, default_value_t)]
    mode: crate::ModeArg,
}

/// Output forms of `asm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum AsmFormat {
    /// Raw `struct sock_filter` records (little-endian unless `--endian big`).
    #[default]
    Raw,
    /// C array as `tcpdump -dd` prints it.
    C,
}

#[derive(Args, Debug)]
pub struct AsmArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: AsmFormat,
    /// Output file (`-` for stdout).
    #[arg(short, long, default_value = "-")]
    output: String,
}

/// Parses `--arch` (a name or an AUDIT_ARCH value).
pub fn parse_arch(arch: Option<&str>) -> Result<Option<seccomp::Arch>> {
    arch.map(|a| a.parse::<seccomp::Arch>().map_err(|e| Failure::usage(format!("--arch {a}: {e}")))).transpose()
}

/// `bpfconv disasm`.
pub fn disasm(args: &DisasmArgs) -> Result<i32> {
    let insns = args.source.read()?;
    let text = match args.format {
        DisasmFormat::Asm => cbpf::text::print_asm(&insns),
        DisasmFormat::C => cbpf::text::print_c(&insns),
        DisasmFormat::Ddd => cbpf::text::print_ddd(&insns),
        DisasmFormat::Pcap => cbpf::text::print_pcap(&insns),
        DisasmFormat::Seccomp => {
            let default_arch = parse_arch(args.arch.as_deref())?;
            seccomp::disasm::disasm(&insns, seccomp::disasm::DisasmOptions { default_arch })
        }
        DisasmFormat::Dot => {
            let default_arch = parse_arch(args.arch.as_deref())?;
            crate::dot::classic(&insns, returns(args.mode), default_arch)
        }
    };
    write_output(&args.output, text.as_bytes())?;
    Ok(0)
}

/// How `--mode` colours returns.
pub fn returns(mode: crate::ModeArg) -> crate::dot::Returns {
    match mode {
        crate::ModeArg::Seccomp => crate::dot::Returns::Seccomp,
        crate::ModeArg::Socket => crate::dot::Returns::Socket,
    }
}

/// `bpfconv asm`.
pub fn asm(args: &AsmArgs) -> Result<i32> {
    let insns = args.source.read()?;
    let bytes = match args.format {
        AsmFormat::Raw => cbpf::raw::encode_endian(&insns, args.source.endian.endian()),
        AsmFormat::C => cbpf::text::print_c(&insns).into_bytes(),
    };
    write_output(&args.output, &bytes)?;
    Ok(0)
}
