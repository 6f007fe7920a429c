//! `bpfconv decompile`: the OCI `linux.seccomp` profile that means a
//! filter (`policy::decompile`), or why none does (exit 1).

use std::io::Write;

use clap::{Args, ValueEnum};

use crate::fail::{Failure, Result};
use crate::io::FileArgs;

use crate::out::{outln, Out};

/// Output of `decompile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DecompileFormat {
    /// The OCI runtime-spec `linux.seccomp` JSON object.
    #[default]
    Oci,
    /// One readable line per entry.
    Text,
}

#[derive(Args, Debug)]
pub struct DecompileArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: DecompileFormat,
    /// Write the profile here (`-`: stdout) instead of printing it.
    #[arg(short, long)]
    output: Option<String>,
    /// Where no profile says what the filter does, print the closest one, then (stderr) every (arch, nr) class where it differs from the filter, proved by equiv.
    #[arg(long)]
    approximate: bool,
    #[command(flatten)]
    budget: super::BudgetArgs,
}

/// The profile of one validated filter, rendered in `format`.
pub fn render(prog: &cbpf::Program, format: DecompileFormat, budget: &mut seccomp::analysis::Budget) -> Result<String> {
    let reading = policy::read(prog, budget).map_err(Failure::rejected)?;
    let profile = policy::decompile(&reading).map_err(Failure::rejected)?;
    profile_text(&profile, format)
}

/// A profile in `format`.
fn profile_text(profile: &policy::Profile, format: DecompileFormat) -> Result<String> {
    Ok(match format {
        DecompileFormat::Oci => {
            let mut s = serde_json::to_string_pretty(profile).map_err(Failure::rejected)?;
            s.push('\n');
            s
        }
        DecompileFormat::Text => profile.text_lines().iter().map(|l| format!("{l}\n")).collect(),
    })
}

/// `--approximate`: the closest profile, what it approximates, and where
/// it differs from the filter (`equiv --all` against its meaning, read as
/// runc would with the profile's first arch native).
fn approximate(prog: &cbpf::Program, args: &DecompileArgs) -> Result<(String, i32)> {
    let mut budget = args.budget.budget();
    let reading = policy::read(prog, &mut budget).map_err(Failure::rejected)?;
    let d = policy::decompile_with(&reading, true).map_err(Failure::rejected)?;
    let text = profile_text(&d.profile, args.format)?;
    for a in &d.approximations {
        eprintln!("note: approximated: {a}");
    }
    let native = d.profile.architectures.first().and_then(|a| policy::profile::runc::arch_of(a));
    let sel = policy::profile::Selection::native(native.unwrap_or(seccomp::Arch::X86_64));
    let meaning = policy::profile::runc::meaning(&d.profile, &sel, policy::profile::Format::Oci)
        .map_err(|e| Failure::rejected(format!("the approximate profile: {e}")))?;
    let reference = policy::compile::reference_program(&meaning).map_err(Failure::rejected)?;
    let options = equiv::Options { all: true, ..Default::default() };
    // `x86_64:read`, `x32:#600`; an arch value the profile does not list
    // by its number.
    let name = |c: &equiv::Counterexample| -> String {
        let nr = c.data.nr as u32;
        let listed = meaning.arches.iter().any(|a| a.audit_arch == c.data.arch);
        let abi = match seccomp::Arch::from_audit_arch(c.data.arch) {
            seccomp::Arch::X86_64 if nr & seccomp::arch::X32_SYSCALL_BIT != 0 => seccomp::Arch::X32,
            a => a,
        };
        match (listed, abi.syscalls().and_then(|t| t.name(nr))) {
            (true, Some(n)) => format!("{abi}:{n}"),
            (true, None) => format!("{abi}:#{nr}"),
            (false, _) => format!("arch {:#x} (not in the profile) nr {nr}", c.data.arch),
        }
    };
    match equiv::check(equiv::Side::single(prog), equiv::Side::single(&reference), &options) {
        Ok(equiv::Verdict::Equal) => {
            eprintln!("note: proved: the profile means exactly what the filter does");
            Ok((text, 0))
        }
        Ok(equiv::Verdict::Differ(cexs)) => {
            eprintln!("note: the profile differs from the filter in {} class(es) of (arch, nr):", cexs.len());
            for c in &cexs {
                let v = serde_json::json!({"arch": c.data.arch, "nr": c.data.nr, "ip": c.data.instruction_pointer,
                    "args": c.data.args, "action": c.left, "left": c.left, "right": c.right});
                eprintln!(
                    "differs: {}: the filter returns {} ({:#010x}), the profile {} ({:#010x}): {v}",
                    name(c),
                    seccomp::Action::from_u32(c.left),
                    c.left,
                    seccomp::Action::from_u32(c.right),
                    c.right
                );
            }
            Ok((text, 0))
        }
        Err(equiv::EquivError::Budget { kind, limit }) => Err(Failure {
            code: crate::cmd::equiv::UNDECIDED,
            message: format!("where the profile differs is undecided: more than {limit} {kind}"),
        }),
        Err(e) => Err(Failure::rejected(e)),
    }
}

/// `bpfconv decompile`.
pub fn decompile(args: &DecompileArgs) -> Result<i32> {
    let insns = args.source.read()?;
    let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp)?;
    let mut budget = args.budget.budget();
    let (text, code) =
        if args.approximate { approximate(&prog, args)? } else { (render(&prog, args.format, &mut budget)?, 0) };
    match args.output.as_deref() {
        Some(path) if path != "-" => {
            crate::io::write_atomic(std::path::Path::new(path), |f| f.write_all(text.as_bytes()))?;
        }
        _ => {
            let mut out = Out::stdout();
            for line in text.lines() {
                outln!(out, "{line}")?;
            }
            out.finish()?;
        }
    }
    Ok(code)
}
