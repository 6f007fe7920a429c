//! `bpfconv analyze`: constant-action analysis (FORMATS.md §3), the kernel's
//! constant-action cache, the policy per action and an audit.

use clap::{Args, ValueEnum};
use seccomp::analysis::{self, ActionResult, PolicyEvent};
use seccomp::{Action, Arch};

use crate::cmd::disasm::parse_arch;
use crate::fail::{Failure, Result};
use crate::io::{read_classic, EndianArg, From};
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
    /// Seccomp filter file (`-` for stdin).
    file: String,
    /// Input syntax; auto-detected when absent.
    #[arg(long, value_enum)]
    from: Option<From>,
    /// Byte order of raw sock_filter records (filters exported on s390x, ppc64 or mips are big).
    #[arg(long, value_enum, default_value_t)]
    endian: EndianArg,
    /// Arch whose syscall table to analyse.
    #[arg(long, default_value = "x86_64")]
    arch: String,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: AnalyzeFormat,
    /// Text output: also print the policy per action (syscall lists and argument conditions).
    #[arg(long)]
    explain: bool,
    /// Text output: also print audit findings.
    #[arg(long)]
    audit: bool,
    /// Budget of the whole run: abstract instructions executed over every number analysed.
    #[arg(long, value_name = "N", default_value_t = analysis::Budget::DEFAULT_STEPS)]
    max_steps: u64,
    /// Budget of the whole run: paths `--explain` prints.
    #[arg(long, value_name = "N", default_value_t = analysis::Budget::DEFAULT_PATHS)]
    max_paths: u64,
    /// Budget of the whole run: conditions `--explain` prints (bounds its output).
    #[arg(long, value_name = "N", default_value_t = analysis::Budget::DEFAULT_CONDS)]
    max_conds: u64,
}

/// Why streaming the policy stopped: the analysis (its budget) or the output.
struct Stop(Failure);

impl std::convert::From<analysis::AnalysisError> for Stop {
    fn from(e: analysis::AnalysisError) -> Self {
        Stop(Failure::rejected(e))
    }
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
        let Some(c) = seccomp::arch::cache_arches(k) else { continue };
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
    let insns = read_classic(&args.file, args.from, args.endian)?;
    let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp)?;
    let arch = parse_arch(Some(&args.arch))?.unwrap_or(Arch::X86_64);
    let audit_arch = arch.audit_arch();
    let table = arch.syscalls();
    let mut nrs: Vec<u32> = table.map(|t| t.iter().map(|(nr, _)| nr).collect()).unwrap_or_default();
    let fail = |e: analysis::AnalysisError| Failure::rejected(e);
    nrs.extend(analysis::compared_nrs(&prog, audit_arch).map_err(fail)?);
    nrs.sort_unstable();
    nrs.dedup();
    let mut budget = analysis::Budget::new(args.max_steps, args.max_paths, args.max_conds);
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
            for e in &entries {
                let n = name(e.nr).map(str::to_string).unwrap_or_else(|| format!("{:#x}", e.nr));
                match &e.result {
                    ActionResult::Constant(a) => outln!(sink, "  {:>10} {n:<24} {}", e.nr, Action::from_u32(*a))?,
                    ActionResult::Depends(f) => {
                        let f: Vec<String> = f.iter().map(|f| f.to_string()).collect();
                        outln!(sink, "  {:>10} {n:<24} depends on {}", e.nr, f.join(", "))?;
                    }
                }
            }
            if args.explain {
                outln!(sink, "\npolicy per action:")?;
                // Printed as proved: nothing but the current path is held.
                let names = |nrs: &[u32]| -> Vec<String> {
                    nrs.iter().map(|nr| name(*nr).map(str::to_string).unwrap_or_else(|| nr.to_string())).collect()
                };
                let streamed = analysis::explain_in(&prog, audit_arch, nrs.iter().copied(), &mut budget, |event| {
                    match event {
                        // Paths to computed values are not printed.
                        PolicyEvent::Action { action: None, .. }
                        | PolicyEvent::Path { action: None, .. }
                        | PolicyEvent::Truncated { action: None, .. } => {}
                        PolicyEvent::Action { action: Some(a), always } => {
                            outln!(sink, "{}:", Action::from_u32(a)).map_err(Stop)?;
                            if !always.is_empty() {
                                outln!(sink, "  always: {}", names(always).join(" ")).map_err(Stop)?;
                            }
                        }
                        PolicyEvent::Path { action: Some(_), nr, conds } => {
                            let n = names(&[nr]).join("");
                            let conds: Vec<String> = conds.iter().map(|c| c.to_string()).collect();
                            outln!(
                                sink,
                                "  {n} when {}",
                                if conds.is_empty() { "always".to_string() } else { conds.join(" && ") }
                            )
                            .map_err(Stop)?;
                        }
                        PolicyEvent::Truncated { action: Some(_), nr } => {
                            outln!(sink, "  {}: (more paths not shown)", names(&[nr]).join("")).map_err(Stop)?;
                        }
                    }
                    Ok::<(), Stop>(())
                });
                streamed.map_err(|Stop(f)| f)?;
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
