//! A Docker/Podman profile file, selected for one machine and container
//! as moby's `setupSeccomp()` (github.com/moby/profiles/seccomp,
//! seccomp_linux.go) turns it into the OCI `linux.seccomp` object runc
//! gets:
//!
//! - `architectures` and `archMap` together are refused; with `archMap`,
//!   the entry whose `architecture` is the native arch gives
//!   `architectures` (it and its `subArchitectures`). moby finds the
//!   native arch from Go's `GOARCH` through two tables; where they do not
//!   meet (`loong64` is looked up as `loongarch64`, `mipsle` as `mipsel`,
//!   and big-endian `mips` is in neither) no entry is selected, as on
//!   such a machine.
//! - An entry is dropped when its `excludes` match (the native arch is in
//!   `arches`, any of `caps` is in the bounding set, or the kernel is at
//!   least `minKernel`) or its `includes` do not (the native arch not in
//!   `arches`, a cap of `caps` missing, the kernel older than `minKernel`).
//!   `arches` hold moby's native names (`amd64`, `x86`, `arm64`, `arm`,
//!   `s390x`, `ppc64le`, `riscv64`, ...).
//! - `name` is the one-name form of `names`; both together are refused.
//! - No `defaultAction` and no syscalls: seccomp is off
//!   ([`ProfileError::Disabled`]).
//!
//! The selection's inputs are [`Selection`]: the native arch, the
//! container's bounding capabilities (Docker's 14 by default) and the
//! kernel's `version.major` (the tables' 6.18 by default).

use serde::Deserialize;

use super::{ProfileError, Selection};
use crate::oci::{null_default, Arg, Profile, Syscall};
use seccomp::Arch;

/// A Docker/Podman profile file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DockerProfile {
    #[serde(default)]
    pub default_action: String,
    #[serde(default)]
    pub default_errno_ret: Option<u32>,
    #[serde(default, deserialize_with = "null_default")]
    pub architectures: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub arch_map: Vec<ArchMapEntry>,
    #[serde(default, deserialize_with = "null_default")]
    pub syscalls: Vec<DockerSyscall>,
    #[serde(default)]
    pub flags: Option<Vec<String>>,
}

/// One `archMap` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchMapEntry {
    pub architecture: String,
    #[serde(default, deserialize_with = "null_default")]
    pub sub_architectures: Vec<String>,
}

/// One `syscalls` entry with its conditions of inclusion.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DockerSyscall {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub names: Vec<String>,
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub errno_ret: Option<u32>,
    #[serde(default, deserialize_with = "null_default")]
    pub args: Vec<Arg>,
    #[serde(default)]
    pub includes: Option<Filter>,
    #[serde(default)]
    pub excludes: Option<Filter>,
}

/// `includes` / `excludes`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    #[serde(default, deserialize_with = "null_default")]
    pub caps: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub arches: Vec<String>,
    #[serde(default)]
    pub min_kernel: Option<String>,
}

/// moby's name for the native arch (`goToNative[runtime.GOARCH]`) and the
/// `SCMP_ARCH_*` its `nativeToSeccomp` gives that name, if any.
pub fn moby_native(arch: Arch) -> Option<(&'static str, Option<&'static str>)> {
    Some(match arch {
        Arch::I386 => ("x86", Some("SCMP_ARCH_X86")),
        Arch::X86_64 => ("amd64", Some("SCMP_ARCH_X86_64")),
        Arch::Arm => ("arm", Some("SCMP_ARCH_ARM")),
        Arch::Aarch64 => ("arm64", Some("SCMP_ARCH_AARCH64")),
        Arch::Loongarch64 => ("loongarch64", None),
        Arch::Mips64 => ("mips64", Some("SCMP_ARCH_MIPS64")),
        Arch::Mips64n32 => ("mips64n32", Some("SCMP_ARCH_MIPS64N32")),
        Arch::Mipsel64 => ("mipsel64", Some("SCMP_ARCH_MIPSEL64")),
        Arch::Mipsel64n32 => ("mips3l64n32", Some("SCMP_ARCH_MIPSEL64N32")),
        Arch::Mipsel => ("mipsel", None),
        Arch::Ppc => ("ppc", Some("SCMP_ARCH_PPC")),
        Arch::Ppc64 => ("ppc64", Some("SCMP_ARCH_PPC64")),
        Arch::Ppc64le => ("ppc64le", Some("SCMP_ARCH_PPC64LE")),
        Arch::Riscv64 => ("riscv64", Some("SCMP_ARCH_RISCV64")),
        Arch::S390 => ("s390", Some("SCMP_ARCH_S390")),
        Arch::S390x => ("s390x", Some("SCMP_ARCH_S390X")),
        Arch::Mips => ("", None),
        _ => return None,
    })
}

/// `X.Y` as moby's `KernelVersion` reads it.
fn kernel_version(place: &str, text: &str) -> Result<Option<(u64, u64)>, ProfileError> {
    if text.is_empty() {
        return Ok(None);
    }
    let bad =
        || ProfileError::invalid(place, format!("invalid kernel version `{text}`, expected \"<kernel>.<major>\""));
    let (a, b) = text.split_once('.').ok_or_else(bad)?;
    let parse = |s: &str| s.parse::<u8>().map(u64::from).map_err(|_| bad());
    let v = (parse(a)?, parse(b)?);
    if v == (0, 0) {
        return Err(bad());
    }
    Ok(Some(v))
}

/// The OCI profile moby makes of `p` for `sel`, with the index each kept
/// entry had in the file.
pub fn select(p: &DockerProfile, sel: &Selection) -> Result<(Profile, Vec<usize>), ProfileError> {
    if p.default_action.is_empty() && p.syscalls.is_empty() {
        return Err(ProfileError::Disabled);
    }
    if !p.architectures.is_empty() && !p.arch_map.is_empty() {
        return Err(ProfileError::invalid(
            "architectures",
            "both 'architectures' and 'archMap' are specified in the seccomp profile, use either 'architectures' or 'archMap'",
        ));
    }
    let native_arch = sel.native_arch();
    let (native, scmp) = moby_native(native_arch)
        .ok_or_else(|| ProfileError::invalid("--arch", format!("Docker does not run on {native_arch}")))?;
    let mut architectures = p.architectures.clone();
    if let Some(scmp) = scmp {
        if let Some(e) = p.arch_map.iter().find(|e| e.architecture == scmp) {
            architectures.push(e.architecture.clone());
            architectures.extend(e.sub_architectures.iter().cloned());
        }
    }
    let has_cap = |c: &String| sel.caps.iter().any(|have| have == c);
    let mut syscalls = Vec::new();
    let mut kept = Vec::new();
    for (i, e) in p.syscalls.iter().enumerate() {
        let place = format!("syscalls[{i}]");
        let names = match (e.name.is_empty(), e.names.is_empty()) {
            (false, false) => {
                return Err(ProfileError::invalid(
                    place,
                    "both 'name' and 'names' are specified in the seccomp profile, use either 'name' or 'names'",
                ))
            }
            (false, true) => vec![e.name.clone()],
            _ => e.names.clone(),
        };
        let at_least = |f: &Filter, what: &str| {
            kernel_version(&format!("{place}.{what}.minKernel"), f.min_kernel.as_deref().unwrap_or(""))
        };
        if let Some(x) = &e.excludes {
            if x.arches.iter().any(|a| a == native) || x.caps.iter().any(has_cap) {
                continue;
            }
            if at_least(x, "excludes")?.is_some_and(|v| sel.kernel >= v) {
                continue;
            }
        }
        if let Some(inc) = &e.includes {
            if !inc.arches.is_empty() && !inc.arches.iter().any(|a| a == native) {
                continue;
            }
            if !inc.caps.iter().all(has_cap) {
                continue;
            }
            if at_least(inc, "includes")?.is_some_and(|v| sel.kernel < v) {
                continue;
            }
        }
        syscalls.push(Syscall { names, action: e.action.clone(), errno_ret: e.errno_ret, args: e.args.clone() });
        kept.push(i);
    }
    let profile = Profile {
        default_action: p.default_action.clone(),
        default_errno_ret: p.default_errno_ret,
        architectures,
        syscalls,
        flags: p.flags.clone(),
    };
    Ok((profile, kept))
}
