//! `bpfconv equiv`: are two seccomp filters (or stacks) equal on every
//! `struct seccomp_data`? Exit 0 equivalent, 1 differ (with
//! counterexamples), 3 undecided within the budget.

use clap::{Args, ValueEnum};
use equiv::{Compare, Counterexample, EquivError, Limits, Options, Side, Verdict};

use crate::cmd::profile::{is_profile, meaning_of, print_notes, ProfileFormat, SelectionArgs};
use crate::fail::{Failure, Result};
use crate::io::{parse_classic_endian, read_input, EndianArg, From};
use crate::out::{outln, Out};
use policy::profile::Meaning;

/// The exit code of an undecided comparison (FORMATS-EXTENSIONS.md §1).
pub const UNDECIDED: i32 = 3;

/// `--compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CompareArg {
    /// The full 32-bit return value.
    #[default]
    Value,
    /// The action only (SECCOMP_RET_ACTION_FULL), data ignored.
    Action,
}

/// Output of `equiv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum EquivFormat {
    #[default]
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct EquivArgs {
    /// Left side: a filter file, or a stack `NEWEST,...,OLDEST` (comma-separated files, newest first, combined as the kernel does).
    left: String,
    /// Right side, the same way.
    right: String,
    /// What must be equal.
    #[arg(long, value_enum, default_value_t)]
    compare: CompareArg,
    /// Print one counterexample per differing (arch, nr) class instead of the first.
    #[arg(long)]
    all: bool,
    /// Output form.
    #[arg(long, value_enum, default_value_t)]
    format: EquivFormat,
    /// Input syntax of every file; auto-detected when absent.
    #[arg(long, value_enum)]
    from: Option<From>,
    /// Byte order of raw sock_filter records.
    #[arg(long, value_enum, default_value_t)]
    endian: EndianArg,
    /// Budget: abstract steps (classes, specialisation, bit-blasting) over the whole run.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_steps)]
    max_steps: u64,
    /// Budget: SAT solver conflicts over the whole run.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_conflicts)]
    max_conflicts: u64,
    /// Budget: clauses of one SAT problem (bounds memory).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_clauses)]
    max_clauses: u64,
    /// A side that is a JSON profile is read in this format (detected when absent).
    #[arg(long, value_enum)]
    profile: Option<ProfileFormat>,
    #[command(flatten)]
    selection: SelectionArgs,
}

/// The files of one side: `FILE` or `NEWEST,...,OLDEST`. A name that
/// exists as a file is one file even if it holds a comma.
fn side_files(spec: &str) -> Vec<&str> {
    if spec == "-" || std::path::Path::new(spec).exists() {
        vec![spec]
    } else {
        spec.split(',').collect()
    }
}

/// One side: its filters (newest first), and the profile it was read
/// from (a side that is a profile is its reference program).
struct Loaded {
    filters: Vec<cbpf::Program>,
    profile: Option<Meaning>,
}

fn load_side(spec: &str, args: &EquivArgs) -> Result<Loaded> {
    let files = side_files(spec);
    if files.iter().any(|f| f.is_empty()) {
        return Err(Failure::usage(format!("`{spec}`: an empty file name in a stack")));
    }
    let mut filters = Vec::new();
    let mut profile = None;
    for f in &files {
        let bytes = read_input(f)?;
        if is_profile(&bytes) {
            if files.len() > 1 {
                return Err(Failure::usage(format!("`{spec}`: {f} is a profile; a stack holds filters")));
            }
            let m = meaning_of(f, &bytes, args.profile, &args.selection.selection()?)?;
            print_notes(&m);
            let reference =
                policy::compile::reference_program(&m).map_err(|e| Failure::rejected(format!("{f}: {e}")))?;
            filters.push(reference);
            profile = Some(m);
            continue;
        }
        let insns = parse_classic_endian(&bytes, args.from, args.endian.endian())
            .map_err(|e| Failure { code: e.code, message: format!("{f}: {}", e.message) })?;
        filters.push(cbpf::validate(&insns, cbpf::Mode::Seccomp).map_err(|e| Failure::rejected(format!("{f}: {e}")))?);
    }
    Ok(Loaded { filters, profile })
}

/// The syscall a counterexample calls, by a side's profile: `x86_64:statmount`.
fn syscall_name(c: &Counterexample, sides: &[&Loaded]) -> Option<String> {
    let m = sides.iter().find_map(|s| s.profile.as_ref())?;
    let value = m.arches.iter().find(|a| a.audit_arch == c.data.arch)?;
    let policy::profile::PartKind::View(v) = value.part(c.data.nr as u32) else { return None };
    let view = value.views.get(v)?;
    let name = view.arch.syscalls()?.name(c.data.nr as u32)?;
    Some(format!("{}:{name}", view.arch))
}

/// A counterexample as a FORMATS.md §2 vector (`action` is the left
/// side's result) with both results, and the syscall's name when a side
/// is a profile.
fn vector(c: &Counterexample, name: Option<String>) -> serde_json::Value {
    let mut v = serde_json::json!({
        "arch": c.data.arch,
        "nr": c.data.nr,
        "ip": c.data.instruction_pointer,
        "args": c.data.args,
        "action": c.left,
        "left": c.left,
        "right": c.right,
    });
    if let (Some(name), Some(o)) = (name, v.as_object_mut()) {
        o.insert("syscall".into(), name.into());
    }
    v
}

/// `bpfconv equiv`.
pub fn equiv(args: &EquivArgs) -> Result<i32> {
    if side_files(&args.left).contains(&"-") && side_files(&args.right).contains(&"-") {
        return Err(Failure::usage("stdin (`-`) can be read only once"));
    }
    let left = load_side(&args.left, args)?;
    let right = load_side(&args.right, args)?;
    let (l, r) = (
        Side::stack(&left.filters).map_err(Failure::rejected)?,
        Side::stack(&right.filters).map_err(Failure::rejected)?,
    );
    let sides = [&left, &right];
    let options = Options {
        compare: match args.compare {
            CompareArg::Value => Compare::Value,
            CompareArg::Action => Compare::Action,
        },
        all: args.all,
        limits: Limits {
            max_steps: args.max_steps,
            max_conflicts: args.max_conflicts,
            max_clauses: args.max_clauses,
            ..Limits::default()
        },
    };
    let (verdict, stats) = match equiv::check_with_stats(l, r, &options) {
        Ok(v) => v,
        Err(EquivError::Budget { kind, limit }) => {
            return Err(Failure {
                code: UNDECIDED,
                message: format!("undecided: more than {limit} {kind} (raise it with {} N)", kind.flag()),
            })
        }
        Err(e) => return Err(Failure::rejected(e)),
    };
    let mut out = Out::stdout();
    let exit = match &verdict {
        Verdict::Equal => 0,
        Verdict::Differ(_) => 1,
    };
    match args.format {
        EquivFormat::Json => {
            let cexs: Vec<serde_json::Value> = match &verdict {
                Verdict::Equal => Vec::new(),
                Verdict::Differ(c) => c.iter().map(|c| vector(c, syscall_name(c, &sides))).collect(),
            };
            let doc = serde_json::json!({
                "verdict": if exit == 0 { "equivalent" } else { "differ" },
                "compare": if options.compare == Compare::Value { "value" } else { "action" },
                "counterexamples": cexs,
                "classes": stats.classes,
                "solver_calls": stats.solver_calls,
                "conflicts": stats.conflicts,
            });
            outln!(out, "{doc}")?;
        }
        EquivFormat::Text => match &verdict {
            Verdict::Equal => outln!(
                out,
                "equivalent: {} classes of (arch, nr), {} solver calls, {} conflicts",
                stats.classes,
                stats.solver_calls,
                stats.conflicts
            )?,
            Verdict::Differ(cexs) => {
                outln!(out, "differ: {} counterexample{}", cexs.len(), if cexs.len() == 1 { "" } else { "s" })?;
                for c in cexs {
                    outln!(out, "{}", vector(c, syscall_name(c, &sides)))?;
                }
            }
        },
    }
    out.finish()?;
    Ok(exit)
}
