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
    #[command(flatten)]
    budget: super::BudgetArgs,
}

/// The profile of one validated filter, rendered in `format`.
pub fn render(prog: &cbpf::Program, format: DecompileFormat, budget: &mut seccomp::analysis::Budget) -> Result<String> {
    let reading = policy::read(prog, budget).map_err(Failure::rejected)?;
    let profile = policy::decompile(&reading).map_err(Failure::rejected)?;
    Ok(match format {
        DecompileFormat::Oci => {
            let mut s = serde_json::to_string_pretty(&profile).map_err(Failure::rejected)?;
            s.push('\n');
            s
        }
        DecompileFormat::Text => profile.text_lines().iter().map(|l| format!("{l}\n")).collect(),
    })
}

/// `bpfconv decompile`.
pub fn decompile(args: &DecompileArgs) -> Result<i32> {
    let insns = args.source.read()?;
    let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp)?;
    let mut budget = args.budget.budget();
    let text = render(&prog, args.format, &mut budget)?;
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
    Ok(0)
}
