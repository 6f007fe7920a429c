//! C initialisers: reader and `tcpdump -dd` printer.
//!
//! The reader finds the instructions in C text and ignores the C around
//! them. It understands:
//!
//! - `{ code, jt, jf, k }` groups, as `tcpdump -dd` and `bpf_asm -c` print
//!   them, with or without an enclosing `struct sock_filter f[] = { ... };`,
//!   and designated `{ .code = .., .jt = .., .jf = .., .k = .. }`;
//! - `BPF_STMT(code, k)` and `BPF_JUMP(code, k, jt, jf)`;
//! - a flat byte array whose length is a multiple of 8 (seccomp-tools
//!   `asm --format carray`: `unsigned char bpf[] = {32,0,0,0,4,0,0,0,...};`),
//!   read as raw little-endian `sock_filter` records;
//! - constant expressions in every field: integer literals (decimal, hex,
//!   octal, binary, with `u`/`l` suffixes), `| & ^ + - * / % << >> ~ !`,
//!   parentheses, casts to integer types, `sizeof` of integer types,
//!   `offsetof(struct seccomp_data, nr|arch|instruction_pointer|args[i])`,
//!   and the names of the UAPI headers (`BPF_*`, `SKF_*`, `SECCOMP_RET_*`,
//!   `AUDIT_ARCH_*`, asm-generic `E*` errno values), see `symbols.rs`;
//! - object-like `#define NAME ...` macros defined earlier in the file;
//! - `//` and `/* */` comments; other preprocessor lines are skipped.
//!
//! Groups that are clearly not instructions (function bodies, which hold
//! `;`, and designated initialisers of other structs such as `sock_fprog`)
//! are skipped; a group that looks like an instruction but is not one is an
//! error, never silently dropped.
//!
//! # Deviations
//! This is not a C preprocessor: function-like macros are not expanded (a
//! use is reported as an unknown identifier), `#if` branches are all read.

mod expr;
mod lex;
mod read;

use crate::insn::Insn;
use crate::text::{ParseError, Source};
use lex::lex;
use read::{pairs, Reader};

/// Deepest nesting any recursive part of the reader accepts: unary
/// operators, casts and parentheses in one constant expression, `{`
/// groups, and macros expanding macros. Realistic C nests a few levels.
pub(crate) const MAX_DEPTH: usize = 256;

/// Budget of macro-body tokens visited while expanding, over the whole
/// text, so that macros referring to macros many times (exponential
/// expansion) stop with an error in well under a second.
pub(crate) const MACRO_WORK_LIMIT: usize = 1 << 20;

/// Reads C text. See the module docs for what is understood.
pub(crate) fn parse(src: Source<'_>) -> Result<Vec<Insn>, ParseError> {
    let toks = lex(src)?;
    let pair = pairs(&toks);
    let mut r = Reader { src, toks, insns: Vec::new(), pair, depth: 0 };
    r.scan(0, r.toks.len())?;
    if r.insns.is_empty() {
        let (line, col) = src.pos(src.text.len());
        return Err(ParseError::Empty { line, col });
    }
    Ok(r.insns)
}

pub fn print_c(insns: &[Insn]) -> String {
    let mut out = String::new();
    for i in insns {
        out.push_str(&format!("{{ {:#x}, {}, {}, 0x{:08x} }},\n", i.code, i.jt, i.jf, i.k));
    }
    out
}
