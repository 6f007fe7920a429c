//! `cargo xtask <command>`: repository chores that are code, not shell.
//!
//! Each command lives in its own module; this file only dispatches.
//! Commands:
//! - `demo`: the main job on the built-in example filters (see demo.rs).
//! - `codegen [--check]`: regenerate `crates/seccomp/src/syscalls/generated.rs`
//!   from the kernel syscall tables' facts in `xtask/syscalls/` (`--check`: fail if
//!   the committed file is stale).
//! - `bench [--quick] [--table A|B|C|D|all] [--json FILE] [--no-kernel] [--out-dir DIR]`:
//!   the four published seccomp benchmark tables, measured in release mode
//!   (see bench/mod.rs).
//! - `callgrind [--runs N] [--save FILE] [--against FILE]`: x86 instructions
//!   per evaluation of every interpreter on every testdata filter (see callgrind.rs).
//! - `fuzz [--time SECONDS] [--runs N] [--sanitizer address|none] [--target NAME]...
//!   [--build-only]`: the cargo-fuzz targets (see fuzz.rs).
//! - `fuzz-kernel [--time S] [--mode seccomp|socket|both|ebpf|hook] [--seed N] [--out DIR] [--release]`:
//!   the running kernel judges random valid programs and their results (see fuzz_kernel.rs).
//! - `coverage [-- ARGS]`: line coverage per crate with cargo-llvm-cov (see coverage.rs).
//! - `mutants [--file NAME]... [--jobs N] [--timeout S]`: cargo-mutants on the kernel
//!   mirrors, each with its owning crate's tests; fails if a mutant survives (see mutants.rs).

use std::process::{Command, ExitCode};

mod bench;
mod callgrind;
mod codegen;
mod coverage;
mod demo;
mod fuzz;
mod fuzz_kernel;
mod mutants;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  demo                check, convert, run and analyse the built-in example filters
  codegen [--check]   regenerate (or check) crates/seccomp/src/syscalls/generated.rs
  bench [--quick] [--table A|B|C|D|all] [--json FILE] [--no-kernel] [--out-dir DIR]
                      reproduce the four published seccomp benchmark tables (release build)
  callgrind [--runs N] [--save FILE] [--against FILE]
                      x86 instructions per evaluation, every interpreter x testdata filter (valgrind)
  fuzz [--time SECONDS] [--runs N] [--sanitizer address|none] [--target NAME]... [--build-only]
                      run the cargo-fuzz targets (nightly), print executions and coverage
  fuzz-kernel [--time S] [--mode seccomp|socket|both|ebpf|hook] [--seed N] [--out DIR] [--release]
                      the running kernel judges random programs: attach answers and every result
                      (ebpf: our eBPF interpreter vs the verifier-accepted programs' kernel runs;
                       hook: socket filters converted for xdp, tc and socket vs the classic interpreter)
                      (--time per mode, default 60; disagreements saved under --out, default target/fuzz-kernel)
  coverage [-- EXTRA cargo-llvm-cov ARGS]
                      line coverage per crate (cargo-llvm-cov)
  mutants [--file NAME]... [--jobs N] [--timeout SECONDS]
                      cargo-mutants on the kernel mirrors and the files docs/mutants.md lists, with
                      their crates' tests (about 5.5 hours; fails if a mutant survives; results in
                      target/mutants/)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match command.as_str() {
        "bench" => bench::run(rest),
        "callgrind" => callgrind::run(rest),
        "codegen" => codegen::run(rest),
        "coverage" => coverage::run(rest),
        "demo" => demo::run(rest),
        "fuzz" => fuzz::run(rest),
        "fuzz-kernel" => fuzz_kernel::run(rest),
        "mutants" => mutants::run(rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => {
            eprintln!("error: unknown command `{other}`\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `cargo run --quiet [--release] --manifest-path <workspace> -p PACKAGE --bin BIN --`,
/// for the commands whose work is a binary of another package (xtask keeps no
/// dependencies): the cargo running xtask (`$CARGO`), else `cargo`. The caller
/// adds the binary's arguments, then runs it with [`run_to_success`].
pub fn cargo_run_bin(package: &str, bin: &str, release: bool) -> std::process::Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["run", "--quiet", "--manifest-path"]).arg(workspace_root().join("Cargo.toml"));
    if release {
        cmd.arg("--release");
    }
    cmd.args(["-p", package, "--bin", bin, "--"]);
    cmd
}

/// Runs `cmd` (from [`cargo_run_bin`]); the error starts with `command:` and
/// says that the program could not start, or that the binary `failed` (with
/// its exit status).
pub fn run_to_success(command: &str, mut cmd: std::process::Command, failed: &str) -> Result<(), String> {
    let status =
        cmd.status().map_err(|e| format!("{command}: cannot run {}: {e}", cmd.get_program().to_string_lossy()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command}: {failed} ({status})"))
    }
}

/// Installs the cargo subcommand `package` (`cargo install --locked`) where
/// `cargo <probe>` does not run; `hint` is added to a failed install's error.
pub fn ensure_cargo_tool(probe: &[&str], package: &str, hint: &str) -> Result<(), String> {
    let runs = |args: &[&str]| Command::new("cargo").args(args).output().is_ok_and(|o| o.status.success());
    if runs(probe) {
        return Ok(());
    }
    eprintln!("{package} not found: cargo install --locked {package}");
    let status = Command::new("cargo")
        .args(["install", "--locked", package])
        .status()
        .map_err(|e| format!("cannot run cargo install: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo install {package} failed{hint}"))
    }
}

/// Owned arguments, for the commands' argument tests.
#[cfg(test)]
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::USAGE;

    /// Every `cargo xtask <command> --flag` the README shows (in a code span
    /// or a code block line) is in the usage text, so neither drifts.
    #[test]
    fn usage_lists_every_flag_the_readme_names() {
        let readme = std::fs::read_to_string(super::workspace_root().join("README.md")).unwrap();
        let mut named = Vec::new();
        for line in readme.lines() {
            let spans: Vec<&str> =
                if line.contains('`') { line.split('`').skip(1).step_by(2).collect() } else { vec![line] };
            for span in spans.into_iter().filter(|s| s.trim_start().starts_with("cargo xtask")) {
                let command = span.split_whitespace().nth(2).unwrap_or_default();
                assert!(
                    USAGE.contains(&format!("\n  {command}")),
                    "README names `cargo xtask {command}`; not in USAGE"
                );
                for word in span.split(|c: char| c.is_whitespace() || "[]|".contains(c)) {
                    if word.starts_with("--") && word.len() > 2 {
                        named.push(word.to_string());
                        assert!(
                            USAGE.contains(word),
                            "README names `cargo xtask {command} {word}`; not in USAGE:\n{USAGE}"
                        );
                    }
                }
            }
        }
        for flag in ["--check", "--quick", "--time", "--runs", "--sanitizer", "--target", "--mode", "--seed", "--out"] {
            assert!(named.iter().any(|f| f == flag), "the README no longer names {flag}: update this test");
        }
    }
}
