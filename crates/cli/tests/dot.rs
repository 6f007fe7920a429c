//! `disasm --format dot` and `convert --format dot`: Graphviz's `dot -Tsvg`
//! renders the graph of every testdata filter (classic and converted), one
//! node per basic block, a `true` and a `false` edge per conditional jump,
//! returns filled by what they return.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{run, stderr, stdout};
use test_data::require::{self, Need};

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");

/// Every seccomp filter file of testdata, with the flags to read it.
fn filters() -> Vec<(PathBuf, Vec<&'static str>)> {
    let mut out = Vec::new();
    for dir in ["filters", "profiles"] {
        let dir = PathBuf::from(format!("{TESTDATA}/{dir}"));
        let mut files = test_data::paths::files_ending(&dir, ".bpf").unwrap();
        files.extend(test_data::paths::files_ending(&dir, ".asm").unwrap());
        files.sort();
        for f in files {
            let big = f.file_name().is_some_and(|n| n == "s390x.bpf");
            out.push((f, if big { vec!["--endian", "big"] } else { vec![] }));
        }
    }
    out
}

/// `dot -Tsvg` on `graph`: the SVG, or what dot said. The graph goes in
/// through a file: written to a pipe while dot's SVG fills the other one,
/// both sides would wait for ever.
fn render(graph: &str) -> Result<String, String> {
    let file = std::env::temp_dir().join(format!("bpfconv-dot-{}.dot", std::process::id()));
    std::fs::File::create(&file).unwrap().write_all(graph.as_bytes()).unwrap();
    let o = Command::new("dot").arg("-Tsvg").arg(&file).stdin(Stdio::null()).output().unwrap();
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

#[test]
fn every_testdata_filter_renders_as_svg() {
    if !require::tool("every_testdata_filter_renders_as_svg", Need::Dot) {
        return;
    }
    let mut rendered = 0;
    for (file, flags) in filters() {
        let path = file.to_string_lossy().into_owned();
        for cmd in ["disasm", "convert"] {
            let mut args = vec![cmd, "--format", "dot"];
            args.extend(&flags);
            args.push(&path);
            let o = run(&args, b"");
            assert_eq!(o.status.code(), Some(0), "{cmd} {path}: {}", stderr(&o));
            let graph = stdout(&o);
            let svg = render(&graph).unwrap_or_else(|e| panic!("{cmd} {path}: dot refuses the graph: {e}\n{graph}"));
            assert!(svg.contains("<svg"), "{cmd} {path}");
            rendered += 1;
        }
    }
    assert!(rendered >= 30, "{rendered}");
}

/// The graph's shape on a known filter: blocks, labelled edges, colours.
#[test]
fn the_graph_has_a_node_per_block_and_labelled_edges() {
    let asm = b"ld [4]\njeq #0xc000003e, ok, kill\nok: ld [0]\njeq #59, deny, next\nnext: jge #400, kill, allow\ndeny: ret #0x50001\nallow: ret #0x7fff0000\nkill: ret #0\n";
    let o = run(&["disasm", "--format", "dot", "-"], asm);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let g = stdout(&o);
    let nodes: Vec<&str> = g.lines().filter(|l| l.trim_start().starts_with('b') && !l.contains("->")).collect();
    // Three blocks that branch; the three returns, drawn once per edge in
    // (KILL_THREAD twice).
    assert_eq!(nodes.iter().filter(|l| !l.contains("return")).count(), 3, "{g}");
    assert_eq!(nodes.iter().filter(|l| l.contains("return")).count(), 4, "{g}");
    assert_eq!(g.matches("[label=\"true\"]").count(), 3, "{g}");
    assert_eq!(g.matches("[label=\"false\"]").count(), 3, "{g}");
    assert!(g.contains("0001: if (A == ARCH_X86_64)"), "{g}");
    assert!(g.contains("0003: if (A == execve)"), "{g}");
    for (ret, colour) in [("return ERRNO(1)", "khaki"), ("return ALLOW", "palegreen"), ("return KILL_THREAD", "salmon")]
    {
        let line = g.lines().find(|l| l.contains(ret)).unwrap();
        assert!(line.contains(&format!("fillcolor={colour}")), "{line}");
    }
    // The converted program: the same returns, coloured from `r0 = K; exit`.
    let o = run(&["convert", "--format", "dot", "-"], asm);
    let g = stdout(&o);
    assert_eq!(g.matches("fillcolor=palegreen").count(), 1, "{g}");
    assert_eq!(g.matches("fillcolor=salmon").count(), 2, "{g}");
    assert_eq!(g.matches("fillcolor=khaki").count(), 1, "{g}");
    assert!(g.contains("exit"), "{g}");
    // Socket filters: 0 drops, anything else keeps.
    let o = run(
        &["disasm", "--format", "dot", "--mode", "socket", "-"],
        b"ldh [12]\njeq #0x800, keep, drop\nkeep: ret #65535\ndrop: ret #0\n",
    );
    let g = stdout(&o);
    assert!(g.lines().any(|l| l.contains("#65535") && l.contains("palegreen")), "{g}");
    assert!(g.lines().any(|l| l.contains("#0\\l") && l.contains("salmon")), "{g}");
}
