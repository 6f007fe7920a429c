//! Every analysis, the fast engine's build and `optimize` stay bounded on filters built
//! to blow them up (issue 13): each command runs in a child under an
//! address-space limit (RLIMIT_AS, set by `prlimit`) and a wall-clock limit
//! (`timeout -s KILL`), and must end as the FORMATS.md §1 contract says:
//! exit 0, or exit 1 with one `error:` line (a budget it hit names the flag
//! that raises it), or for `equiv` exit 1 with its "differ" verdict on stdout
//! or exit 3 with one `error: undecided:` line — never a signal, an abort or a panic, and never output
//! that grows past what it explains.
//!
//! The limits here are looser than the release-build goal (2 s,
//! 256 MB resident), because tests run the debug build; the goal itself is
//! measured on the release build (see the issue note for the commands).
//! What this suite guards against is the exponential and quadratic blow-ups,
//! which no constant factor hides: before the budgets these shapes took
//! minutes and aborted at any memory limit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use fuzz_replay::blowup::{self, Shape};

mod common;
use common::BIN;
use test_data::require::{self, Need};

/// Address-space limit for each child.
const AS_LIMIT: u64 = 512 << 20;
/// Wall-clock limit for each child (debug build, 2 shared cores).
const SECONDS: u32 = 60;
/// Largest stdout accepted from one command.
const MAX_STDOUT: u64 = 16 << 20;

/// The analyses' step budget for these runs: a sixteenth of the default,
/// because the debug build is slow and a blow-up the budget misses is a
/// blow-up at any budget.
const STEPS: &str = "1048576";

/// The commands every shape is run through.
fn commands(file: &str) -> Vec<Vec<String>> {
    let v = |args: &[&str]| args.iter().map(|s| s.to_string()).chain([file.to_string()]).collect::<Vec<_>>();
    vec![
        v(&["check"]),
        v(&["analyze", "--max-steps", STEPS]),
        v(&["analyze", "--format", "json", "--max-steps", STEPS]),
        v(&["analyze", "--explain", "--audit", "--arch", "i386", "--max-steps", STEPS]),
        v(&["analyze", "--explain", "--max-steps", STEPS]),
        v(&["decompile", "--max-steps", STEPS]),
        v(&["run", "--engine", "fast", "--arch", "0x40000001", "--nr", "1"]),
        v(&["optimize", "--max-steps", STEPS, "-o", "/dev/null"]),
        // equiv against itself stacked twice (the kernel's combination on
        // top of the circuits) and against a real filter (classes of both).
        vec!["equiv".into(), "--max-steps".into(), STEPS.into(), format!("{file},{file}"), file.to_string()],
        v(&[
            "equiv",
            "--compare",
            "action",
            "--max-steps",
            STEPS,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters/allow306_opt2.bpf"),
        ]),
    ]
}

/// Runs `args` on the limited child; returns a description of what broke
/// the contract, if anything did.
fn run_limited(dir: &Path, args: &[String]) -> Option<String> {
    let out_path = dir.join("stdout");
    let err_path = dir.join("stderr");
    let status = Command::new("prlimit")
        .arg(format!("--as={AS_LIMIT}"))
        .arg("--")
        .arg("timeout")
        .args(["-s", "KILL", &SECONDS.to_string()])
        .arg(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .status()
        .unwrap();
    let stdout_len = std::fs::metadata(&out_path).map(|m| m.len()).unwrap_or(0);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let what = match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(1), _) => {
            let lines: Vec<&str> = stderr.lines().collect();
            // `equiv`'s "differ" verdict: exit 1, the counterexamples on stdout.
            let differ = || std::fs::read_to_string(&out_path).is_ok_and(|o| o.starts_with("differ: "));
            match lines.as_slice() {
                [one] if one.starts_with("error: ") => None,
                [] if differ() => None,
                _ => Some(format!("exit 1 without exactly one `error:` line: {stderr:?}")),
            }
        }
        // `equiv`'s "undecided within the budget".
        (Some(3), _) => {
            let lines: Vec<&str> = stderr.lines().collect();
            match lines.as_slice() {
                [one] if one.starts_with("error: undecided: ") => None,
                _ => Some(format!("exit 3 without exactly one `error: undecided:` line: {stderr:?}")),
            }
        }
        // `timeout` exits 137 when it had to kill the command.
        (Some(137), _) => Some(format!("killed after {SECONDS} s")),
        (Some(c), _) => Some(format!("exit {c}: {}", stderr.lines().last().unwrap_or(""))),
        (None, s) => Some(format!("signal {s:?}")),
    };
    what.or_else(|| (stdout_len > MAX_STDOUT).then(|| format!("{stdout_len} bytes of stdout")))
}

/// The shapes and sizes of the findings, plus the kernel's limit.
fn cases() -> Vec<Shape> {
    let mut cases = Vec::new();
    for n in [28, 230, 4096] {
        cases.extend(Shape::all(n));
    }
    // A few more drawn as the fuzz target draws them (fixed seeds).
    for seed in 0..3u8 {
        let bytes: Vec<u8> = (0..16).map(|i| seed.wrapping_mul(37).wrapping_add(i * 11)).collect();
        if let Ok(s) = blowup::shape(&mut arbitrary::Unstructured::new(&bytes)) {
            cases.push(s);
        }
    }
    cases
}

#[test]
fn blow_up_shapes_stay_within_limits() {
    if !require::tool("blow_up_shapes_stay_within_limits", Need::Prlimit) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut runs = 0;
    for shape in cases() {
        let file = dir.path().join(format!("{}.bpf", shape.name()));
        std::fs::write(&file, cbpf::raw::encode(&shape.build())).unwrap();
        let file = file.to_string_lossy().into_owned();
        for args in commands(&file) {
            runs += 1;
            if let Some(what) = run_limited(dir.path(), &args) {
                failures.push(format!("{}: bpfconv {}: {what}", shape.name(), args[..args.len() - 1].join(" ")));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {runs} runs broke the contract:\n{}", failures.len(), failures.join("\n"));
}
