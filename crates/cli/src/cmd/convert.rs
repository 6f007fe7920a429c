//! `bpfconv convert`: the kernel's own form (`--target kernel`, the
//! default, byte-exact) or a program for a hook (`--target xdp|tc|socket`,
//! the `hook` crate), written raw, as an ELF object, as a listing, in
//! assembly or as a C array.

use clap::{Args, ValueEnum};

use crate::cmd::load;
use crate::fail::{Failure, Result};
use crate::io::write_output;
use crate::InputArgs;

/// What `convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// Raw `struct bpf_insn` records (8 bytes, little-endian).
    Raw,
    /// A relocatable ELF object (EM_BPF) with the program in the section libbpf loads it from (hook targets).
    Elf,
    /// Each classic instruction followed by the eBPF it became.
    Listing,
    /// The eBPF program alone, in the kernel/bpftool listing style.
    Ebpf,
    /// The eBPF program in bpf_conformance assembly.
    Asm,
    /// A C initializer of `struct bpf_insn`.
    CArray,
    /// The eBPF program's control-flow graph as Graphviz DOT.
    Dot,
}

/// `--target`: whose program to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum TargetArg {
    /// The kernel's own converted form, exactly as bpf_convert_filter() builds it (not loadable by itself).
    #[default]
    Kernel,
    /// An XDP program (socket filters; seccomp filters: the packet is the struct seccomp_data).
    Xdp,
    /// A tc (sched_cls, direct action) program.
    Tc,
    /// A socket filter program (SO_ATTACH_BPF).
    Socket,
}

/// `--target` of `run` and `bench`: the hook `kernel-jit` converts a socket
/// filter for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum HookTargetArg {
    /// An XDP program (the frame from its MAC header).
    #[default]
    Xdp,
    /// A tc (sched_cls) program.
    Tc,
    /// A socket filter program (the test run's skb starts at the network header).
    Socket,
}

impl HookTargetArg {
    /// The hook.
    pub fn target(self) -> hook::Target {
        match self {
            HookTargetArg::Xdp => hook::Target::Xdp,
            HookTargetArg::Tc => hook::Target::Tc,
            HookTargetArg::Socket => hook::Target::Socket,
        }
    }
}

/// `--verdict`: what an xdp or tc program returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerdictArg {
    /// XDP_PASS / TC_ACT_OK for a non-zero classic result, XDP_DROP / TC_ACT_SHOT for 0 (xdp and tc default).
    Action,
    /// The classic return value itself (socket programs and seccomp filters always).
    Value,
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
    /// The program to write: the kernel's form, or a program for a hook.
    #[arg(long, value_enum, default_value_t)]
    target: TargetArg,
    /// What an xdp or tc program returns (default: action; seccomp filters and socket programs: value).
    #[arg(long, value_enum)]
    verdict: Option<VerdictArg>,
    /// The program's name: its ELF symbol and the C array's name.
    #[arg(long, default_value = "filter")]
    name: String,
    /// Emit packet loads as the pre-4.18 eBPF LD_ABS/LD_IND instructions (--target kernel).
    #[arg(long)]
    legacy_ld_abs: bool,
}

/// `bpfconv convert`.
pub fn convert(args: &ConvertArgs) -> Result<i32> {
    if matches!(args.target, TargetArg::Tc | TargetArg::Socket) && args.input.mode.mode() == cbpf::Mode::Seccomp {
        return Err(Failure::usage(
            "--target tc and socket convert socket filters (add --mode socket); a seccomp filter converts for --target xdp",
        ));
    }
    let prog = load(&args.input)?;
    let format = args.format.unwrap_or(if args.output.is_some() { ConvertFormat::Raw } else { ConvertFormat::Listing });
    let target = match args.target {
        TargetArg::Kernel => None,
        TargetArg::Xdp => Some(hook::Target::Xdp),
        TargetArg::Tc => Some(hook::Target::Tc),
        TargetArg::Socket => Some(hook::Target::Socket),
    };
    let bytes = match target {
        None => kernel_form(args, &prog, format)?,
        Some(target) => hook_form(args, &prog, target, format)?,
    };
    write_output(args.output.as_deref().unwrap_or("-"), &bytes)?;
    Ok(0)
}

/// `--target kernel`: today's byte-exact output.
fn kernel_form(args: &ConvertArgs, prog: &cbpf::Program, format: ConvertFormat) -> Result<Vec<u8>> {
    if args.verdict.is_some() {
        return Err(Failure::usage("--verdict is for --target xdp|tc|socket"));
    }
    if format == ConvertFormat::Elf {
        return Err(Failure::usage(
            "--format elf needs a hook: the kernel's converted form loads nowhere by itself (--target xdp|tc|socket)",
        ));
    }
    let opts = convert::Options { legacy_ld_abs: args.legacy_ld_abs };
    let conv = convert::convert(prog, &opts)?;
    let helper = ebpf::listing::skb_helper_name;
    Ok(match format {
        ConvertFormat::Raw => ebpf::encode(&conv.insns),
        ConvertFormat::Listing => convert::side_by_side(prog, &conv).into_bytes(),
        ConvertFormat::Ebpf => ebpf::listing::listing_with(&conv.insns, helper).into_bytes(),
        ConvertFormat::Asm => asm(&conv.insns)?,
        ConvertFormat::CArray => ebpf::listing::c_array(&conv.insns, &args.name, helper).into_bytes(),
        ConvertFormat::Dot => {
            let helpers = match args.input.mode {
                crate::ModeArg::Socket => ebpf::listing::skb_helper_name,
                crate::ModeArg::Seccomp => ebpf::listing::kernel_helper_name,
            };
            crate::dot::ebpf(&conv.insns, crate::cmd::disasm::returns(args.input.mode), helpers).into_bytes()
        }
        ConvertFormat::Elf => Vec::new(),
    })
}

/// `--target xdp|tc|socket`.
fn hook_form(args: &ConvertArgs, prog: &cbpf::Program, target: hook::Target, format: ConvertFormat) -> Result<Vec<u8>> {
    if args.legacy_ld_abs {
        return Err(Failure::usage("--legacy-ld-abs is for --target kernel"));
    }
    let seccomp = prog.mode() == cbpf::Mode::Seccomp;
    let verdict = match (args.verdict, target, seccomp) {
        (None, hook::Target::Socket, _) | (None, _, true) | (Some(VerdictArg::Value), ..) => hook::Verdict::Value,
        (None, ..) | (Some(VerdictArg::Action), ..) => hook::Verdict::Action,
    };
    if verdict == hook::Verdict::Action && (seccomp || target == hook::Target::Socket) {
        return Err(Failure::usage(format!(
            "--verdict action: {} return the filter's value (--verdict value)",
            if seccomp { "seccomp filters" } else { "socket programs" }
        )));
    }
    let hooked = hook::convert(prog, &hook::Options { target, verdict }).map_err(Failure::rejected)?;
    let no_names: ebpf::listing::HelperNameFn = |_| None;
    Ok(match format {
        ConvertFormat::Raw => ebpf::encode(&hooked.insns),
        ConvertFormat::Elf => ebpf::elf::Object {
            section: target.name(),
            symbol: &args.name,
            license: hook::LICENSE,
            insns: &hooked.insns,
        }
        .to_bytes()
        .map_err(Failure::usage)?,
        ConvertFormat::Listing => hook::listing(prog, &hooked).into_bytes(),
        ConvertFormat::Ebpf => ebpf::listing::listing_with(&hooked.insns, no_names).into_bytes(),
        ConvertFormat::Asm => asm(&hooked.insns)?,
        ConvertFormat::CArray => ebpf::listing::c_array(&hooked.insns, &args.name, no_names).into_bytes(),
        ConvertFormat::Dot => {
            crate::dot::ebpf(&hooked.insns, crate::cmd::disasm::returns(args.input.mode), no_names).into_bytes()
        }
    })
}

fn asm(insns: &[ebpf::Insn]) -> Result<Vec<u8>> {
    Ok(ebpf::disasm::disassemble(insns)
        .map_err(|e| Failure::rejected(format!("disassembling the converted program: {e}")))?
        .into_bytes())
}
