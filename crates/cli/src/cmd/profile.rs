//! Reading a profile (OCI, Docker, seccompiler) into its meaning, with the
//! selection flags `compile`, `equiv` and `decompile --approximate` share.

use clap::{Args, ValueEnum};
use policy::profile::{Format, Meaning, Selection, DOCKER_DEFAULT_CAPS, TABLES_KERNEL};
use seccomp::Arch;

use crate::fail::{Failure, Result};
use crate::io::read_input;

/// A profile's format (`--from` of `compile`, `--profile` of `equiv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileFormat {
    /// The OCI runtime spec's linux.seccomp object, as runc applies it with libseccomp.
    Oci,
    /// A Docker/Podman profile file (archMap, includes/excludes), selected as moby does.
    Docker,
    /// rust-vmm seccompiler's JSON (per-thread filters).
    Seccompiler,
}

impl ProfileFormat {
    pub fn format(self) -> Format {
        match self {
            ProfileFormat::Oci => Format::Oci,
            ProfileFormat::Docker => Format::Docker,
            ProfileFormat::Seccompiler => Format::Seccompiler,
        }
    }
}

/// What selects the filter a profile means on one machine.
#[derive(Args, Debug, Clone)]
pub struct SelectionArgs {
    /// The machine's arch (runc's native arch; Docker's archMap entry and includes/excludes arches; seccompiler's target), then arches added as `architectures` entries are; default: this host's.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    arch: Vec<String>,
    /// The container's bounding capabilities for Docker's includes/excludes caps (`CAP_` optional; default: Docker's 14).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    caps: Option<Vec<String>>,
    /// The kernel version.major for Docker's minKernel (default: 6.18, the syscall tables' kernel).
    #[arg(long, value_name = "X.Y")]
    kernel: Option<String>,
    /// Which of a seccompiler file's filters (one per thread kind).
    #[arg(long, value_name = "NAME")]
    thread: Option<String>,
}

/// This host's arch, as a profile's native arch.
fn host_arch() -> Arch {
    std::env::consts::ARCH.parse().unwrap_or(Arch::X86_64)
}

impl SelectionArgs {
    pub fn selection(&self) -> Result<Selection> {
        let mut arches = Vec::new();
        for a in &self.arch {
            arches.push(a.parse::<Arch>().map_err(|e| Failure::usage(format!("--arch {a}: {e}")))?);
        }
        if arches.is_empty() {
            arches.push(host_arch());
        }
        let caps = match &self.caps {
            None => DOCKER_DEFAULT_CAPS.iter().map(|c| c.to_string()).collect(),
            Some(list) => list
                .iter()
                .filter(|c| !c.is_empty())
                .map(|c| {
                    let c = c.to_ascii_uppercase();
                    if c.starts_with("CAP_") {
                        c
                    } else {
                        format!("CAP_{c}")
                    }
                })
                .collect(),
        };
        let kernel = match &self.kernel {
            None => TABLES_KERNEL,
            Some(k) => {
                let bad = || Failure::usage(format!("--kernel {k}: expected <version>.<major>, such as 6.18"));
                let (a, b) = k.split_once('.').ok_or_else(bad)?;
                (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)
            }
        };
        Ok(Selection { arches, caps, kernel, thread: self.thread.clone() })
    }
}

/// Does `bytes` hold a JSON object (a profile rather than a filter)?
pub fn is_profile(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(bytes);
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v.is_object())
}

/// The meaning of the profile in `bytes` (read from `path`).
pub fn meaning_of(path: &str, bytes: &[u8], format: Option<ProfileFormat>, sel: &Selection) -> Result<Meaning> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| Failure::rejected(format!("{path}: not UTF-8 text: {e}")))?;
    policy::profile::read(text, format.map(ProfileFormat::format), sel)
        .map_err(|e| Failure::rejected(format!("{path}: {e}")))
}

/// Reads the profile at `path` (`-`: stdin).
pub fn load(path: &str, format: Option<ProfileFormat>, sel: &Selection) -> Result<Meaning> {
    let bytes = read_input(path)?;
    meaning_of(path, &bytes, format, sel)
}

/// Prints what the reading skipped or adjusted, and the install flags.
pub fn print_notes(m: &Meaning) {
    for n in &m.notes {
        eprintln!("note: {n}");
    }
    if !m.flags.is_empty() {
        eprintln!("note: the profile asks for the filter to be installed with {}", m.flags.join(" | "));
    }
}
