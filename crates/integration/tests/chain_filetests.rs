//! Chain filetests: every `testdata/chains/*.txt` pins the compare chains a
//! classic program compiles to, in both fast interpreters: the classic
//! interpreter's (`cbpf::Interp::chain_listing`) and, for the program
//! `convert::convert()` makes of it, the eBPF seccomp executor's
//! (`ebpf::Program::seccomp_chain_listing`). All files are checked, every
//! difference is reported with a diff, then the test fails.
//! `UPDATE_EXPECT=1` rewrites the expected blocks (bless), as the converter
//! filetests do.
//!
//! File format (see testdata/chains/README.md):
//!
//! ```text
//! ; mode: seccomp            (or socket; required)
//! ; filter: allow306_opt2    (optional: the program of testdata/filters/NAME.bpf)
//! ; any other comment
//! 0x20 0 0 4                 ; code jt jf k, decimal or hex (or the C-array form)
//! repeat 4: 0x04 0 0 1       ; the same instruction N times
//! == cbpf
//! <expected listings: everything to the end of the file>
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;

use cbpf::{validate, Insn, Interp, Mode};

mod common;
use common::filetest::{self, diff, files};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/chains");
const FILTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filters");
const MARKER: &str = "== cbpf";

fn number(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("bad number {s:?}"))
}

fn insn(s: &str) -> Result<Insn, String> {
    let cleaned: String = s.chars().map(|c| if matches!(c, '{' | '}' | ',') { ' ' } else { c }).collect();
    let f: Vec<&str> = cleaned.split_whitespace().collect();
    let [code, jt, jf, k] = f[..] else { return Err(format!("expected `code jt jf k`, got {s:?}")) };
    let small =
        |v: &str, max: u64| number(v).and_then(|n| if n <= max { Ok(n) } else { Err(format!("{v} too large")) });
    Ok(Insn {
        code: small(code, 0xffff)? as u16,
        jt: small(jt, 0xff)? as u8,
        jf: small(jf, 0xff)? as u8,
        k: small(k, 0xffff_ffff)? as u32,
    })
}

/// The program of a raw `sock_filter` array (8 bytes per instruction,
/// little-endian), as testdata/filters holds them.
fn raw(bytes: &[u8]) -> Vec<Insn> {
    bytes
        .chunks_exact(8)
        .map(|c| Insn {
            code: u16::from_le_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

struct ChainTest {
    mode: Mode,
    insns: Vec<Insn>,
    /// Text up to the marker line (kept as is when blessing).
    head: String,
    expected: String,
}

fn parse(text: &str) -> Result<ChainTest, String> {
    let (mut mode, mut insns) = (None, Vec::new());
    let mut head = String::new();
    let mut lines = text.split_inclusive('\n');
    for line in lines.by_ref() {
        if line.trim_end() == MARKER {
            let expected: String = lines.collect();
            let mode = mode.ok_or("no `; mode:` line")?;
            return Ok(ChainTest { mode, insns, head, expected });
        }
        head.push_str(line);
        let line = line.trim();
        if let Some(comment) = line.strip_prefix(';') {
            let comment = comment.trim();
            if let Some(m) = comment.strip_prefix("mode:") {
                mode = Some(filetest::mode(m).ok_or_else(|| format!("unknown mode {:?}", m.trim()))?);
            } else if let Some(name) = comment.strip_prefix("filter:") {
                let path = Path::new(FILTERS).join(format!("{}.bpf", name.trim()));
                insns.extend(raw(&std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?));
            }
            continue;
        }
        let code = line.split(';').next().unwrap_or("").split("//").next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        match code.strip_prefix("repeat ").and_then(|r| r.split_once(':')) {
            Some((n, one)) => {
                let one = insn(one)?;
                insns.extend(std::iter::repeat_n(one, number(n)? as usize));
            }
            None => insns.push(insn(code)?),
        }
    }
    Err(format!("no `{MARKER}` line"))
}

/// Both interpreters' chain listings of `insns`.
fn listings(mode: Mode, insns: &[Insn]) -> String {
    let program = match validate(insns, mode) {
        Ok(p) => p,
        Err(e) => return format!("error: validate: {e}\n"),
    };
    let mut out = Interp::new(&program).chain_listing();
    out.push_str("== ebpf\n");
    let converted = match convert::convert(&program, &convert::Options::default()) {
        Ok(c) => c,
        Err(e) => return out + &format!("error: convert: {e}\n"),
    };
    let helpers = if mode == Mode::Socket { ebpf::Helpers::socket() } else { ebpf::Helpers::new() };
    match ebpf::Program::load(&converted.insns, &ebpf::LoadOptions::default(), &helpers) {
        Ok(p) => out.push_str(&p.seccomp_chain_listing().unwrap_or_else(|| "no seccomp executor\n".into())),
        Err(e) => out.push_str(&format!("error: load: {e}\n")),
    }
    out
}

/// Lines of `want` and `got` that differ, `-`/`+` marked (positional: a
/// chain listing changes in place when chain formation does).

#[test]
fn chain_filetests() {
    let bless = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let files = files(DIR);
    assert!(files.len() >= 6, "too few chain filetests: {}", files.len());
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let t = match parse(&text) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let got = listings(t.mode, &t.insns);
        if got != t.expected {
            if bless {
                std::fs::write(&path, format!("{}{MARKER}\n{got}", t.head)).unwrap();
            } else {
                failures
                    .push(format!("{name}: chains differ (UPDATE_EXPECT=1 to bless):\n{}", diff(&t.expected, &got)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
