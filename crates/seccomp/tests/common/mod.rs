//! Loading the shared benchmark filters, for the seccomp integration tests.
// Each test binary uses its own subset of these helpers.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use cbpf::{validate, Insn, Mode, Program};

pub mod gen;

/// A statement, short for the hand-written cases.
pub fn s(code: u16, k: u32) -> Insn {
    Insn::stmt(code, k)
}

/// A conditional jump, short for the hand-written cases.
pub fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::jump(code, k, jt, jf)
}

/// A seccomp filter written in bpf_asm syntax (cbpf's text parser),
/// validated: the hand-written cases.
pub fn asm(text: &str) -> Program {
    let insns = cbpf::text::parse(text.as_bytes(), cbpf::text::Format::Asm).unwrap_or_else(|e| panic!("parse: {e}"));
    validate(&insns, Mode::Seccomp).unwrap_or_else(|e| panic!("validate: {e}"))
}

/// testdata/filters.
pub fn dir() -> String {
    test_data::paths::filters_dir().display().to_string()
}

/// `NAME.bpf`, validated in seccomp mode.
pub fn load(name: &str) -> Program {
    let insns: Vec<Insn> = test_data::filters::insns(name)
        .unwrap()
        .into_iter()
        .map(|r| Insn { code: r.code, jt: r.jt, jf: r.jf, k: r.k })
        .collect();
    validate(&insns, Mode::Seccomp).unwrap()
}

/// The testdata filters whose rules test arguments (the long_jumps
/// filters and the hand-written sandboxes); every other one decides on
/// arch and nr alone.
pub fn has_argument_rules(name: &str) -> bool {
    name.starts_with("long_jumps") || name.starts_with("sshd_") || name == "chromium_baseline"
}

/// The hand-written filters (not libseccomp's): testdata/filters/README.md.
pub fn hand_written(name: &str) -> bool {
    name.starts_with("sshd_") || name == "chromium_baseline"
}

/// Every filter's stem, sorted (at least the 12 benchmark filters).
pub fn filter_names() -> Vec<String> {
    let names = test_data::filters::names().unwrap();
    assert!(names.len() >= 12, "expected the 12 benchmark filters, found {names:?}");
    names
}

/// Every vector of `NAME` (the kernel-checked ones, then the simulator's),
/// with `NAME.suffix:line`, the input and the expected action.
pub fn vectors(name: &str) -> Vec<(String, cbpf::SeccompData, u32)> {
    test_data::filters::all_vectors(name)
        .unwrap()
        .into_iter()
        .map(|(source, v)| {
            let data = cbpf::SeccompData { nr: v.nr, arch: v.arch, instruction_pointer: v.ip, args: v.args };
            (format!("{name}.{}:{}", source.suffix(), v.line), data, v.action.unwrap())
        })
        .collect()
}
