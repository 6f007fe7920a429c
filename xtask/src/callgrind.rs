//! `cargo xtask callgrind [--runs N] [--save FILE] [--against FILE]`:
//! x86 instructions per evaluation, counted by callgrind (stable where
//! wall-clock time on a shared machine is not), for every filter of
//! testdata/filters (and the libseccomp profile filters `count list`
//! names: docker_like_opt2, s390x) on its deepest vector and on its mix (every
//! vector in turn, as `bpfconv bench`'s mix row), and every interpreter: `cbpf`,
//! `ebpf-exec` (the converted-seccomp executor), `ebpf-general` (the
//! general eBPF interpreter), `fast`, and the plain models of the kernel's
//! interpreters `cbpf-plain` and `ebpf-plain`.
//!
//! Builds `benches/src/bin/count.rs` with the bench profile (what criterion
//! measures), runs `valgrind --tool=callgrind --toggle-collect=*measure*`
//! on `count FILTER ENGINE RUNS` and divides callgrind's total by RUNS;
//! for the mix, on `count FILTER ENGINE PASSES mix` with PASSES = RUNS over
//! the vector count (at least 1), dividing by PASSES times that count, so
//! both rows cost about RUNS evaluations.
//! `--save FILE` writes the figures (`filter engine count` lines, the mix's
//! filter named `FILTER:mix`);
//! `--against FILE` adds the ratio to figures saved earlier (a restructuring
//! must keep every ratio within 1.03).

use std::collections::BTreeMap;
use std::process::Command;

use crate::workspace_root;

const ENGINES: [&str; 6] = ["cbpf", "ebpf-exec", "ebpf-general", "fast", "cbpf-plain", "ebpf-plain"];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut runs: u64 = 10_000;
    let mut save: Option<String> = None;
    let mut against: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--runs" => runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--save" => save = Some(value()?),
            "--against" => against = Some(value()?),
            other => return Err(format!("unknown argument {other} (--runs N, --save FILE, --against FILE)")),
        }
    }
    let root = workspace_root();
    let status = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["build", "--locked", "--profile", "bench", "-p", "bpfconv-benches", "--bin", "count"])
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err("building the count binary failed".into());
    }
    let bin = root.join("target/release/count");
    let list = Command::new(&bin).arg("list").output().map_err(|e| format!("{}: {e}", bin.display()))?;
    if !list.status.success() {
        return Err(format!("count list: {}", String::from_utf8_lossy(&list.stderr)));
    }
    let baseline = match &against {
        Some(path) => parse(&std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?),
        None => BTreeMap::new(),
    };
    let mut saved = String::new();
    let mut worst: f64 = 0.0;
    println!("| filter | input (cBPF insns) | engine | x86 insns / eval | before | ratio |");
    println!("|---|---|---|---|---|---|");
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(depth), Some(vectors)) = (words.next(), words.next(), words.next()) else { continue };
        let vectors: u64 = vectors.parse().map_err(|e| format!("count list: {name}: vector count: {e}"))?;
        let passes = (runs / vectors.max(1)).max(1);
        let rows = [
            (name.to_string(), format!("deepest ({depth})"), runs, runs, None),
            (format!("{name}:mix"), format!("mix ({vectors} vectors)"), passes, passes * vectors, Some("mix")),
        ];
        for (row, input, count_runs, evals, mix) in rows {
            for engine in ENGINES {
                let collected = collect(&bin, name, engine, count_runs, mix)?;
                let per = collected as f64 / evals.max(1) as f64;
                saved.push_str(&format!("{row} {engine} {per:.1}\n"));
                let (before, ratio) = match baseline.get(&(row.clone(), engine.to_string())) {
                    Some(b) => {
                        worst = worst.max(per / b);
                        (format!("{b:.1}"), format!("{:.3}", per / b))
                    }
                    None => ("".into(), "".into()),
                };
                println!("| {name} | {input} | {engine} | {per:.1} | {before} | {ratio} |");
            }
        }
    }
    if against.is_some() {
        println!("\nworst ratio: {worst:.3}");
    }
    if let Some(path) = save {
        std::fs::write(&path, saved).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// callgrind's instruction total for `count NAME ENGINE RUNS [mix]`.
fn collect(bin: &std::path::Path, name: &str, engine: &str, runs: u64, mix: Option<&str>) -> Result<u64, String> {
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--toggle-collect=*measure*", "--callgrind-out-file=/dev/null"])
        .arg(bin)
        .args([name, engine, &runs.to_string()])
        .args(mix)
        .output()
        .map_err(|e| format!("valgrind: {e} (apt-get install valgrind)"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{name}/{engine}: {stderr}"));
    }
    stderr
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or(format!("{name}/{engine}: no `Collected` line in valgrind's output"))
}

/// `filter engine count` lines.
fn parse(text: &str) -> BTreeMap<(String, String), f64> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some(((w.next()?.to_string(), w.next()?.to_string()), w.next()?.parse().ok()?))
        })
        .collect()
}
