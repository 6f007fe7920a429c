//! `cargo xtask fuzz-kernel [--time S] [--mode seccomp|socket|both|ebpf] [--seed N] [--out DIR] [--release]`:
//! the running kernel as the judge of random valid classic programs and
//! branch-reaching inputs (issue 17), and with `--mode ebpf` of our eBPF
//! interpreter on general programs the verifier accepts (issue 25). The work is the `fuzz-kernel` binary
//! of `bpfconv-integration` (src/fuzz_kernel.rs there); xtask keeps no
//! dependencies, so it builds and runs that binary: in the dev profile by
//! default (CI's `cargo test` has built its dependencies already), in
//! release with `--release` (long runs). `--time` is per mode; every
//! disagreement is saved under `--out` (default `target/fuzz-kernel/`) as a
//! JSON reproducer that `crates/integration/tests/fuzz_kernel_replay.rs`
//! replays once copied to `testdata/fuzz-kernel/`. Exit status 1 when any
//! disagreement was found; a mode the kernel refuses to attach here (not
//! root, seccomp unavailable) is skipped with a line that says so.

const FLAGS_WITH_VALUE: [&str; 4] = ["--time", "--mode", "--seed", "--out"];

/// Splits off `--release` and checks the rest names only known flags.
fn check_args(args: &[String]) -> Result<(bool, Vec<String>), String> {
    let mut release = false;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--release" {
            release = true;
            continue;
        }
        if !FLAGS_WITH_VALUE.contains(&arg.as_str()) {
            return Err(format!(
                "fuzz-kernel: unexpected argument `{arg}` (usage: fuzz-kernel [--time S] [--mode seccomp|socket|both|ebpf] [--seed N] [--out DIR] [--release])"
            ));
        }
        let value = it.next().ok_or_else(|| format!("fuzz-kernel: {arg} needs a value"))?;
        rest.push(arg.clone());
        rest.push(value.clone());
    }
    Ok((release, rest))
}

/// Builds and runs the judge with `args`.
pub fn run(args: &[String]) -> Result<(), String> {
    let (release, rest) = check_args(args)?;
    let mut cmd = crate::cargo_run_bin("bpfconv-integration", "fuzz-kernel", release);
    cmd.current_dir(crate::workspace_root()).args(&rest);
    crate::run_to_success("fuzz-kernel", cmd, "the judge reported disagreements or failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings;

    #[test]
    fn flags_are_checked_and_release_is_ours() {
        let (release, rest) = check_args(&strings(&["--time", "60", "--release", "--mode", "socket"])).unwrap();
        assert!(release);
        assert_eq!(rest, strings(&["--time", "60", "--mode", "socket"]));
        assert!(check_args(&strings(&["--time"])).unwrap_err().contains("needs a value"));
        assert!(check_args(&strings(&["--runs", "3"])).unwrap_err().contains("unexpected argument `--runs`"));
    }
}
