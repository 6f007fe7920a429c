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

use cbpf::{validate, Insn, Interp, Mode};

mod common;
use common::filetest::{self, diff, files};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/chains");
const MARKER: &str = "== cbpf";

struct ChainTest {
    mode: Mode,
    insns: Vec<Insn>,
    /// Text up to the marker line (kept as is when blessing).
    head: String,
    expected: String,
}

fn parse(text: &str) -> Result<ChainTest, String> {
    let t = test_data::filetest::parse(text)?;
    if t.marker.as_deref() != MARKER.strip_prefix("== ") {
        return Err(format!("no `{MARKER}` line"));
    }
    let m = t.value("mode").ok_or("no `; mode:` line")?;
    let mode = filetest::mode(m).ok_or_else(|| format!("unknown mode {m:?}"))?;
    let insns = t.insns.iter().map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k }).collect();
    Ok(ChainTest { mode, insns, head: t.head, expected: t.expected })
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
