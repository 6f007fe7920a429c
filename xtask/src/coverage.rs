//! `cargo xtask coverage`: line coverage of the workspace's tests, per crate,
//! measured with cargo-llvm-cov and printed as a table.
//!
//! Installs what is missing: the `llvm-tools-preview` rustup component and
//! `cargo-llvm-cov` (`cargo install cargo-llvm-cov --locked`). The per-file
//! numbers come from `cargo llvm-cov report --summary-only`, whose rows are
//! `FILE REGIONS MISSED COVER FUNCTIONS MISSED EXECUTED LINES MISSED COVER ...`;
//! files are grouped by crate directory (`crates/<name>`, `xtask`, ...).

use std::collections::BTreeMap;
use std::process::Command;

const USAGE: &str = "usage: cargo xtask coverage [-- EXTRA cargo-llvm-cov ARGS]";

/// Lines of one crate: (total, missed).
pub type LineCounts = BTreeMap<String, (u64, u64)>;

/// Sums the `Lines` and `Missed Lines` columns of an llvm-cov summary per
/// crate directory. Rows whose columns are not numbers (headers, rules,
/// `TOTAL`) are skipped.
pub fn per_crate(report: &str) -> LineCounts {
    let mut out = LineCounts::new();
    for line in report.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (Some(file), Some(lines), Some(missed)) = (cols.first(), cols.get(7), cols.get(8)) else { continue };
        let (Ok(lines), Ok(missed)) = (lines.parse::<u64>(), missed.parse::<u64>()) else { continue };
        if *file == "TOTAL" {
            continue;
        }
        let file = file.replace('\\', "/");
        let parts: Vec<&str> = file.split('/').collect();
        let krate = match parts.iter().position(|p| *p == "crates") {
            Some(i) => parts.get(i + 1).map(|n| format!("crates/{n}")),
            None => parts.first().filter(|_| parts.len() > 1).map(|p| p.to_string()),
        };
        let krate = krate.unwrap_or_else(|| "(other)".to_string());
        let entry = out.entry(krate).or_insert((0, 0));
        entry.0 += lines;
        entry.1 += missed;
    }
    out
}

/// The table `cargo xtask coverage` prints.
pub fn table(counts: &LineCounts) -> String {
    let mut out = format!("{:<22} {:>8} {:>8} {:>8}\n", "crate", "lines", "missed", "cover");
    let (mut total, mut missed) = (0, 0);
    for (krate, &(lines, miss)) in counts {
        out.push_str(&format!("{krate:<22} {lines:>8} {miss:>8} {:>7.2}%\n", percent(lines, miss)));
        total += lines;
        missed += miss;
    }
    out.push_str(&format!("{:<22} {total:>8} {missed:>8} {:>7.2}%\n", "TOTAL", percent(total, missed)));
    out
}

fn percent(lines: u64, missed: u64) -> f64 {
    if lines == 0 {
        100.0
    } else {
        100.0 * (lines - missed.min(lines)) as f64 / lines as f64
    }
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.output().is_ok_and(|o| o.status.success())
}

fn ensure_tools() -> Result<(), String> {
    if !succeeds(Command::new("cargo").args(["llvm-cov", "--version"])) {
        eprintln!(
            "cargo-llvm-cov not found: rustup component add llvm-tools-preview; cargo install cargo-llvm-cov --locked"
        );
        // Failure here is reported by cargo-llvm-cov itself if the tools are really missing.
        let _ = Command::new("rustup").args(["component", "add", "llvm-tools-preview"]).status();
        let status = Command::new("cargo")
            .args(["install", "cargo-llvm-cov", "--locked"])
            .status()
            .map_err(|e| format!("cannot run cargo install: {e}"))?;
        if !status.success() {
            return Err("cargo install cargo-llvm-cov failed".into());
        }
    }
    Ok(())
}

/// Runs the command.
pub fn run(args: &[String]) -> Result<(), String> {
    let extra: Vec<&String> = match args.split_first() {
        None => Vec::new(),
        Some((dash, rest)) if dash == "--" => rest.iter().collect(),
        Some(_) => return Err(USAGE.to_string()),
    };
    ensure_tools()?;
    let root = crate::workspace_root();
    let status = Command::new("cargo")
        .current_dir(&root)
        // A failing test is cargo test's to report; coverage is measured regardless.
        .args(["llvm-cov", "--workspace", "--exclude", "xtask", "--no-report", "--no-fail-fast", "--ignore-run-fail"])
        .args(&extra)
        .status()
        .map_err(|e| format!("cannot run cargo llvm-cov: {e}"))?;
    if !status.success() {
        return Err("cargo llvm-cov (running the tests) failed".into());
    }
    let out = Command::new("cargo")
        .current_dir(&root)
        .args(["llvm-cov", "report", "--summary-only"])
        .output()
        .map_err(|e| format!("cannot run cargo llvm-cov report: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo llvm-cov report failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    // Paths may be absolute; group them relative to the workspace.
    let report = String::from_utf8_lossy(&out.stdout).replace(&format!("{}/", root.display()), "");
    let counts = per_crate(&report);
    if counts.is_empty() {
        return Err("cargo llvm-cov report printed no file rows".into());
    }
    println!("{}", table(&counts));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "\
Filename                      Regions    Missed Regions     Cover   Functions  Missed Functions  Executed       Lines      Missed Lines     Cover
-----------------------------------------------------------------------------------------------------------------------------------------------
crates/cbpf/src/raw.rs             40                 2    95.00%           6                 0   100.00%          50                 5    90.00%
crates/cbpf/src/validate.rs       100                10    90.00%          12                 1    91.67%         150                15    90.00%
xtask/src/fuzz.rs                  10                10     0.00%           3                 3     0.00%          20                20     0.00%
-----------------------------------------------------------------------------------------------------------------------------------------------
TOTAL                             150                22    85.33%          21                 4    80.95%         220                40    81.82%
";

    #[test]
    fn sums_lines_per_crate() {
        let c = per_crate(REPORT);
        assert_eq!(c.get("crates/cbpf"), Some(&(200, 20)));
        assert_eq!(c.get("xtask"), Some(&(20, 20)));
        assert_eq!(c.len(), 2);
        let t = table(&c);
        assert!(t.contains("crates/cbpf"), "{t}");
        assert!(t.contains("90.00%"), "{t}");
        assert!(t.lines().last().unwrap().starts_with("TOTAL"), "{t}");
    }
}
