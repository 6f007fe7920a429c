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
    /// The machine the profile is for (runc's native arch, which libseccomp adds to every filter): the profile is proved by equiv to mean the filter there, or refused (exit 1). Default: the profile's first arch, unproved.
    #[arg(long, value_name = "ARCH")]
    arch: Option<String>,
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
/// runc would on `native`, by default the profile's first arch).
fn approximate(prog: &cbpf::Program, args: &DecompileArgs, native: Option<seccomp::Arch>) -> Result<(String, i32)> {
    let mut budget = args.budget.budget();
    let reading = policy::read(prog, &mut budget).map_err(Failure::rejected)?;
    let d = policy::decompile_with(&reading, true).map_err(Failure::rejected)?;
    let text = profile_text(&d.profile, args.format)?;
    for a in &d.approximations {
        eprintln!("note: approximated: {a}");
    }
    match differences(prog, &d.profile, native, "the approximate profile")? {
        None => eprintln!("note: proved: the profile means exactly what the filter does"),
        Some(lines) => {
            eprintln!("note: the profile differs from the filter in {} class(es) of (arch, nr):", lines.len());
            for l in lines {
                eprintln!("differs: {l}");
            }
        }
    }
    Ok((text, 0))
}

/// `--arch` without `--approximate`: the exact profile, proved to mean the
/// filter on a `native` machine, or the first class where it does not.
fn exact_on(prog: &cbpf::Program, args: &DecompileArgs, native: seccomp::Arch) -> Result<(String, i32)> {
    let reading = policy::read(prog, &mut args.budget.budget()).map_err(Failure::rejected)?;
    let profile = policy::decompile(&reading).map_err(Failure::rejected)?;
    let text = profile_text(&profile, args.format)?;
    proved_on(prog, &profile, native)?;
    Ok((text, 0))
}

/// `Ok` once `equiv --all` proves that `profile`, read as runc would on a
/// `native` machine, means `prog`; else the first class where it does not
/// (exit 1), or undecided (exit 3). `decompile --arch` and `dump --pid
/// --decompile --arch` refuse an unproved profile with it.
pub(crate) fn proved_on(prog: &cbpf::Program, profile: &policy::Profile, native: seccomp::Arch) -> Result<()> {
    match differences(prog, profile, Some(native), "the profile")?.and_then(|l| l.into_iter().next()) {
        None => Ok(()),
        Some(first) => Err(Failure::rejected(format!(
            "with {native} native (the machine's arch, which libseccomp adds to every filter runc makes) the profile \
             does not mean the filter: {first}"
        ))),
    }
}

/// `--arch ARCH` as the machine a profile is for (a usage error, exit 2).
pub(crate) fn native_arch(arch: Option<&str>) -> Result<Option<seccomp::Arch>> {
    arch.map(|a| a.parse::<seccomp::Arch>().map_err(|e| Failure::usage(format!("--arch {a}: {e}")))).transpose()
}

/// Where `profile`, read as runc would on a `native` machine (default: its
/// first arch), differs from `prog` (`equiv --all`): `None` when proved
/// equal, else one line per differing class of (arch, nr). `what` names
/// the profile in a refusal of its reading.
fn differences(
    prog: &cbpf::Program,
    profile: &policy::Profile,
    native: Option<seccomp::Arch>,
    what: &str,
) -> Result<Option<Vec<String>>> {
    let machine = native.or(policy::profile::runc::first_arch(profile)).unwrap_or(seccomp::Arch::X86_64);
    let sel = policy::profile::Selection::native(machine);
    let meaning = policy::profile::runc::meaning(profile, &sel, policy::profile::Format::Oci)
        .map_err(|e| Failure::rejected(format!("{what}: {e}")))?;
    let reference = policy::compile::reference_program(&meaning).map_err(Failure::rejected)?;
    let options = equiv::Options { all: true, ..Default::default() };
    let name = |c: &equiv::Counterexample| {
        class_name(c.data.arch, c.data.nr as u32, meaning.arches.iter().any(|a| a.audit_arch == c.data.arch))
    };
    match equiv::check(equiv::Side::single(prog), equiv::Side::single(&reference), &options) {
        Ok(equiv::Verdict::Equal) => Ok(None),
        Ok(equiv::Verdict::Differ(cexs)) => Ok(Some(
            cexs.iter()
                .map(|c| {
                    let v = serde_json::json!({"arch": c.data.arch, "nr": c.data.nr, "ip": c.data.instruction_pointer,
                        "args": c.data.args, "action": c.left, "left": c.left, "right": c.right});
                    format!(
                        "{}: the filter returns {} ({:#010x}), the profile {} ({:#010x}): {v}",
                        name(c),
                        seccomp::Action::from_u32(c.left),
                        c.left,
                        seccomp::Action::from_u32(c.right),
                        c.right
                    )
                })
                .collect(),
        )),
        Err(equiv::EquivError::Budget { kind, limit }) => Err(Failure {
            code: crate::cmd::equiv::UNDECIDED,
            message: format!("where the profile differs is undecided: more than {limit} {kind}"),
        }),
        Err(e) => Err(Failure::rejected(e)),
    }
}

/// A differing class by its syscall: `x86_64:read`, `x32:read` (x32's
/// numbers are x86_64's arch value with `__X32_SYSCALL_BIT`), `x86_64:#600`
/// for a number without a name (as `seccomp_data.nr` holds it); an arch
/// value the profile does not list (`listed` false) by its number.
fn class_name(arch: u32, nr: u32, listed: bool) -> String {
    let abi = match seccomp::Arch::from_audit_arch(arch) {
        seccomp::Arch::X86_64 if nr & seccomp::arch::X32_SYSCALL_BIT != 0 => seccomp::Arch::X32,
        a => a,
    };
    match (listed, abi.syscalls().and_then(|t| t.name(nr))) {
        (true, Some(n)) => format!("{abi}:{n}"),
        (true, None) => format!("{abi}:#{nr}"),
        (false, _) => format!("arch {arch:#x} (not in the profile) nr {nr}"),
    }
}

/// `bpfconv decompile`.
pub fn decompile(args: &DecompileArgs) -> Result<i32> {
    let native = native_arch(args.arch.as_deref())?;
    let insns = args.source.read()?;
    let prog = cbpf::validate(&insns, cbpf::Mode::Seccomp)?;
    let mut budget = args.budget.budget();
    let (text, code) = match (args.approximate, native) {
        (true, _) => approximate(&prog, args, native)?,
        (false, Some(native)) => exact_on(&prog, args, native)?,
        (false, None) => (render(&prog, args.format, &mut budget)?, 0),
    };
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

#[cfg(test)]
mod tests {
    use super::class_name;

    #[test]
    fn classes_are_named_by_their_abis_syscall() {
        const X86_64: u32 = 0xc000_003e;
        assert_eq!(class_name(X86_64, 0, true), "x86_64:read");
        assert_eq!(class_name(X86_64, 0x4000_0000, true), "x32:read");
        assert_eq!(class_name(X86_64, 0x4000_0000 | 600, true), "x32:#1073742424");
        assert_eq!(class_name(X86_64, 600, true), "x86_64:#600");
        assert_eq!(class_name(0x4000_0003, 102, true), "i386:socketcall");
        assert_eq!(class_name(0x4000_0003, 102, false), "arch 0x40000003 (not in the profile) nr 102");
    }
}
