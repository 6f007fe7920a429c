#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
//! One room per file (issue 27): no Rust file of the repository is longer
//! than [`MAX_LINES`] lines, outside the files listed in [`ALLOWED`], each
//! with the reason it may be. A file that grows past the limit is split
//! along its seams (as `ebpf::op` into the decoder and `op::tables`, the
//! kernel crate's `sys` into one file per kernel interface), not added
//! here.

use std::path::{Path, PathBuf};

mod common;
use common::root;

/// The longest a Rust file may be, in lines.
const MAX_LINES: usize = 900;

/// Files that may be longer, relative to the repository root, and why.
/// Every entry must exist and be over the limit: an entry that is no
/// longer needed fails the test, so the list only shrinks.
const ALLOWED: &[(&str, &str)] = &[
    (
        "crates/seccomp/src/syscalls/generated.rs",
        "generated syscall tables (`cargo xtask codegen`): one row per (arch, syscall)",
    ),
    (
        "crates/convert/src/filter.rs",
        "the kernel mirror of bpf_convert_filter(): one function read side by side with net/core/filter.c",
    ),
];

/// Every `.rs` file under `dir`, skipping build output (`target`) and
/// hidden directories.
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                source_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

#[test]
fn no_rust_file_is_over_the_limit() {
    let root = root();
    let mut files = Vec::new();
    source_files(&root, &mut files);
    assert!(files.len() > 200, "{} Rust files found under {}", files.len(), root.display());
    let mut over = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap_or(file).to_string_lossy().replace('\\', "/");
        let n = lines(file);
        if n > MAX_LINES && !ALLOWED.iter().any(|(a, _)| *a == rel) {
            over.push(format!("{rel}: {n} lines"));
        }
    }
    assert!(over.is_empty(), "Rust files over {MAX_LINES} lines (split them along their seams):\n{}", over.join("\n"));
}

#[test]
fn every_allowed_file_is_still_over_the_limit() {
    let root = root();
    let mut stale = Vec::new();
    for (rel, why) in ALLOWED {
        let path = root.join(rel);
        if !path.exists() {
            stale.push(format!("{rel}: no such file ({why})"));
        } else if lines(&path) <= MAX_LINES {
            stale.push(format!("{rel}: {} lines, within the limit ({why})", lines(&path)));
        }
    }
    assert!(stale.is_empty(), "entries of ALLOWED to remove:\n{}", stale.join("\n"));
}
