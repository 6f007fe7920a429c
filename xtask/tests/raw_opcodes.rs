//! One decoder per instruction set (issue 14): outside the ISA tables and
//! the kernel mirrors, no library module looks at raw opcode bits. A raw
//! match is one of
//!
//! - `match` on an expression naming `code`, `opcode` or `class()`,
//! - `code`/`opcode` compared with `==`/`!=`, or masked with `&`,
//!
//! in a library's `src/` (tests and benches build instructions from bytes on
//! purpose and are not checked). Everything else matches the typed ops
//! (`ebpf::Op`, `cbpf::Op`, `cbpf::AluOp`, `cbpf::JmpOp`).
//!
//! Allowed: the ISA tables themselves and the kernel mirrors whose kernel
//! function switches on the raw code (`bpf_check_classic()`,
//! `bpf_convert_filter()`, `seccomp_cache_prepare_bitmap()`'s emulator).

/// Files that may match raw codes, relative to the workspace root, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("crates/cbpf/src/insn.rs", "the cBPF ISA table: decodes `Insn` into `Op`"),
    ("crates/cbpf/src/opcode.rs", "the cBPF opcode constants"),
    ("crates/cbpf/src/validate.rs", "mirror of bpf_check_classic() / seccomp_check_filter()"),
    ("crates/convert/src/filter.rs", "mirror of bpf_convert_filter()"),
    ("crates/seccomp/src/cache.rs", "mirror of seccomp_emu_is_const_allow()"),
    (
        "crates/cbpf/src/exec/plain.rs",
        "mirror of sk_run_filter() (Linux 3.14): one switch on the raw code per instruction",
    ),
    ("crates/ebpf/src/exec/plain.rs", "mirror of ___bpf_prog_run()'s jumptable[] indexed by the raw opcode"),
    ("crates/ebpf/src/isa/op/mod.rs", "the eBPF ISA: one decode, one encode"),
    ("crates/ebpf/src/isa/op/tables.rs", "the eBPF ISA's per-family tables (their bits)"),
    ("crates/ebpf/src/isa/opcode.rs", "the eBPF opcode constants"),
    ("crates/ebpf/src/isa/insn.rs", "`struct bpf_insn` and its field accessors (`class()`)"),
    (
        "crates/ebpf/src/listing.rs",
        "mirror of print_bpf_insn() (kernel/bpf/disasm.c) for the encodings `Op::decode` refuses but the kernel prints",
    ),
];

mod common;
use common::{root, rust_files};

/// Is `word` in `line` as a whole identifier?
fn has_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// Why `line` is a raw-code match, if it is one.
fn raw_match(line: &str) -> Option<&'static str> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return None;
    }
    let names_code = has_word(code, "code") || has_word(code, "opcode") || code.contains("class()");
    if !names_code {
        return None;
    }
    if let Some(m) = code.find("match ") {
        let scrutinee = &code[m + 6..];
        let scrutinee = scrutinee.split('{').next().unwrap_or(scrutinee);
        // Decoding through a table (`AtomicOp::from_bits(code)`) is the typed way.
        let through_table = scrutinee.contains("from_bits(");
        let s = scrutinee.trim_start_matches(['(', '*', '&', ' ']);
        let on_code = s.starts_with("code") || s.starts_with("opcode") || scrutinee.contains(".code");
        if !through_table && (on_code || scrutinee.contains("class()")) {
            return Some("match on a raw code");
        }
    }
    for word in ["code", "opcode"] {
        for (i, _) in code.match_indices(word) {
            if !has_word(&code[i.saturating_sub(1)..(i + word.len() + 1).min(code.len())], word) {
                continue;
            }
            let rest = code[i + word.len()..].trim_start();
            if rest.starts_with("==") || rest.starts_with("!=") || (rest.starts_with('&') && !rest.starts_with("&&")) {
                return Some("raw code compared or masked");
            }
        }
    }
    None
}

#[test]
fn no_raw_opcode_matches_outside_the_isa_tables_and_kernel_mirrors() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates", "benches/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f).to_string_lossy().replace('\\', "/");
        let library_src = rel.contains("/src/") && !rel.contains("/tests/") && !rel.contains("/benches/");
        if !library_src || ALLOWED.iter().any(|(a, _)| *a == rel) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        // A module's unit tests (`#[cfg(test)] mod tests` at its end) build
        // raw instructions on purpose.
        let body = text.split("#[cfg(test)]\nmod ").next().unwrap_or(&text);
        for (n, line) in body.lines().enumerate() {
            if let Some(why) = raw_match(line) {
                found.push(format!("{rel}:{}: {why}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} raw opcode matches outside the ISA tables (match the typed ops instead, or add the file to ALLOWED with the kernel function it mirrors):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// An entry of [`ALLOWED`] whose file moved would let the moved file
/// escape the check and keep a stale exemption.
#[test]
fn every_allowed_file_exists() {
    let missing: Vec<&str> = ALLOWED.iter().map(|(f, _)| *f).filter(|f| !root().join(f).is_file()).collect();
    assert!(missing.is_empty(), "ALLOWED names files that do not exist: {missing:?}");
}

#[test]
fn the_detector_sees_what_it_should() {
    assert!(raw_match("        match insn.code {").is_some());
    assert!(raw_match("    let size = match code & 0x18 {").is_some());
    assert!(raw_match("    if insn.code == BPF_RET | BPF_K {").is_some());
    assert!(raw_match("    let class = i.class(); match (i.class(), x) {").is_some());
    assert!(raw_match("    match op {").is_none());
    assert!(raw_match("    match AtomicOp::from_bits(code) {").is_none());
    assert!(raw_match("    match ret_values.get(code as usize - 1) {").is_none());
    assert!(raw_match("    // match insn.code {").is_none());
    assert!(raw_match("    let encoded = Insn { code, jt, jf, k };").is_none());
    assert!(raw_match("    if ok && code_ok {").is_none());
}
