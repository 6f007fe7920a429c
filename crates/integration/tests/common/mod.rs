//! Helpers shared by the integration tests: listing a testdata folder's
//! files, running converted seccomp filters on rbpf's interpreter, driving
//! the distribution's libseccomp.

#![allow(dead_code)]

pub mod filetest;

use std::path::{Path, PathBuf};

/// The Python that has the distribution's libseccomp bindings
/// (python3-seccomp), whatever `python3` is first on PATH.
pub const PYTHON: &str = "/usr/bin/python3";

/// testdata/profiles: the profiles and the scripts that drive libseccomp.
pub fn profiles_dir() -> PathBuf {
    test_kit::corpus::testdata().join("profiles")
}

/// Can the distribution's libseccomp be driven from Python here? Where not,
/// `test_data::require` says so (a visible skip, a failure under `CI=true`).
pub fn libseccomp(test: &str) -> bool {
    let probe = match std::process::Command::new(PYTHON).args(["-c", "import seccomp"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr);
            Err(format!("{PYTHON} cannot import seccomp: {}", stderr.lines().last().unwrap_or("").trim()))
        }
        Err(e) => Err(format!("{PYTHON}: {e}")),
    };
    test_data::require::have(test, test_data::require::Need::Libseccomp, probe).is_some()
}

/// The files of `dir` whose extension is `ext`, sorted by path.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    test_data::paths::files_ending(dir, &format!(".{ext}")).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a converted program on rbpf's interpreter with `ctx` as its memory
/// (r1 points at it) and returns the low 32 bits of r0, the filter's result.
pub fn run_rbpf(insns: &[ebpf::Insn], ctx: &mut [u8]) -> Result<u32, String> {
    let bytes = ebpf::encode(insns);
    let vm = rbpf::EbpfVmRaw::new(Some(&bytes)).map_err(|e| format!("rbpf load: {e}"))?;
    let r0 = vm.execute_program(ctx).map_err(|e| format!("rbpf run: {e}"))?;
    Ok(r0 as u32)
}

/// Runs one converted program on many contexts with a single rbpf VM
/// (loading and verifying once); one result per context, in order.
pub fn run_rbpf_many(insns: &[ebpf::Insn], ctxs: &mut [[u8; 64]]) -> Result<Vec<Result<u32, String>>, String> {
    let bytes = ebpf::encode(insns);
    let vm = rbpf::EbpfVmRaw::new(Some(&bytes)).map_err(|e| format!("rbpf load: {e}"))?;
    Ok(ctxs
        .iter_mut()
        .map(|ctx| vm.execute_program(ctx).map(|r0| r0 as u32).map_err(|e| format!("rbpf run: {e}")))
        .collect())
}
