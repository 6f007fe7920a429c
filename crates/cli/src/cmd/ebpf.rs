//! `bpfconv ebpf ...`: tools for eBPF programs (bpf_conformance assembly syntax).

use clap::{Args, Subcommand, ValueEnum};

use kernel::bpf::memory::Args as MemoryArgs;

use crate::fail::{Failure, Result};
use crate::io::{parse_hex, read_input, write_output};
use crate::out::{outln, Out};

#[derive(Args, Debug)]
pub struct EbpfArgs {
    #[command(subcommand)]
    command: EbpfCommand,
}

/// eBPF program input syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EbpfFrom {
    /// Raw `struct bpf_insn` records.
    Raw,
    /// bpf_conformance / uBPF assembly.
    Asm,
}

/// eBPF program output syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum EbpfListing {
    /// bpf_conformance / uBPF assembly (assembles back with `bpfconv ebpf asm`).
    #[default]
    Asm,
    /// The kernel verifier / bpftool listing style.
    Kernel,
}

/// Who runs an eBPF program (`ebpf run`, `ebpf conformance-plugin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum EbpfEngine {
    /// Our interpreter (`ebpf::Vm`).
    #[default]
    Ours,
    /// The running kernel: loaded through its verifier (and JIT) as an XDP
    /// program and run by `BPF_PROG_TEST_RUN`, the memory as the packet
    /// (`kernel::bpf::memory`). Needs root (CAP_BPF and CAP_NET_ADMIN).
    Kernel,
}

#[derive(Subcommand, Debug)]
enum EbpfCommand {
    /// Assemble bpf_conformance syntax to raw `struct bpf_insn` bytes.
    Asm {
        file: String,
        #[arg(short, long, default_value = "-")]
        output: String,
    },
    /// Print a raw eBPF program.
    Disasm {
        file: String,
        #[arg(long, value_enum, default_value_t)]
        format: EbpfListing,
    },
    /// Run an eBPF program; r1 = the memory, r2 = its length. Prints r0 in hex.
    Run {
        file: String,
        /// Input syntax; auto-detected (text that assembles, else raw).
        #[arg(long, value_enum)]
        from: Option<EbpfFrom>,
        /// Memory as hex.
        #[arg(long, default_value = "")]
        mem: String,
        /// Who runs it: our interpreter or the running kernel.
        #[arg(long, value_enum, default_value_t)]
        engine: EbpfEngine,
        /// Step budget of our interpreter (instructions executed before the
        /// run is stopped; default 2^20). The kernel's verifier bounds its runs itself.
        #[arg(long)]
        budget: Option<u64>,
        /// r3 = the memory's end too (XDP's data_end), for programs that
        /// bounds-check a register offset themselves; memory of at least 14 bytes.
        #[arg(long)]
        data_end: bool,
    },
    /// The bpf_conformance runner's plugin protocol (program as hex on stdin, memory as hex argument).
    ConformancePlugin {
        /// Memory as hex.
        mem: Option<String>,
        /// Who runs it: our interpreter or the running kernel.
        #[arg(long, value_enum, default_value_t)]
        engine: EbpfEngine,
    },
}

fn read_program(path: &str, from: Option<EbpfFrom>) -> Result<Vec<ebpf::Insn>> {
    let bytes = read_input(path)?;
    let as_text = || std::str::from_utf8(&bytes).ok().map(ebpf::asm::assemble);
    match from {
        Some(EbpfFrom::Raw) => Ok(ebpf::decode(&bytes)?),
        Some(EbpfFrom::Asm) => match as_text() {
            Some(r) => Ok(r?),
            None => Err(Failure::rejected(format!("{path}: not UTF-8 text"))),
        },
        // Text when it assembles (the assembler refuses a text without an
        // instruction); a text error is reported unless a NUL byte says the
        // bytes were raw instructions that happen to be UTF-8.
        None => match as_text() {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) if !bytes.contains(&0) => Err(e.into()),
            _ => Ok(ebpf::decode(&bytes)?),
        },
    }
}

/// Runs `insns` on `mem` with `engine` and the argument registers of
/// `args`, and returns r0; `mem` is left as the program left it.
fn run_on(engine: EbpfEngine, insns: &[ebpf::Insn], mem: &mut [u8], budget: u64, args: MemoryArgs) -> Result<u64> {
    match engine {
        EbpfEngine::Ours => {
            if args == MemoryArgs::WithEnd && mem.len() < kernel::bpf::memory::ETH_HLEN {
                // The same refusal as the kernel's, so both engines take the same inputs.
                return Err(bpf_failure(kernel::bpf::BpfError::MemoryTooShort {
                    len: mem.len(),
                    min: kernel::bpf::memory::ETH_HLEN,
                }));
            }
            let with_end;
            let insns = match args {
                MemoryArgs::WithEnd => {
                    with_end = [&kernel::bpf::memory::END_PRELUDE[..], insns].concat();
                    &with_end[..]
                }
                _ => insns,
            };
            let prog = ebpf::Program::load(insns, &ebpf::LoadOptions::default(), &ebpf::Helpers::conformance())?;
            let mut vm = ebpf::Vm::new();
            vm.set_step_budget(budget);
            Ok(vm.run(&prog, ebpf::Input::Memory(mem))?)
        }
        EbpfEngine::Kernel => {
            let prog = kernel::bpf::memory::MemoryProg::load_with(insns, mem.len(), args).map_err(bpf_failure)?;
            Ok(prog.run(mem).map_err(bpf_failure)?.r0)
        }
    }
}

/// A kernel refusal as one line: the verifier's reason rather than its
/// log (FORMATS.md §1: errors are one `error:` line).
fn bpf_failure(e: kernel::bpf::BpfError) -> Failure {
    match (&e, e.reason()) {
        (kernel::bpf::BpfError::Rejected { errno, .. }, Some(reason)) => Failure::rejected(format!(
            "the kernel's verifier refused the program ({}): {reason}",
            std::io::Error::from_raw_os_error(*errno)
        )),
        _ => Failure::rejected(e.to_string().lines().next().unwrap_or_default()),
    }
}

/// `bpfconv ebpf`.
pub fn ebpf(args: &EbpfArgs) -> Result<i32> {
    match &args.command {
        EbpfCommand::Asm { file, output } => {
            let text = String::from_utf8(read_input(file)?).map_err(|e| Failure::rejected(format!("{file}: {e}")))?;
            let insns = ebpf::asm::assemble(&text)?;
            write_output(output, &ebpf::encode(&insns))?;
        }
        EbpfCommand::Disasm { file, format } => {
            let insns = ebpf::decode(&read_input(file)?)?;
            let text = match format {
                EbpfListing::Asm => ebpf::disasm::disassemble(&insns).map_err(Failure::rejected)?,
                EbpfListing::Kernel => ebpf::listing::listing_with(&insns, ebpf::listing::skb_helper_name),
            };
            let mut out = Out::stdout();
            out.write_all(text.as_bytes())?;
            out.finish()?;
        }
        EbpfCommand::Run { file, from, mem, engine, budget, data_end } => {
            if budget.is_some() && *engine == EbpfEngine::Kernel {
                return Err(Failure::usage(
                    "--budget is our interpreter's step budget; it does not apply to --engine kernel",
                ));
            }
            let insns = read_program(file, *from)?;
            let mut mem = parse_hex(mem)?;
            let args = if *data_end { MemoryArgs::WithEnd } else { MemoryArgs::Conformance };
            let r0 = run_on(*engine, &insns, &mut mem, budget.unwrap_or(ebpf::vm::DEFAULT_STEP_BUDGET), args)?;
            let mut out = Out::stdout();
            outln!(out, "{r0:#x}")?;
            out.finish()?;
        }
        EbpfCommand::ConformancePlugin { mem, engine } => return Ok(conformance_plugin(*engine, mem.as_deref())),
    }
    Ok(0)
}

/// FORMATS.md §4: print r0 as lowercase hex without `0x`, or one line saying
/// why the program could not be loaded or run, with a non-zero exit.
fn conformance_plugin(engine: EbpfEngine, mem: Option<&str>) -> i32 {
    let result = (|| -> Result<u64> {
        let bytes = read_input("-")?;
        let text = String::from_utf8(bytes).map_err(|e| Failure::rejected(format!("stdin: {e}")))?;
        let insns = ebpf::decode(&parse_hex(&text)?)?;
        let mut mem = parse_hex(mem.unwrap_or(""))?;
        run_on(engine, &insns, &mut mem, ebpf::vm::DEFAULT_STEP_BUDGET, MemoryArgs::Conformance)
    })();
    let (line, code) = match result {
        Ok(r0) => (format!("{r0:x}"), 0),
        Err(f) => (f.message, 1),
    };
    let mut out = Out::stdout();
    match outln!(out, "{line}").and_then(|()| out.finish()) {
        Ok(()) => code,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}
