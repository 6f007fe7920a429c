//! `cargo xtask <command>`: repository chores that are code, not shell.
//!
//! Each command lives in its own module; this file only dispatches.
//! Commands:
//! - `demo`: the main job on the built-in example filters (see demo.rs).
//! - `codegen [--check]`: regenerate `crates/seccomp/src/syscalls/generated.rs`
//!   from the kernel syscall tables in `xtask/syscalls/` (`--check`: fail if
//!   the committed file is stale).
//! - `bench [--quick] [--table A|B|C|D|all] [--json FILE]`: the four published
//!   seccomp benchmark tables, measured in release mode (see bench/mod.rs).
//! - `callgrind [--runs N] [--save FILE] [--against FILE]`: x86 instructions
//!   per evaluation of every interpreter on every testdata filter (see callgrind.rs).
//! - `fuzz [--time SECONDS] [--target NAME]...`: the cargo-fuzz targets (see fuzz.rs).
//! - `coverage`: line coverage per crate with cargo-llvm-cov (see coverage.rs).

use std::process::ExitCode;

mod bench;
mod callgrind;
mod codegen;
mod coverage;
mod demo;
mod fuzz;

const USAGE: &str = "usage: cargo xtask <command>\n\ncommands:\n  demo                check, convert, run and analyse the built-in example filters\n  callgrind [--runs N] [--save FILE] [--against FILE]
                      x86 instructions per evaluation, every interpreter x testdata filter (valgrind)
  codegen [--check]   regenerate (or check) crates/seccomp/src/syscalls/generated.rs\n  bench [--quick] [--table A|B|C|D|all] [--json FILE]\n                      reproduce the four published seccomp benchmark tables (release build)\n  fuzz [--time SECONDS] [--target NAME]... [--build-only]\n                      run the cargo-fuzz targets (nightly), print executions and coverage\n  coverage            line coverage per crate (cargo-llvm-cov)";

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
