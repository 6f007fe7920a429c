//! `bpfconv dump`.

use std::io::Write;
use std::path::Path;

use clap::Args;

use crate::fail::{io, Failure, Result};
use crate::out::{out, outln, Out};

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Process whose seccomp filters to read (needs CAP_SYS_ADMIN).
    #[arg(long)]
    pid: i32,
    /// Directory to write the filters into as raw files (`<pid>-<n>.bpf`, oldest first);
    /// without it, print them as seccomp-tools style listings.
    #[arg(short, long)]
    output: Option<String>,
    /// Print each filter as the OCI `linux.seccomp` profile that means it (a JSON array,
    /// oldest first); exit 1 naming the filter and instruction where no profile can.
    #[arg(long, conflicts_with = "output")]
    decompile: bool,
    /// With --decompile: the machine the profiles are for (runc's native arch): each is proved by
    /// equiv to mean its filter there, or refused (exit 1). Default: unproved, as `decompile`.
    #[arg(long, value_name = "ARCH", requires = "decompile")]
    arch: Option<String>,
    /// With --decompile: the analysis budget, one for every filter of the process.
    #[command(flatten)]
    budget: super::BudgetArgs,
    /// With -o: replace existing files (a symlink is replaced, never followed).
    #[arg(long, requires = "output")]
    force: bool,
    /// With -o: byte order of the raw files written (default little, the x86-64 host's).
    #[arg(long, value_enum, default_value_t, requires = "output")]
    endian: crate::io::EndianArg,
}

/// `bpfconv dump`.
pub fn dump(args: &DumpArgs) -> Result<i32> {
    let native = super::decompile::native_arch(args.arch.as_deref())?;
    let filters = kernel::dump_filters(args.pid)?;
    if filters.is_empty() {
        eprintln!("process {} has no seccomp filters", args.pid);
        return Ok(0);
    }
    let mut out = Out::stdout();
    if args.decompile {
        let mut profiles = Vec::new();
        let mut budget = args.budget.budget();
        for (n, f) in filters.iter().enumerate() {
            // The failure's exit code kept (1, or 3 for a proof left undecided).
            let of = |e: Failure| Failure {
                code: e.code,
                message: format!("filter {n} of {} (oldest first): {}", filters.len(), e.message),
            };
            let prog = cbpf::validate(f, cbpf::Mode::Seccomp).map_err(|e| of(Failure::rejected(e)))?;
            let reading = policy::read(&prog, &mut budget).map_err(|e| of(Failure::rejected(e)))?;
            let profile = policy::decompile(&reading).map_err(|e| of(Failure::rejected(e)))?;
            if let Some(native) = native {
                super::decompile::proved_on(&prog, &profile, native).map_err(of)?;
            }
            profiles.push(profile);
        }
        let text = serde_json::to_string_pretty(&profiles).map_err(Failure::rejected)?;
        outln!(out, "{text}")?;
        out.finish()?;
        return Ok(0);
    }
    match &args.output {
        Some(dir) => write_filters(Path::new(dir), args.pid, &filters, args.force, args.endian.endian(), &mut out)?,
        None => {
            for (n, f) in filters.iter().enumerate() {
                outln!(out, "# filter {n} of {} (oldest first), {} instructions", filters.len(), f.len())?;
                out!(out, "{}", seccomp::disasm::disasm(f, Default::default()))?;
            }
        }
    }
    out.finish()?;
    Ok(0)
}

/// Writes each filter to `DIR/<pid>-<n>.bpf`. Files are created with O_EXCL
/// (which never follows a symlink); an existing name is refused unless
/// `force`, and then replaced by renaming a fresh O_EXCL temporary over it,
/// so a planted symlink is replaced itself and its target is never written.
pub fn write_filters(
    dir: &Path,
    pid: i32,
    filters: &[Vec<cbpf::Insn>],
    force: bool,
    endian: cbpf::raw::Endian,
    out: &mut Out,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    for (n, f) in filters.iter().enumerate() {
        let path = dir.join(format!("{pid}-{n}.bpf"));
        let bytes = cbpf::raw::encode_endian(f, endian);
        if force {
            crate::io::write_atomic(&path, |file| file.write_all(&bytes))?;
        } else {
            let shown = path.display();
            let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(Failure::rejected(format!("{shown} already exists (give --force to replace it)")))
                }
                Err(e) => return Err(io(format!("creating {shown}"))(e)),
            };
            file.write_all(&bytes).and_then(|()| file.sync_all()).map_err(io(format!("writing {shown}")))?;
        }
        outln!(out, "{}: {} instructions", path.display(), f.len())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;

    fn filters() -> Vec<Vec<cbpf::Insn>> {
        vec![vec![cbpf::Insn { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 }]]
    }

    #[test]
    fn a_planted_symlink_is_never_followed() {
        let (dir, victim, name) = crate::io::tests::planted_symlink("42-0.bpf", b"precious");
        let mut out = Out::stdout();
        let err = write_filters(dir.path(), 42, &filters(), false, cbpf::raw::Endian::Little, &mut out).unwrap_err();
        assert!(err.message.contains("already exists") && err.message.contains("--force"), "{}", err.message);
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&name).unwrap().file_type().is_symlink());

        write_filters(dir.path(), 42, &filters(), true, cbpf::raw::Endian::Little, &mut out).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&name).unwrap().file_type().is_file());
        assert_eq!(std::fs::read(&name).unwrap(), cbpf::raw::encode(&filters()[0]));
    }

    /// A file that cannot be created for another reason than being there
    /// says why, without the `--force` advice (procfs has no such entry).
    #[test]
    fn other_creation_errors_are_not_taken_for_an_existing_file() {
        let mut out = Out::stdout();
        let dir = Path::new("/proc/self");
        let err = write_filters(dir, 123, &filters(), false, cbpf::raw::Endian::Little, &mut out).unwrap_err();
        assert!(err.message.starts_with("creating /proc/self/123-0.bpf: "), "{}", err.message);
        assert!(!err.message.contains("--force"), "{}", err.message);
    }

    #[test]
    fn an_existing_file_is_refused_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let name = dir.path().join("7-0.bpf");
        std::fs::write(&name, b"old").unwrap();
        let mut out = Out::stdout();
        assert!(write_filters(dir.path(), 7, &filters(), false, cbpf::raw::Endian::Little, &mut out).is_err());
        assert_eq!(std::fs::read(&name).unwrap(), b"old");
    }
}
