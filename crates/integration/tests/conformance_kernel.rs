#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! Issue 25 item 5: the bpf_conformance suite (testdata/bpf_conformance:
//! the 313 files of `tests/` and the 45 reserved-field programs of
//! `negative/`) run by the running kernel (`kernel::bpf::memory`: XDP,
//! the memory as the packet, the whole 64-bit r0 brought out) and by our
//! interpreter. Where the verifier accepts, r0 and the memory after the
//! run must be equal; where it refuses, its reason is pinned, one line per
//! test, in testdata/bpf_conformance/kernel-verdicts.txt
//! (`UPDATE_EXPECT=1` rewrites it; review the diff), so a change in either
//! shows. Without the privilege to load programs it says so through
//! `test_data::require` (a visible skip, a failure under `CI=true`).

use std::fmt::Write as _;
use std::path::PathBuf;

use ebpf::conformance::parse;
use ebpf::{Helpers, Input, LoadOptions, Program, Vm};
use kernel::bpf::memory::MemoryProg;
use kernel::bpf::BpfError;
use test_data::require::{self, Need};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/bpf_conformance")
}

/// The suite's files by name (`add64`, `negative/unused-add64_imm-src`):
/// every file of `tests/`, then the reserved-field programs of `negative/`
/// (the others test upstream's runner and assembler).
fn tests() -> Vec<(String, PathBuf)> {
    let mut out = data_files("tests", "");
    out.extend(
        data_files("negative", "negative/").into_iter().filter(|(name, _)| name.starts_with("negative/unused-")),
    );
    out
}

/// The `.data` files of `sub`, sorted, named `prefix` + stem.
fn data_files(sub: &str, prefix: &str) -> Vec<(String, PathBuf)> {
    let files = test_data::paths::files_ending(&dir().join(sub), ".data").unwrap();
    files.into_iter().map(|p| (format!("{prefix}{}", p.file_stem().unwrap().to_string_lossy()), p)).collect()
}

/// r0 and the memory after a run.
type Run = (u64, Vec<u8>);

fn ours(insns: &[ebpf::Insn], mem: &[u8]) -> Result<Run, String> {
    let prog =
        Program::load(insns, &LoadOptions::default(), &Helpers::conformance()).map_err(|e| format!("load: {e}"))?;
    let mut mem = mem.to_vec();
    let r0 = Vm::new().run(&prog, Input::Memory(&mut mem)).map_err(|e| format!("run: {e}"))?;
    Ok((r0, mem))
}

/// The kernel's verdict on one test.
enum Kernel {
    Ran(Run),
    Refused(String),
}

fn kernel(insns: &[ebpf::Insn], mem: &[u8]) -> Result<Kernel, BpfError> {
    match MemoryProg::load(insns, mem.len()) {
        Ok(prog) => {
            let mut mem = mem.to_vec();
            let r0 = prog.run(&mut mem)?.r0;
            Ok(Kernel::Ran((r0, mem)))
        }
        Err(e @ BpfError::Rejected { .. }) => Ok(Kernel::Refused(e.reason().unwrap_or("(no log)").to_string())),
        Err(e) => Err(e),
    }
}

fn table_path() -> PathBuf {
    dir().join("kernel-verdicts.txt")
}

const HEADER: &str = "\
# The running kernel's verdict on every bpf_conformance test (tests/ and
# negative/unused-*), run as crates/integration/tests/conformance_kernel.rs
# runs it: an XDP program behind kernel::bpf::memory's harness (r1 = the
# memory as the packet, r2 = its length, the 64-bit r0 brought out).
# `equal`: the verifier accepted it and the kernel's r0 and memory equal our
# interpreter's. `refused`: the verifier's reason (the log's last line).
# Generated: UPDATE_EXPECT=1 cargo test -p bpfconv-integration --test conformance_kernel
";

#[test]
fn conformance_suite_through_the_kernel() {
    let Some(()) = require::have("conformance_suite_through_the_kernel", Need::Bpf, kernel::bpf::available()) else {
        return;
    };
    let mut table = String::from(HEADER);
    let mut failures = Vec::new();
    let (mut equal, mut refused) = (0, 0);
    for (name, path) in tests() {
        let test = parse(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let insns = test.program().unwrap_or_else(|e| panic!("{name}: {e}"));
        let theirs = kernel(&insns, &test.mem).unwrap_or_else(|e| panic!("{name}: {e}"));
        let verdict = match (theirs, ours(&insns, &test.mem)) {
            (Kernel::Refused(reason), _) => {
                refused += 1;
                format!("refused  {reason}")
            }
            (Kernel::Ran(k), Ok(o)) if k == o => {
                equal += 1;
                "equal".to_string()
            }
            (Kernel::Ran((r0, mem)), o) => {
                failures.push(format!("{name}: the kernel gives r0 = {r0:#x}, memory {mem:02x?}; ours {o:x?}"));
                format!("differs  kernel r0 = {r0:#x}")
            }
        };
        let _ = writeln!(table, "{name:<40} {verdict}");
    }
    eprintln!("{equal} equal, {refused} refused by the verifier, {} different", failures.len());
    let path = table_path();
    if std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1") {
        std::fs::write(&path, &table).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(failures.is_empty(), "{} tests the kernel runs differently:\n{}", failures.len(), failures.join("\n"));
    if committed != table {
        panic!("{}: the verdicts changed (UPDATE_EXPECT=1 to bless):\n{}", path.display(), diff(&committed, &table));
    }
}

/// The lines only one side has, `-` committed, `+` today's.
fn diff(committed: &str, today: &str) -> String {
    let old: Vec<&str> = committed.lines().collect();
    let new: Vec<&str> = today.lines().collect();
    let mut out = String::new();
    for line in &old {
        if !new.contains(line) {
            let _ = writeln!(out, "-{line}");
        }
    }
    for line in &new {
        if !old.contains(line) {
            let _ = writeln!(out, "+{line}");
        }
    }
    out
}

/// The table's own shape: one line per test in the suite's order.
#[test]
fn the_table_has_one_line_per_test() {
    let committed = std::fs::read_to_string(table_path()).unwrap();
    let names: Vec<&str> =
        committed.lines().filter(|l| !l.starts_with('#')).map(|l| l.split_whitespace().next().unwrap()).collect();
    let expected: Vec<String> = tests().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, expected);
    assert_eq!(names.len(), 313 + 45);
}
