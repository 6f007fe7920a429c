//! `bpfconv`: classic BPF → eBPF exactly as the Linux kernel converts it.
//!
//! The only crate that does IO and prints. The command-line contract (exit
//! codes, `-` for stdin/stdout, one-line `error: ...` messages) is fixed by
//! the project's FORMATS.md §1.

mod cmd;
mod dot;
mod fail;
mod io;
mod out;
mod pcap;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::io::FileArgs;

#[derive(Parser, Debug)]
#[command(
    name = "bpfconv",
    version,
    about = "Classic BPF (seccomp, socket filters) → eBPF, exactly as Linux converts it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which kernel entry point a program is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
enum ModeArg {
    #[default]
    Seccomp,
    Socket,
}

impl ModeArg {
    fn mode(self) -> cbpf::Mode {
        match self {
            ModeArg::Seccomp => cbpf::Mode::Seccomp,
            ModeArg::Socket => cbpf::Mode::Socket,
        }
    }
}

#[derive(Args, Debug)]
struct InputArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Kernel entry point the program is validated for.
    #[arg(long, value_enum, default_value_t)]
    mode: ModeArg,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate as the kernel would (bpf_check_classic, plus seccomp_check_filter in seccomp mode).
    Check(InputArgs),
    /// Print a classic program in one of the text syntaxes.
    Disasm(cmd::disasm::DisasmArgs),
    /// Assemble text (any input syntax) to raw sock_filter bytes or a C array.
    Asm(cmd::disasm::AsmArgs),
    /// Convert to eBPF exactly as bpf_convert_filter() does; without -o, print a side-by-side listing.
    Convert(cmd::convert::ConvertArgs),
    /// Compile a seccomp profile (OCI, Docker/Podman, seccompiler JSON) into a filter proved equal to the profile's meaning.
    Compile(Box<cmd::compile::CompileArgs>),
    /// Rewrite a seccomp filter to dispatch on arch and nr in O(log n) range compares, proved equal before it is written.
    Optimize(cmd::optimize::OptimizeArgs),
    /// Evaluate a filter on one of the engines.
    Run(Box<cmd::run::RunArgs>),
    /// Constant-action analysis of a seccomp filter (FORMATS.md §3), with explain and audit.
    Analyze(cmd::analyze::AnalyzeArgs),
    /// The OCI runtime-spec seccomp profile that means a filter, or why none does.
    Decompile(cmd::decompile::DecompileArgs),
    /// What a filter costs per input on every engine and in the kernel (classic vs eBPF, path lengths).
    Bench(Box<cmd::bench::BenchArgs>),
    /// Prove two seccomp filters (or stacks) equal on every input, or print an input that tells them apart (exit 0 equal, 1 differ, 3 undecided).
    Equiv(Box<cmd::equiv::EquivArgs>),
    /// Read every seccomp filter of a running process (PTRACE_SECCOMP_GET_FILTER), oldest first.
    Dump(cmd::dump::DumpArgs),
    /// eBPF tools: assembler, disassembler, interpreter, bpf_conformance plugin.
    Ebpf(cmd::ebpf::EbpfArgs),
}

fn main() {
    kernel::default_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => std::process::exit(clap_exit(&e)),
    };
    let result = match cli.command {
        Command::Check(a) => cmd::check(&a),
        Command::Disasm(a) => cmd::disasm::disasm(&a),
        Command::Asm(a) => cmd::disasm::asm(&a),
        Command::Convert(a) => cmd::convert::convert(&a),
        Command::Optimize(a) => cmd::optimize::optimize(&a),
        Command::Compile(a) => cmd::compile::compile(&a),
        Command::Run(a) => cmd::run::run(&a),
        Command::Analyze(a) => cmd::analyze::analyze(&a),
        Command::Decompile(a) => cmd::decompile::decompile(&a),
        Command::Equiv(a) => cmd::equiv::equiv(&a),
        Command::Dump(a) => cmd::dump::dump(&a),
        Command::Bench(a) => cmd::bench::bench(&a),
        Command::Ebpf(a) => cmd::ebpf::ebpf(&a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(f) => {
            eprintln!("error: {}", f.message);
            std::process::exit(f.code);
        }
    }
}

/// Reports a clap outcome: `--help` / `--version` text goes through the one
/// writer (a failed write is `error: writing stdout`, exit 1); usage errors
/// go to stderr with exit 2.
fn clap_exit(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            if e.exit_code() == 0 =>
        {
            let text = e.render().to_string();
            let mut out = out::Out::stdout();
            match out.write_all(text.as_bytes()).and_then(|()| out.finish()) {
                Ok(()) => 0,
                Err(f) => {
                    eprintln!("error: {}", f.message);
                    f.code
                }
            }
        }
        _ => {
            // Usage errors (and help shown for a missing subcommand) go to stderr.
            let _ = e.print();
            e.exit_code()
        }
    }
}
