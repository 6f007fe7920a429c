//! `bpfconv analyze`: constant-action analysis (FORMATS.md §3).

use clap::{Args, ValueEnum};

use crate::fail::Result;
use crate::io::From;

/// Output of `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum AnalyzeFormat {
    #[default]
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Seccomp filter file (`-` for stdin).
    file: String,
    /// Input syntax; auto-detected when absent.
    #[arg(long, value_enum)]
    from: Option<From>,
    /// Arch whose syscall table to analyse.
    #[arg(long, default_value = "x86_64")]
    arch: String,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: AnalyzeFormat,
}

/// `bpfconv analyze`.
pub fn analyze(_args: &AnalyzeArgs) -> Result<i32> {
    Err(crate::fail::Failure::rejected("analyze: not wired yet"))
}
