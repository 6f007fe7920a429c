//! What a test needs from the host, and the one way a test says one is
//! missing.
//!
//! A test that needs something outside the repository (the running kernel's
//! seccomp, a socket filter, bpf(2), a tool such as `prlimit` or libseccomp)
//! probes for it and hands the probe's answer to [`have`] (or calls
//! [`missing`] itself). Where the prerequisite is missing:
//!
//! - on a developer's machine the test prints `SKIPPED: <test>: <why>` to
//!   stderr and returns: the run stays green and says what it did not check;
//! - under `CI=true` (`.ci/run` sets it), or when `BPFCONV_REQUIRE` names
//!   the prerequisite (`BPFCONV_REQUIRE=kernel,prlimit,libseccomp`, or
//!   `all`), the test fails with the same text: a CI machine that lost
//!   python3-seccomp or the right to install a filter must not pass by
//!   checking nothing.
//!
//! Two prerequisites depend on how the host's kernel was built or booted
//! rather than on what CI installs, so `CI=true` alone does not require
//! them ([`Need::required_by_ci`]); `BPFCONV_REQUIRE` still can:
//! [`Need::Int80`] (the i386 entry exists only with `CONFIG_IA32_EMULATION`
//! and not with `ia32_emulation=0` on the command line) and
//! [`Need::Ptrace`] (`PTRACE_SECCOMP_GET_FILTER` needs `CAP_SYS_ADMIN`,
//! which a container's root may not have, and is refused under Yama's
//! `ptrace_scope` 3).

use std::fmt::Display;
use std::process::{Command, Stdio};

/// One thing a test may need from the host. [`Need::name`] is the word
/// `BPFCONV_REQUIRE` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// `kernel`: seccomp(2) filters installed in forked children of the
    /// running kernel (NO_NEW_PRIVS, `SECCOMP_SET_MODE_FILTER`).
    Kernel,
    /// `socket`: `SO_ATTACH_FILTER` of a classic program on a socket.
    Socket,
    /// `bpf`: bpf(2) `BPF_PROG_LOAD` and `BPF_PROG_TEST_RUN` (root or
    /// `CAP_BPF` + `CAP_NET_ADMIN`).
    Bpf,
    /// `ptrace`: `PTRACE_SECCOMP_GET_FILTER` on a child (filter dumps).
    Ptrace,
    /// `int80`: the i386 system call entry `int 0x80` on x86_64.
    Int80,
    /// `prlimit`: `prlimit` (util-linux) and `timeout` (coreutils), the
    /// resource-limited runs.
    Prlimit,
    /// `libseccomp`: the distribution's libseccomp driven from Python
    /// (`python3 -c 'import seccomp'`, package python3-seccomp).
    Libseccomp,
    /// `bpftool`: the kernel tree's `bpftool`.
    Bpftool,
    /// `llvm-objdump`: LLVM's object dumper (BPF target).
    LlvmObjdump,
    /// `dot`: graphviz.
    Dot,
    /// `native`: executable memory for code made at run time (the fast
    /// engine's native trees: x86-64 Linux, mmap with `PROT_EXEC`).
    Native,
}

impl Need {
    /// Every prerequisite, in the order the module docs list them.
    pub const ALL: [Need; 11] = [
        Need::Kernel,
        Need::Socket,
        Need::Bpf,
        Need::Ptrace,
        Need::Int80,
        Need::Prlimit,
        Need::Libseccomp,
        Need::Bpftool,
        Need::LlvmObjdump,
        Need::Dot,
        Need::Native,
    ];

    /// The word `BPFCONV_REQUIRE` uses for it.
    pub fn name(self) -> &'static str {
        match self {
            Need::Kernel => "kernel",
            Need::Socket => "socket",
            Need::Bpf => "bpf",
            Need::Ptrace => "ptrace",
            Need::Int80 => "int80",
            Need::Prlimit => "prlimit",
            Need::Libseccomp => "libseccomp",
            Need::Bpftool => "bpftool",
            Need::LlvmObjdump => "llvm-objdump",
            Need::Dot => "dot",
            Need::Native => "native",
        }
    }

    /// The prerequisite `name` stands for.
    pub fn from_name(name: &str) -> Option<Need> {
        Need::ALL.into_iter().find(|n| n.name() == name)
    }

    /// What provides it on Debian (what `.ci/run` installs, or the right
    /// the test runs with).
    pub fn provided_by(self) -> &'static str {
        match self {
            Need::Kernel | Need::Socket | Need::Bpf => "root on a kernel with seccomp and BPF",
            Need::Ptrace => "CAP_SYS_ADMIN and ptrace rights over a child",
            Need::Int80 => "a kernel with CONFIG_IA32_EMULATION, not booted with ia32_emulation=0",
            Need::Prlimit => "apt-get install util-linux coreutils",
            Need::Libseccomp => "apt-get install python3-seccomp",
            Need::Bpftool => "apt-get install bpftool",
            Need::LlvmObjdump => "apt-get install llvm",
            Need::Dot => "apt-get install graphviz",
            Need::Native => "x86-64 Linux that maps anonymous memory executable (no W^X policy refusing it)",
        }
    }

    /// Whether `CI=true` alone makes it required: every prerequisite but
    /// the two that depend on how the host's kernel was built or booted
    /// (see the module docs).
    pub fn required_by_ci(self) -> bool {
        !matches!(self, Need::Int80 | Need::Ptrace)
    }

    /// Probes a tool prerequisite by running it; `None` for the ones only
    /// the running kernel can answer (the test probes those through the
    /// crate that talks to it, e.g. `kernel::seccomp_available()`).
    pub fn probe(self) -> Option<Result<(), String>> {
        let runs = |program: &str, args: &[&str]| match Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!("`{program} {}` failed ({s})", args.join(" "))),
            Err(e) => Err(format!("`{program}` cannot be run: {e}")),
        };
        let found = match self {
            Need::Kernel | Need::Socket | Need::Bpf | Need::Ptrace | Need::Int80 | Need::Native => return None,
            Need::Prlimit => runs("prlimit", &["--version"]).and_then(|()| runs("timeout", &["--version"])),
            Need::Libseccomp => runs("python3", &["-c", "import seccomp"]),
            Need::Bpftool => runs("bpftool", &["version"]),
            Need::LlvmObjdump => runs("llvm-objdump", &["--version"]),
            Need::Dot => runs("dot", &["-V"]),
        };
        Some(found.map_err(|e| format!("{e} ({})", self.provided_by())))
    }
}

/// Why `need` must be present in this run, if it must: `CI=true`, or
/// `BPFCONV_REQUIRE` naming it (or `all`).
///
/// # Panics
/// On a word in `BPFCONV_REQUIRE` that names no prerequisite: a typo would
/// otherwise require nothing.
#[allow(clippy::panic)]
pub fn required(need: Need) -> Option<String> {
    let listed = std::env::var("BPFCONV_REQUIRE").unwrap_or_default();
    let mut named = false;
    for word in listed.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word != "all" && Need::from_name(word).is_none() {
            let known: Vec<&str> = Need::ALL.iter().map(|n| n.name()).collect();
            panic!("BPFCONV_REQUIRE: unknown prerequisite `{word}` (known: all, {})", known.join(", "));
        }
        named |= word == "all" || word == need.name();
    }
    if named {
        Some(format!("BPFCONV_REQUIRE={listed}"))
    } else if need.required_by_ci() && std::env::var("CI").as_deref() == Ok("true") {
        Some("CI=true".into())
    } else {
        None
    }
}

/// The one way a test says `need` is missing: prints
/// `SKIPPED: <test>: <why>` and returns, so the caller returns (or leaves
/// out the part that needed it) — or, where the run requires `need`
/// ([`required`]), fails the test with that text.
///
/// # Panics
/// Where `need` is required in this run.
#[allow(clippy::panic)]
pub fn missing(test: &str, need: Need, why: impl Display) {
    let line = format!("SKIPPED: {test}: {why}");
    if let Some(because) = required(need) {
        panic!("{line}\nthe prerequisite `{}` is required here ({because}): {}", need.name(), need.provided_by());
    }
    eprintln!("{line}");
}

/// `probe`'s value where it succeeded; otherwise [`missing`] with its
/// error, and `None` (so `let Some(x) = have(..) else { return };`).
pub fn have<T, E: Display>(test: &str, need: Need, probe: Result<T, E>) -> Option<T> {
    match probe {
        Ok(value) => Some(value),
        Err(e) => {
            missing(test, need, format_args!("{} unavailable: {e}", need.name()));
            None
        }
    }
}

/// Whether the tool prerequisite `need` runs here ([`Need::probe`]);
/// where it does not, [`missing`] says so.
pub fn tool(test: &str, need: Need) -> bool {
    match need.probe() {
        Some(probe) => have(test, need, probe).is_some(),
        None => {
            missing(
                test,
                need,
                format_args!("{} is no tool: probe it through the crate that talks to the kernel", need.name()),
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for need in Need::ALL {
            assert_eq!(Need::from_name(need.name()), Some(need));
        }
        let mut names: Vec<_> = Need::ALL.iter().map(|n| n.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Need::ALL.len());
        assert_eq!(Need::from_name("all"), None);
    }

    #[test]
    fn only_host_build_dependent_needs_escape_ci() {
        let escaping: Vec<_> = Need::ALL.into_iter().filter(|n| !n.required_by_ci()).collect();
        assert_eq!(escaping, [Need::Ptrace, Need::Int80]);
    }

    #[test]
    fn kernel_needs_have_no_tool_probe() {
        for need in [Need::Kernel, Need::Socket, Need::Bpf, Need::Ptrace, Need::Int80] {
            assert!(need.probe().is_none(), "{need:?}");
        }
        for need in [Need::Prlimit, Need::Libseccomp, Need::Bpftool, Need::LlvmObjdump, Need::Dot] {
            assert!(need.probe().is_some(), "{need:?}");
        }
    }
}
