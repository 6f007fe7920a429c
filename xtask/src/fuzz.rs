//! `cargo xtask fuzz [--time SECONDS] [--runs N] [--sanitizer address|none]
//! [--target NAME]... [--build-only]`: runs the cargo-fuzz targets of `fuzz/`
//! one after the other with nightly cargo-fuzz, and prints executions and
//! coverage per target.
//!
//! - `--time` bounds each target's run (default 60 s); `--runs` also stops
//!   it after N executions (libFuzzer's `-runs`).
//! - `--sanitizer none` builds without AddressSanitizer: the code under test
//!   is safe Rust (`unsafe_code` is denied outside the kernel crate and the
//!   rbpf JIT call, which no target reaches), so ASan mostly adds cost;
//!   without it the cheap targets run several times faster, which is how
//!   the 10^7-execution runs are done. The default stays `address`.
//!
//! - cargo-fuzz is installed (`cargo install cargo-fuzz --locked`) when
//!   `cargo +nightly fuzz` is missing.
//! - Each target's working corpus is `fuzz/corpus/<target>/` (not committed),
//!   started from the committed seeds `fuzz/seeds/<target>/`.
//! - The figures come from libFuzzer's final status line
//!   (`#N DONE cov: X ft: Y corp: A/Bb ...`) and its `-print_final_stats`
//!   lines.
//! - A crash is copied to `fuzz/regressions/<target>/` with a placeholder
//!   line in that directory's README, to be replaced by the root cause; the
//!   stable replayer (`crates/fuzz-replay`) then runs it in `cargo test`.
//!
//! `CARGO_TARGET_DIR` is honoured; without it cargo-fuzz builds in
//! `fuzz/target/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every target of `fuzz/Cargo.toml`, in run order (same as `fuzz_replay::TARGETS`).
pub const TARGETS: [&str; 10] = [
    "decode_validate",
    "text_parse",
    "convert_equiv",
    "ebpf_exec",
    "analysis_sound",
    "fast_equiv",
    "bounded_work",
    "equiv",
    "optimize",
    "compile",
];

const USAGE: &str =
    "usage: cargo xtask fuzz [--time SECONDS] [--runs N] [--sanitizer address|none] [--target NAME]... [--build-only]";

/// What one libFuzzer run reported.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Inputs executed (`#N` of the final line, or `stat::number_of_executed_units`).
    pub execs: u64,
    /// Coverage counters hit (`cov:`).
    pub cov: u64,
    /// Features (`ft:`).
    pub ft: u64,
    /// Corpus entries at the end (`corp: A/...`).
    pub corpus: u64,
    /// `exec/s:` of the last status line.
    pub exec_per_sec: u64,
    /// Wall-clock seconds of the run (`Done N runs in S second(s)`).
    pub secs: u64,
    /// `Test unit written to PATH` of a crash, leak or timeout.
    pub artifact: Option<PathBuf>,
    /// `stat::slowest_unit_time_sec`: the slowest input's seconds. libFuzzer
    /// also writes that input as `slow-unit-*` once it passes
    /// `-report_slow_units` (10 s); that is a report, not a crash (the run
    /// goes on; `-timeout` turns real hangs into crashes).
    pub slowest_unit_secs: u64,
}

/// Parses libFuzzer's stderr. The last status line wins; lines look like
/// `#123456\tDONE   cov: 1234 ft: 5678 corp: 90/12Kb lim: 4096 exec/s: 2000 rss: 80Mb`.
pub fn parse_stats(stderr: &str) -> Stats {
    let mut stats = Stats::default();
    for line in stderr.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            let Some(n) = words.next().and_then(|n| n.parse::<u64>().ok()) else { continue };
            let words: Vec<&str> = words.collect();
            let field = |name: &str| {
                words.iter().position(|w| *w == name).and_then(|i| words.get(i + 1)).map(|v| {
                    let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
                    digits.parse::<u64>().unwrap_or(0)
                })
            };
            if let Some(cov) = field("cov:") {
                stats.execs = n;
                stats.cov = cov;
                stats.ft = field("ft:").unwrap_or(stats.ft);
                stats.corpus = field("corp:").unwrap_or(stats.corpus);
                stats.exec_per_sec = field("exec/s:").unwrap_or(stats.exec_per_sec);
            }
        } else if let Some(rest) = line.strip_prefix("Done ") {
            // `Done 123456 runs in 61 second(s)`
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let (Some(&"in"), Some(secs)) = (words.get(2), words.get(3).and_then(|w| w.parse().ok())) {
                stats.secs = secs;
            }
        } else if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            if let Ok(n) = n.trim().parse() {
                stats.execs = n;
            }
        } else if let Some(i) = line.find("Test unit written to ") {
            let path = PathBuf::from(line.get(i + "Test unit written to ".len()..).unwrap_or("").trim());
            let slow = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("slow-unit-"));
            if !slow {
                stats.artifact = Some(path);
            }
        } else if let Some(n) = line.strip_prefix("stat::slowest_unit_time_sec:") {
            stats.slowest_unit_secs = n.trim().parse().unwrap_or(0);
        }
    }
    stats
}

struct Args {
    time: u64,
    runs: Option<u64>,
    sanitizer: String,
    targets: Vec<String>,
    build_only: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args { time: 60, runs: None, sanitizer: "address".into(), targets: Vec::new(), build_only: false };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--time" => {
                let v = it.next().ok_or("--time needs a number of seconds")?;
                out.time = v.parse().map_err(|_| format!("--time: `{v}` is not a number of seconds"))?;
            }
            "--runs" => {
                let v = it.next().ok_or("--runs needs a number of executions")?;
                out.runs = Some(v.parse().map_err(|_| format!("--runs: `{v}` is not a number"))?);
            }
            "--sanitizer" => {
                let v = it.next().ok_or("--sanitizer needs a name")?;
                if !["address", "none"].contains(&v.as_str()) {
                    return Err(format!("--sanitizer: `{v}` is not address or none"));
                }
                out.sanitizer = v.clone();
            }
            "--target" => {
                let v = it.next().ok_or("--target needs a name")?;
                if !TARGETS.contains(&v.as_str()) {
                    return Err(format!("unknown target `{v}` (targets: {})", TARGETS.join(", ")));
                }
                out.targets.push(v.clone());
            }
            "--build-only" => out.build_only = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if out.targets.is_empty() {
        out.targets = TARGETS.iter().map(|t| t.to_string()).collect();
    }
    Ok(out)
}

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let root = crate::workspace_root();
    crate::ensure_cargo_tool(
        &["+nightly", "fuzz", "--version"],
        "cargo-fuzz",
        " (is a nightly toolchain installed? `rustup toolchain install nightly`)",
    )?;
    let status = Command::new("cargo")
        .current_dir(&root)
        .args(["+nightly", "fuzz", "build", "--fuzz-dir", "fuzz", "--sanitizer", &args.sanitizer])
        .status()
        .map_err(|e| format!("cannot run cargo fuzz build: {e}"))?;
    if !status.success() {
        return Err("cargo +nightly fuzz build failed".into());
    }
    if args.build_only {
        return Ok(());
    }
    let mut rows = Vec::new();
    for target in &args.targets {
        eprintln!("== fuzzing {target} for {} s", args.time);
        let stats = run_target(&root, target, &args)?;
        rows.push((target.clone(), stats));
    }
    println!("{}", table(&rows, args.time));
    let crashed: Vec<_> = rows.iter().filter(|(_, s)| s.artifact.is_some()).map(|(t, _)| t.as_str()).collect();
    if crashed.is_empty() {
        Ok(())
    } else {
        Err(format!("crashes in {}: write each root cause in fuzz/regressions/<target>/README.md", crashed.join(", ")))
    }
}

fn run_target(root: &Path, target: &str, args: &Args) -> Result<Stats, String> {
    let corpus = root.join("fuzz/corpus").join(target);
    let seeds = root.join("fuzz/seeds").join(target);
    std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root).args([
        "+nightly",
        "fuzz",
        "run",
        "--fuzz-dir",
        "fuzz",
        "--sanitizer",
        &args.sanitizer,
        target,
    ]);
    cmd.arg(&corpus);
    if seeds.is_dir() {
        cmd.arg(&seeds);
    }
    cmd.args(["--", &format!("-max_total_time={}", args.time), "-print_final_stats=1"]);
    // `bounded_work` asserts issue 13's resource goal itself: a unit that
    // needs more memory or time than one bounded command may is a crash.
    if target == "bounded_work" {
        cmd.args(["-timeout=6", "-rss_limit_mb=512"]);
    } else {
        cmd.args(["-timeout=10", "-rss_limit_mb=2048"]);
    }
    if let Some(runs) = args.runs {
        cmd.arg(format!("-runs={runs}"));
    }
    let out = cmd
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut stats = parse_stats(&stderr);
    if !out.status.success() && stats.artifact.is_none() {
        let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("cargo fuzz run {target} failed:\n{}", tail.join("\n")));
    }
    if let Some(artifact) = stats.artifact.take() {
        let artifact = if artifact.is_absolute() { artifact } else { root.join(artifact) };
        stats.artifact = Some(keep_regression(root, target, &artifact)?);
        eprintln!("{stderr}");
    }
    Ok(stats)
}

/// Copies a crash into `fuzz/regressions/<target>/` and adds a placeholder
/// line to the README there, so it cannot be forgotten.
fn keep_regression(root: &Path, target: &str, artifact: &Path) -> Result<PathBuf, String> {
    let dir = root.join("fuzz/regressions").join(target);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let name = artifact.file_name().ok_or_else(|| format!("artifact {} has no file name", artifact.display()))?;
    let dest = dir.join(name);
    std::fs::copy(artifact, &dest).map_err(|e| format!("copy {}: {e}", artifact.display()))?;
    let readme = dir.join("README.md");
    let mut text = std::fs::read_to_string(&readme).unwrap_or_else(|_| format!("# {target} regressions\n\n"));
    text.push_str(&format!("- `{}`: ROOT CAUSE NOT YET WRITTEN\n", name.to_string_lossy()));
    std::fs::write(&readme, text).map_err(|e| format!("{}: {e}", readme.display()))?;
    Ok(dest)
}

fn table(rows: &[(String, Stats)], time: u64) -> String {
    let mut out = format!(
        "{:<16} {:>6} {:>12} {:>8} {:>7} {:>8} {:>7} {:>8}  result\n",
        "target", "secs", "execs", "exec/s", "cov", "ft", "corpus", "slowest"
    );
    for (target, s) in rows {
        let result = match &s.artifact {
            Some(p) => format!("CRASH -> {}", p.display()),
            None => "ok".to_string(),
        };
        out.push_str(&format!(
            "{target:<16} {:>6} {:>12} {:>8} {:>7} {:>8} {:>7} {:>7}s  {result}\n",
            if s.secs > 0 { s.secs } else { time },
            s.execs,
            s.exec_per_sec,
            s.cov,
            s.ft,
            s.corpus,
            s.slowest_unit_secs
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_final_status_and_stats() {
        let err = "INFO: Seed: 1\n#2\tINITED cov: 10 ft: 11 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #4096\tpulse  cov: 200 ft: 300 corp: 20/400b lim: 4 exec/s: 2048 rss: 40Mb\n\
                   #123456\tDONE   cov: 1234 ft: 5678 corp: 90/12Kb lim: 4096 exec/s: 2000 rss: 80Mb\n\
                   Done 123456 runs in 61 second(s)\nstat::number_of_executed_units: 123457\n";
        let s = parse_stats(err);
        assert_eq!(
            s,
            Stats {
                execs: 123457,
                cov: 1234,
                ft: 5678,
                corpus: 90,
                exec_per_sec: 2000,
                secs: 61,
                artifact: None,
                slowest_unit_secs: 0
            }
        );
    }

    #[test]
    fn finds_the_crash_artifact() {
        let err = "==1== ERROR: libFuzzer: deadly signal\n\
                   artifact_prefix='/w/fuzz/artifacts/x/'; Test unit written to /w/fuzz/artifacts/x/crash-abc\n";
        assert_eq!(parse_stats(err).artifact, Some(PathBuf::from("/w/fuzz/artifacts/x/crash-abc")));
    }

    #[test]
    fn a_slow_unit_is_reported_not_kept_as_a_crash() {
        let err = "Slowest unit: 14 s:
                   artifact_prefix='fuzz/artifacts/f/'; Test unit written to fuzz/artifacts/f/slow-unit-21bf
                   stat::slowest_unit_time_sec:    14
";
        let s = parse_stats(err);
        assert_eq!((s.artifact, s.slowest_unit_secs), (None, 14));
    }

    #[test]
    fn rejects_unknown_targets() {
        assert!(parse_args(&["--target".into(), "nope".into()]).is_err());
        let a = parse_args(&["--time".into(), "5".into(), "--target".into(), "ebpf_exec".into()]).unwrap();
        assert_eq!(
            (a.time, a.targets, a.runs, a.sanitizer.as_str()),
            (5, vec!["ebpf_exec".to_string()], None, "address")
        );
        let a = parse_args(&["--runs".into(), "100".into(), "--sanitizer".into(), "none".into()]).unwrap();
        assert_eq!((a.runs, a.sanitizer.as_str(), a.targets.len()), (Some(100), "none", TARGETS.len()));
        assert!(parse_args(&["--sanitizer".into(), "memory".into()]).is_err());
    }
}
