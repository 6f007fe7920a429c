//! Converter filetests: every `testdata/convert/*.txt` is converted and its
//! side-by-side listing compared with the file's expected block; its `; run:`
//! lines are executed through the equivalence oracle (`test_kit::oracle`:
//! the classic trace interpreter == every engine, among them the converted
//! program on our eBPF interpreter, == the expected value), and seccomp runs
//! also on rbpf's interpreter through this suite's own runner. Socket runs use lib/test_bpf.c's skb
//! values for the packet. All files are checked, every failure is reported
//! with a diff, then the test fails. `UPDATE_EXPECT=1` rewrites expected blocks.
//!
//! File format (see testdata/convert/README.md):
//!
//! ```text
//! ; mode: seccomp            (or socket; required)
//! ; options: legacy          (optional: Options::legacy_ld_abs)
//! ; run: nr=59 arch=x86_64 ip=0 args=1,2 => 0x7fff0000
//! ; run: packet=0800aabb => 0          (socket: lib/test_bpf.c skb values)
//! ; any other comment
//! 0x20 0 0 4                 ; code jt jf k, decimal or hex
//! { 0x15, 1, 0, 0xc000003e }, // C-array form
//! repeat 4095: 0x04 0 0 1    ; the same instruction N times
//! == expect                  (or `== expect summary`)
//! <expected block>
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;
use common::filetest::{self, diff, files};

use std::fmt::Write as _;
use std::path::Path;

use cbpf::{validate, Insn, Mode, Program};
use convert::{convert, filetest_text, Options};
use test_data::filetest::Run;
use test_kit::{Oracle, SocketInput};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/convert");
const MARKER: &str = "== expect";

#[derive(Debug)]
struct FileTest {
    mode: Mode,
    options: Options,
    insns: Vec<Insn>,
    /// The `; run:` lines, with their line numbers.
    runs: Vec<(usize, Run)>,
    summary_only: bool,
    /// Text up to and including the marker line.
    head: String,
    expected: String,
}

fn parse_file(text: &str) -> Result<FileTest, String> {
    let t = test_data::filetest::parse(text)?;
    let mut mode = None;
    let mut options = Options::default();
    for d in &t.directives {
        let lineno = d.line;
        match d.key.as_str() {
            "mode" => {
                mode =
                    Some(filetest::mode(&d.value).ok_or_else(|| format!("line {lineno}: unknown mode {:?}", d.value))?)
            }
            "options" => {
                for opt in d.value.split_whitespace() {
                    match opt {
                        "legacy" => options.legacy_ld_abs = true,
                        other => return Err(format!("line {lineno}: unknown option {other:?}")),
                    }
                }
            }
            _ => {}
        }
    }
    let summary_only = match t.marker.as_deref() {
        Some("expect") => false,
        Some("expect summary") => true,
        Some(other) => return Err(format!("unknown marker `== {other}`")),
        None => return Err(format!("no `{MARKER}` line")),
    };
    let insns = t.insns.iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
    let runs = t.runs()?;
    let head = format!("{}== {}\n", t.head, t.marker.unwrap_or_default());
    Ok(FileTest {
        mode: mode.ok_or("no `; mode:` line")?,
        options,
        insns,
        runs,
        summary_only,
        head,
        expected: t.expected,
    })
}

/// The expected block for `t`, and the validated and converted program, if any.
fn actual(t: &FileTest) -> (String, Option<(Program, Vec<ebpf::Insn>)>) {
    let prog = match validate(&t.insns, t.mode) {
        Ok(p) => p,
        Err(e) => return (format!("error: validate: {e}\n"), None),
    };
    let converted = convert(&prog, &t.options);
    let text = filetest_text(&prog, &converted, !t.summary_only);
    (text, converted.ok().map(|out| (prog, out.insns)))
}

fn check_file(path: &Path, update: bool, stats: &mut Stats) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let t = parse_file(&text)?;
    let (got, converted) = actual(&t);
    let mut problems = String::new();
    if got != t.expected {
        if update {
            std::fs::write(path, format!("{}{got}", t.head)).map_err(|e| e.to_string())?;
        } else {
            let _ = write!(problems, "expected block differs (UPDATE_EXPECT=1 to bless):\n{}", diff(&t.expected, &got));
        }
    }
    let mut oracle = match &converted {
        Some((prog, _)) if !t.runs.is_empty() => {
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            match Oracle::with_options(name, prog, &t.options) {
                Ok(o) => Some(o),
                Err(e) => {
                    let _ = writeln!(problems, "oracle: {e}");
                    None
                }
            }
        }
        _ => None,
    };
    for (line, run) in &t.runs {
        let (Some((_, insns)), Some(oracle)) = (&converted, oracle.as_mut()) else {
            let _ = writeln!(problems, "line {line}: run line but the program did not convert");
            continue;
        };
        let (both, want) = match run {
            Run::Seccomp { data, want, .. } => {
                stats.seccomp_runs += 1;
                let mut ctx = *data;
                match common::run_rbpf(insns, &mut ctx) {
                    Ok(got) if got == *want => {}
                    Ok(got) => {
                        let _ = writeln!(problems, "line {line}: rbpf returned {got:#x}, expected {want:#x}");
                    }
                    Err(e) => {
                        let _ = writeln!(problems, "line {line}: {e}");
                    }
                }
                (oracle.check_seccomp(&seccomp_data(data)), *want)
            }
            Run::Socket { packet, want, .. } => {
                stats.socket_runs += 1;
                (oracle.check_socket(&SocketInput::test_bpf(packet.clone()).skb()), *want)
            }
        };
        match both {
            Ok(got) if got == want => {}
            Ok(got) => {
                let _ = writeln!(problems, "line {line}: cbpf and ebpf returned {got:#x}, expected {want:#x}");
            }
            Err(m) => {
                let _ = writeln!(problems, "line {line}: {m} (expected {want:#x})");
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[derive(Default)]
struct Stats {
    seccomp_runs: usize,
    socket_runs: usize,
}

/// `struct seccomp_data` from the 64 bytes a run line reads into.
fn seccomp_data(bytes: &[u8; 64]) -> cbpf::SeccompData {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let data = cbpf::SeccompData {
        nr: i32::from_le_bytes(bytes[0..4].try_into().unwrap()),
        arch: u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
        instruction_pointer: u64_at(8),
        args: std::array::from_fn(|i| u64_at(16 + 8 * i)),
    };
    assert_eq!(&data.to_bytes(), bytes, "little-endian host");
    data
}

#[test]
fn filetests() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let files = files(DIR);
    assert!(!files.is_empty(), "no filetests in {DIR}");
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    for path in &files {
        if let Err(e) = check_file(path, update, &mut stats) {
            failures.push(format!("{}:\n{e}", path.file_name().unwrap().to_string_lossy()));
        }
    }
    println!(
        "{} filetests, {} seccomp runs (cbpf, ebpf, rbpf), {} socket runs (cbpf, ebpf)",
        files.len(),
        stats.seccomp_runs,
        stats.socket_runs
    );
    assert!(stats.socket_runs > 0 && stats.seccomp_runs > 0, "run lines of both modes are executed");
    assert!(failures.is_empty(), "{} of {} filetests failed:\n\n{}", failures.len(), files.len(), failures.join("\n"));
}

#[test]
fn parser_accepts_both_numeric_forms() {
    let t = parse_file(
        "; mode: socket\n0x28 0 0 12 ; ldh [12]\n{ 0x15, 0, 1, 0x00000800 }, // ip\nrepeat 2: 6 0 0 0\n== expect summary\nx\n",
    )
    .unwrap();
    assert_eq!(t.mode, Mode::Socket);
    assert_eq!(t.insns, [Insn::stmt(0x28, 12), Insn::jump(0x15, 0x800, 0, 1), Insn::stmt(6, 0), Insn::stmt(6, 0)]);
    assert!(t.summary_only);
    assert_eq!(t.expected, "x\n");
}
