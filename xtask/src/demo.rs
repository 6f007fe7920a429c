//! `cargo xtask demo`: the main job on the built-in example filters.
//!
//! Builds `bpfconv` in release and, for every filter in testdata/filters:
//! validates it as seccomp(2) would, round-trips it through the text syntaxes,
//! converts it (printing the side-by-side listing for the smallest), runs its
//! kernel-checked vectors on every engine and analyses it. Prints one table.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::workspace_root;

const ENGINES: [&str; 7] = ["cbpf", "ebpf", "rbpf", "rbpf-jit", "rbpf-cranelift", "fast", "kernel"];

fn bpfconv(bin: &Path, args: &[&str]) -> Result<(bool, String, String), String> {
    let out = Command::new(bin).args(args).output().map_err(|e| format!("running {}: {e}", bin.display()))?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Runs the demo; fails if any check that should pass does not.
pub fn run(_args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args(["build", "--release", "--quiet", "--bin", "bpfconv"])
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err("cargo build --release --bin bpfconv failed".into());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let bin = target.join("release/bpfconv");
    let dir = root.join("testdata/filters");
    let mut filters: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bpf"))
        .collect();
    filters.sort();
    let mut problems = Vec::new();

    if let Some(first) = filters.iter().find(|p| p.ends_with("seed_fast.bpf")) {
        let f = first.to_string_lossy();
        for args in [vec!["disasm", "--format", "seccomp", &f], vec!["convert", &f]] {
            println!("$ bpfconv {}", args.join(" ").replace(&*root.to_string_lossy(), "."));
            let (_, out, err) = bpfconv(&bin, &args)?;
            print!("{out}{err}");
            println!();
        }
    }

    println!(
        "| filter | insns | check | round trip asm/c/ddd/seccomp | eBPF insns | {} | analyze |",
        ENGINES.join(" | ")
    );
    println!("|---|---|---|---|---|{}---|", "---|".repeat(ENGINES.len()));
    for path in &filters {
        let f = path.to_string_lossy().into_owned();
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let raw = std::fs::read(path).map_err(|e| format!("{f}: {e}"))?;
        let (ok, _, err) = bpfconv(&bin, &["check", &f])?;
        let check = if ok { "ok".to_string() } else { format!("REJECTED {}", err.trim()) };
        if !ok {
            problems.push(format!("{stem}: check failed"));
        }
        let mut trips = Vec::new();
        for format in ["asm", "c", "ddd", "seccomp"] {
            let tmp = std::env::temp_dir().join(format!("bpfconv-demo-{stem}.{format}"));
            let (_, text, _) = bpfconv(&bin, &["disasm", "--format", format, &f])?;
            std::fs::write(&tmp, text).map_err(|e| e.to_string())?;
            let back = Command::new(&bin).args(["asm", &tmp.to_string_lossy(), "-o", "-"]).output();
            let same = back.map(|o| o.stdout == raw).unwrap_or(false);
            let _ = std::fs::remove_file(&tmp);
            if !same {
                problems.push(format!("{stem}: {format} round trip differs"));
            }
            trips.push(if same { "✔" } else { "✘" });
        }
        let (_, listing, _) = bpfconv(&bin, &["convert", "--format", "ebpf", &f])?;
        let ebpf_len = listing.lines().count();
        let vectors = dir.join(format!("{stem}.vectors.jsonl"));
        let v = vectors.to_string_lossy().into_owned();
        let mut cells = Vec::new();
        for engine in ENGINES {
            let (ok, out, err) = bpfconv(&bin, &["run", "--engine", engine, &f, "--vectors", &v, "--check"])?;
            let last = out.lines().last().unwrap_or("").to_string();
            let cell = if ok {
                last
            } else if out.contains(" failed") {
                problems.push(format!("{stem}: {engine}: {last}"));
                last
            } else {
                // The engine declined the filter (rbpf's JIT page, no seccomp): not a failure.
                format!("n/a: {}", err.trim().trim_start_matches("error: ").split(';').next().unwrap_or(""))
            };
            cells.push(cell);
        }
        let (ok, out, _) = bpfconv(&bin, &["analyze", &f])?;
        let analysis = if ok { out.lines().nth(1).unwrap_or("").to_string() } else { "failed".to_string() };
        println!(
            "| {stem} | {} | {check} | {} | {ebpf_len} | {} | {analysis} |",
            raw.len() / 8,
            trips.join(""),
            cells.join(" | ")
        );
    }
    if problems.is_empty() {
        println!("\nall filters checked, converted and run: every vector matched on every engine that ran it");
        Ok(())
    } else {
        Err(format!("{} problems:\n{}", problems.len(), problems.join("\n")))
    }
}
