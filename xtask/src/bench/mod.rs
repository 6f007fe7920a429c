//! `cargo xtask bench [--quick] [--table A|B|C|D|all] [--json FILE] [--no-kernel] [--out-dir DIR]`
//!
//! Reproduces the four published seccomp benchmark tables (SPEC §10). The
//! measuring is done by the `tables` binary of the `bpfconv-benches`
//! package, which this command builds and runs **in release mode**
//! (`cargo run --release -p bpfconv-benches --bin tables -- ARGS`): xtask
//! itself is built in the dev profile, and timings of unoptimised code
//! would be meaningless. The first run compiles the release profile
//! (rbpf's cranelift included), which takes a few minutes on two cores and
//! is not part of the `--quick` budget (under three minutes on two cores).
//!
//! Output: Markdown on stdout and in `target/bench/tables.md`, SVG plots in
//! `target/bench/`, and with `--json FILE` the JSON of FORMATS.md §5.
//! `cargo bench -p bpfconv-benches` runs the criterion versions of the same
//! rows (groups `a`..`d`, `convert`, `validate`).

/// Flags the `tables` binary understands; anything else is a usage error
/// here, before a release build is started.
const FLAGS: &[(&str, bool)] = &[
    ("--quick", false),
    ("--table", true),
    ("--json", true),
    ("--no-kernel", false),
    ("--out-dir", true),
    ("--help", false),
    ("-h", false),
];

/// Checks `args` against [`FLAGS`] (`--flag value` and `--flag=value` forms).
fn check_args(args: &[String]) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (name, inline_value) = match arg.split_once('=') {
            Some((n, _)) => (n, true),
            None => (arg.as_str(), false),
        };
        match FLAGS.iter().find(|(f, _)| *f == name) {
            Some((_, true)) if !inline_value => {
                if it.next().is_none() {
                    return Err(format!("bench: {name} needs a value"));
                }
            }
            Some(_) => {}
            None => {
                return Err(format!(
                    "bench: unexpected argument `{arg}` (usage: bench [--quick] [--table A|B|C|D|all] [--json FILE] [--no-kernel] [--out-dir DIR])"
                ))
            }
        }
    }
    Ok(())
}

/// Builds and runs the measuring binary in release mode with `args`.
pub fn run(args: &[String]) -> Result<(), String> {
    check_args(args)?;
    let mut cmd = crate::cargo_run_bin("bpfconv-benches", "tables", true);
    cmd.args(args);
    crate::run_to_success("bench", cmd, "the tables binary failed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings;

    #[test]
    fn accepts_the_documented_flags() {
        for ok in [
            &[][..],
            &["--quick"],
            &["--table", "B"],
            &["--table=all", "--json", "out.json", "--quick"],
            &["--no-kernel", "--out-dir", "/tmp/x"],
        ] {
            assert_eq!(check_args(&strings(ok)), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn rejects_unknown_flags_and_missing_values() {
        assert!(check_args(&strings(&["--fast"])).is_err());
        assert!(check_args(&strings(&["--json"])).is_err());
        assert!(check_args(&strings(&["B"])).is_err());
    }
}
