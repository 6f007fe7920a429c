//! `bpfconv analyze`: constant-action analysis (FORMATS.md §3), the kernel's
//! constant-action cache, the policy per action and an audit.

use clap::{Args, ValueEnum};
use seccomp::analysis::{self, ActionResult};
use seccomp::{Action, Arch};

use crate::cmd::disasm::parse_arch;
use crate::fail::{Failure, Result};
use crate::io::FileArgs;

use crate::out::{outln, Out};

/// Output of `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum AnalyzeFormat {
    #[default]
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    source: FileArgs,
    /// Arch whose syscall table to analyse.
    #[arg(long, default_value = "x86_64")]
    arch: String,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: AnalyzeFormat,
    /// Text output: also print the policy: the default action, then per action the syscalls by name on every arch the filter handles, with 64-bit argument conditions.
    #[arg(long)]
    explain: bool,
    /// Text output: also print audit findings.
    #[arg(long)]
    audit: bool,
    #[command(flatten)]
    budget: super::BudgetArgs,
}

/// The kernel whose constant-action cache covers `arch`, as (native arch, table size).
fn cache_for(arch: Arch) -> Option<(u32, u32)> {
    let kernels = [
        Arch::X86_64,
        Arch::Aarch64,
        Arch::Riscv64,
        Arch::S390x,
        Arch::Ppc64le,
        Arch::Arm,
        Arch::Loongarch64,
        Arch::M68k,
        Arch::Parisc64,
        Arch::Sh,
        Arch::Sheb,
    ];
    for k in kernels {
        let Some(c) = seccomp::cache::cache_arches(k) else { continue };
        if c.native.arch == arch {
            return c.native.nr.map(|n| (c.native.arch.audit_arch(), n));
        }
        if let Some(compat) = c.compat.filter(|c| c.arch == arch) {
            return compat.nr.map(|n| (c.native.arch.audit_arch(), n));
        }
    }
    None
}

/// `bpfconv analyze`.
pub fn analyze(args: &AnalyzeArgs) -> Result<i32> {
    let mut sink = Out::stdout();
    let insns = args.source.read()?;
    let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp)?;
    let arch = parse_arch(Some(&args.arch))?.unwrap_or(Arch::X86_64);
    let audit_arch = arch.audit_arch();
    let table = arch.syscalls();
    let mut nrs: Vec<u32> = table.map(|t| t.iter().map(|(nr, _)| nr).collect()).unwrap_or_default();
    let fail = |e: analysis::AnalysisError| Failure::rejected(e);
    nrs.extend(analysis::compared_nrs(&prog, audit_arch).map_err(fail)?);
    nrs.sort_unstable();
    nrs.dedup();
    let mut budget = args.budget.budget();
    let entries = analysis::analyze_in(&prog, audit_arch, nrs.iter().copied(), &mut budget).map_err(fail)?;
    let cache: Vec<u32> = match cache_for(arch) {
        Some((native, n)) => seccomp::cache::kernel_cache_allow(prog.original(), audit_arch, n, native).allowed(),
        None => Vec::new(),
    };
    let name = |nr: u32| table.and_then(|t| t.name(nr));
    match args.format {
        AnalyzeFormat::Json => {
            let entries: Vec<serde_json::Value> = entries
                .iter()
                .map(|e| {
                    let mut o = serde_json::Map::new();
                    o.insert("nr".into(), e.nr.into());
                    o.insert("name".into(), name(e.nr).map(Into::into).unwrap_or(serde_json::Value::Null));
                    match &e.result {
                        ActionResult::Constant(a) => {
                            o.insert("action".into(), (*a).into());
                        }
                        ActionResult::Depends(fields) => {
                            o.insert("action".into(), serde_json::Value::Null);
                            let d: Vec<serde_json::Value> = fields.iter().map(|f| f.to_string().into()).collect();
                            o.insert("depends".into(), d.into());
                        }
                    }
                    serde_json::Value::Object(o)
                })
                .collect();
            let out = serde_json::json!({ "arch": audit_arch, "entries": entries, "kernel_cache_allow": cache });
            outln!(sink, "{out}")?;
        }
        AnalyzeFormat::Text => {
            outln!(sink, "arch {arch} ({audit_arch:#010x}): {} syscall numbers analysed", entries.len())?;
            let constant = entries.iter().filter(|e| matches!(e.result, ActionResult::Constant(_))).count();
            outln!(sink, "constant action: {constant}; depends on arguments or ip: {}", entries.len() - constant)?;
            outln!(
                sink,
                "kernel constant-action cache (always ALLOW, never runs the filter): {} numbers",
                cache.len()
            )?;
            // x32's numbers (bit 30) on x86_64 are named from x32's table.
            let x32 = (arch == Arch::X86_64).then(|| Arch::X32.syscalls()).flatten();
            let text_name = |nr: u32| match (name(nr), x32.and_then(|t| t.name(nr))) {
                (Some(n), _) => n.to_string(),
                (None, Some(n)) => format!("x32:{n}"),
                (None, None) => format!("{nr:#x}"),
            };
            for e in &entries {
                let n = text_name(e.nr);
                match &e.result {
                    ActionResult::Constant(a) => outln!(sink, "  {:>10} {n:<24} {}", e.nr, Action::from_u32(*a))?,
                    ActionResult::Depends(f) => {
                        let f: Vec<String> = f.iter().map(|f| f.to_string()).collect();
                        outln!(sink, "  {:>10} {n:<24} depends on {}", e.nr, f.join(", "))?;
                    }
                }
            }
            if args.explain {
                // Every arch the filter handles, numbers by name, 64-bit
                // argument conditions (`policy::read`, on `analysis::explain_in`).
                outln!(sink, "\npolicy:")?;
                let reading = policy::read(&prog, &mut budget).map_err(fail)?;
                for line in policy::explain_lines(&reading) {
                    outln!(sink, "{line}")?;
                }
            }
            if args.audit {
                let findings = analysis::audit_in(&prog, &mut budget).map_err(fail)?;
                outln!(sink, "\naudit: {} findings", findings.len())?;
                for f in &findings {
                    outln!(sink, "  {f}")?;
                }
            }
        }
    }
    sink.finish()?;
    Ok(0)
}
